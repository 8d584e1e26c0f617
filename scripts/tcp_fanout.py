#!/usr/bin/env python3
"""The TCP fan-out that `ibbcast stage` is compared with (scripts/bench_stage.sh):
the root streams one file to every receiver at once, one TCP connection each,
and each receiver writes it and fsyncs, as stage does.

  tcp_fanout.py recv PORT OUT        accept one connection, write it to OUT, fsync
  tcp_fanout.py send FILE HOST:PORT... stream FILE to every receiver concurrently
"""
import os
import socket
import sys
import threading

CHUNK = 1 << 20


def recv(port, out):
    with socket.create_server(("0.0.0.0", int(port))) as srv:
        conn, _ = srv.accept()
        with conn, open(out, "wb") as f:
            while True:
                data = conn.recv(CHUNK)
                if not data:
                    break
                f.write(data)
            f.flush()
            os.fsync(f.fileno())
            conn.sendall(b"ok")  # written and on disk: the sender's clock stops here


def send_one(path, target, errors):
    host, port = target.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=30) as s, open(path, "rb") as f:
            s.settimeout(None)
            s.sendfile(f)
            s.shutdown(socket.SHUT_WR)
            if s.recv(2) != b"ok":
                errors.append(f"{target}: no confirmation")
    except OSError as e:
        errors.append(f"{target}: {e}")


def send(path, targets):
    errors = []
    threads = [threading.Thread(target=send_one, args=(path, t, errors)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for e in errors:
        print("tcp_fanout:", e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "recv":
        recv(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 4 and sys.argv[1] == "send":
        sys.exit(send(sys.argv[2], sys.argv[3:]))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
