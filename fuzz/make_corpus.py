#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target to fuzz/corpus/<target>/.

Seeds are valid inputs, boundary values and known-bad inputs, a few dozen per
target at most; the fuzzer finds the rest. Each layout follows the target's
input format (the comment at the top of fuzz/<target>.cc). Rerun after
changing a format: `fuzz/make_corpus.py` (it replaces the seed files it
writes, and leaves others, e.g. regression inputs, alone).
"""

import pathlib
import struct

ROOT = pathlib.Path(__file__).resolve().parent / "corpus"


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def write(target: str, name: str, data: bytes) -> None:
    d = ROOT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / f"seed-{name}").write_bytes(data)


def wire_frame(flags, total, frag_size, index, session=7, bid=1, root=0, corrupt=False):
    """core/protocol/wire.h: a 48-byte header, the payload, a CRC32C and/or a 16-byte tag."""
    count = max(1, -(-total // frag_size))
    payload_len = min(frag_size, total - index * frag_size)
    head = struct.pack("<HBBBBHQIIIIQII", 0xB1BC, 1, flags, 1, 48 // 8, 0, session, bid, root,
                       index, count, total, frag_size, payload_len)
    payload = bytes((i * 7 + index) & 0xFF for i in range(payload_len))
    out = head + payload
    if flags & 1:
        out += struct.pack("<I", crc32c(out) ^ (1 if corrupt else 0))
    if flags & 2:
        out += bytes(16)
    return out


def decoder():
    t = "fuzz_decoder"
    write(t, "crc-single", wire_frame(1, 100, 256, 0))
    write(t, "crc-first-of-3", wire_frame(1, 600, 256, 0))
    write(t, "crc-last-of-3", wire_frame(1, 600, 256, 2))
    write(t, "nocrc-reliable", wire_frame(4, 300, 256, 1))
    write(t, "tagged", wire_frame(2, 64, 256, 0))
    write(t, "crc-tagged", wire_frame(3, 64, 256, 0))
    write(t, "bad-crc", wire_frame(1, 100, 256, 0, corrupt=True))
    write(t, "header-only", wire_frame(1, 100, 256, 0)[:48])
    write(t, "truncated", wire_frame(1, 100, 256, 0)[:47])
    write(t, "max-fragment", wire_frame(1, 65000, 65000, 0)[:48])
    write(t, "empty", b"")


def rdgram_seg(kind, flags, frm, to, channel, seq, sack=0, data=b""):
    """core/runtime/rdgram.cc: [0x5D type flags 0][from][to][channel][seq or cum u64][sack u64]."""
    return struct.pack("<BBBBIIIQQ", 0x5D, kind, flags, 0, frm, to, channel, seq, sack) + data


def rdgram():
    t = "fuzz_rdgram"
    ch = 0x1BBC5D01
    # Prefix: max datagram (| 0x80: keyed, auth=on), window, queue; then op
    # codes (fuzz_rdgram.cc): (op << 1) | rank, op 0/1 deliver, 2 drop,
    # 3 dup (keyed, | 0x20: an altered copy, + u16 offset, u8 xor), 4 delay, 5/6 poll,
    # 7 send (+size; | 0x20 to rank 2, | 0x60 to itself), 8 clock (+u16),
    # 9 raw (+len, bytes), 10 segment, 11 close.
    def op(o, r=0):
        return bytes([(o << 1) | r])

    clean = bytes([31, 8, 16]) + op(7) + b"\x40" + (op(0) + op(5, 1) + op(0, 1) + op(5)) * 6
    write(t, "clean-exchange", clean)
    lossy = bytes([0, 0, 4]) + op(7) + b"\xff" + op(7, 1) + b"\x20" + \
        (op(2) + op(0) + op(5, 1) + op(3, 1) + op(4) + op(8) + b"\x00\x10" + op(5)) * 8
    write(t, "lossy-both-ways", lossy)
    write(t, "self-and-phantom", bytes([10, 2, 2]) + bytes([0x6E]) + b"\x05" + bytes([0x2E]) +
          b"\x09" + op(5) + op(8) + b"\xff\xff" + op(5) + op(11) + op(11, 1))
    forged = rdgram_seg(1, 1, 2, 1, ch, 0, data=b"hello")
    write(t, "raw-forged-data", bytes([40, 4, 8]) + op(9, 1) + bytes([len(forged)]) + forged +
          op(5, 1))
    ack = rdgram_seg(2, 0, 2, 0, ch, 5, sack=0xF0)
    write(t, "raw-forged-ack", bytes([40, 4, 8]) + op(7) + b"\x10" + op(9) + bytes([len(ack)]) +
          ack + op(5))
    bad = rdgram_seg(2, 0, 2, 0, ch, 0, sack=1)[:31]
    write(t, "raw-short-ack", bytes([40, 4, 8]) + op(9) + bytes([len(bad)]) + bad + op(5))
    write(t, "segments", bytes([60, 16, 64]) + (op(10, 1) + bytes([0, 1, 1, 0, 3, 5]) + b"ab" +
                                                 op(10, 1) + bytes([1, 0, 1, 1]) + b"\x07" * 8 +
                                                 bytes([0]) + op(5, 1)) * 3)
    write(t, "window-1-long", bytes([0, 0, 0]) + op(7) + b"\xff" + op(7) + b"\xff" +
          (op(0) + op(1, 1)) * 30)
    write(t, "clock-jumps", bytes([20, 3, 3]) + op(7) + b"\x80" +
          (op(8) + b"\xff\xff") * 12 + op(5) + op(5, 1))
    # Keyed: the same exchange tagged; forgeries claiming the honest ranks.
    write(t, "keyed-clean-exchange", bytes([0x80 | 31, 8, 16]) + clean[3:])
    write(t, "keyed-lossy", bytes([0x80, 0, 4]) + lossy[3:])
    honest_ack = rdgram_seg(2, 0, 1, 0, ch, 9, sack=0xFF)
    write(t, "keyed-forged-honest-ack", bytes([0x80 | 40, 4, 8]) + op(7) + b"\x60" + op(9) +
          bytes([len(honest_ack)]) + honest_ack + op(5) + op(0) + op(5, 1) + op(0, 1) + op(5))
    honest_data = rdgram_seg(1, 1, 0, 1, ch, 0, data=b"forged")
    write(t, "keyed-forged-honest-data", bytes([0x80 | 40, 4, 8]) + op(9, 1) +
          bytes([len(honest_data)]) + honest_data + op(7) + b"\x06" + op(0) + op(5, 1))
    write(t, "keyed-tampered", bytes([0x80 | 50, 8, 16]) + op(7) + b"\x30" +
          (bytes([(3 << 1) | 0x20]) + b"\x05\x00\x01" + op(0) + op(5, 1) + op(0, 1) + op(5)) * 4)
    write(t, "keyed-tagged-segments", bytes([0x80 | 60, 16, 64]) +
          (op(10, 1) + bytes([0, 1, 3, 0, 3, 1, 0]) + bytes(range(24)) + b"\x04abcd" +
           op(5, 1)) * 3)


def tcp_frame(seq, payload, error=False):
    """transports/bootstrap/tcp_io.h: [u32 length | error flag][u32 sequence][payload], big-endian."""
    return struct.pack(">II", len(payload) | (0x80000000 if error else 0), seq) + payload


def tcp():
    t = "fuzz_tcp_frame"
    # [mode: bit 0 incremental, bit 1 small limit, bits 2.. cut bytes][u16 limit][cuts][stream]
    def inp(mode, limit, cuts, stream):
        return bytes([mode | (len(cuts) << 2)]) + struct.pack("<H", limit) + cuts + stream

    hello = tcp_frame(0, b"\x01\x00\x00\x00\x04\x00\x00\x00job-token")
    write(t, "hello-whole", inp(2, 256, b"", hello))
    write(t, "hello-cut", inp(3, 256, bytes([0, 1, 3, 0, 0, 2, 1, 1]), hello))
    write(t, "welcome-empty", inp(2, 0, b"", tcp_frame(0, b"")))
    write(t, "two-frames", inp(3, 64, bytes([2, 0, 5, 1]), tcp_frame(1, b"a" * 8) +
                                tcp_frame(2, b"b" * 16)))
    write(t, "error-frame", inp(1, 0, b"", tcp_frame(0, b"\x08rank 3 is not in this job", True)))
    write(t, "error-code-only", inp(0, 0, b"", tcp_frame(0, b"\x0b", True)))
    write(t, "error-unknown-code", inp(0, 0, b"", tcp_frame(0, b"\xeeto be", True)))
    write(t, "error-empty", inp(0, 0, b"", tcp_frame(0, b"", True)))
    write(t, "too-long", inp(2, 16, b"", tcp_frame(0, b"x" * 17)))
    write(t, "announces-2g", inp(0, 0xFFFF, b"", b"\x7f\xff\xff\xff\x00\x00\x00\x00"))
    write(t, "error-too-long", inp(0, 0, b"", b"\x80\x01\x00\x01\x00\x00\x00\x00"))
    write(t, "header-cut", inp(1, 16, bytes([0, 0, 0, 0]), tcp_frame(5, b"abc")[:6]))
    write(t, "payload-cut", inp(1, 16, b"", tcp_frame(5, b"abcdef")[:10]))


def config():
    t = "fuzz_config"
    # [selector][text]: 0 size, 1 duration, 2 bool, 3 uint, 4 algorithm, 5 udp
    # group, 6 loggp file, 7..11 tables (engine, udp, bootstrap, dpdk,
    # mpi / verbs with bit 7): [n env][field, value\n]... then [field, value\n]...
    text = {
        0: ["64k", "1KiB", "16384b", "18446744073709551615", "17179869184g", "1 k", "1kk"],
        1: ["10ms", "250us", "100ns", "1min", "5", "9223372036854775807ns",
            "153722867280912931m", "1h"],
        2: ["on", "OFF", "maybe"],
        3: ["65536", "18446744073709551616", "+5"],
        4: ["two_stage", "fibo-tree", "Two_Stage"],
        5: ["udp4:239.255.1.2:40000", "udp6:[ff15::1:2]:40000", "udp4:10.0.0.1:5000",
            "udp4:239.1.1.1:65536", "udp6:[::1]:9", "udp4::80", "udp6:[ff15::1]",
            "udp4:239.1.1.1: +80"],
        6: ["# loggp\nL_us,o_us,g_us,G_us_per_byte,o_s_us,o_r_us,rtt_us\n10,2,3,0.001,1,1,40\n",
            "1.5,0.5,0.25,1e-05\r\n", "-1,2,3,4\n", "1,2,3\n", "nan,1,1,1\n", "0x1p3,0,0,0\n",
            "# only a comment\n"],
    }
    for sel, values in text.items():
        for i, v in enumerate(values):
            write(t, f"{sel}-{i}", bytes([sel]) + v.encode())
    def table(sel, env, sets=()):
        out = bytes([sel, len(env)])
        for field, value in env:
            out += bytes([field]) + value.encode() + b"\n"
        for field, value in sets:
            out += bytes([field]) + value.encode() + b"\n"
        return out
    write(t, "engine-env", table(7, [(0, "fibo_tree"), (4, "1k"), (9, "5s")], [(0x80 | 11, "8")]))
    write(t, "engine-bad", table(7, [(0, "two_stage"), (4, "100")]))
    write(t, "engine-auto-table", table(7, [(6, "2:any=linear;8:1k=knomial,64k=binary,any=binomial")],
                                        [(6, "8:1k=linear,512=binary"), (6, "4:1q=auto;2:")]))
    write(t, "udp-env", table(8, [(6, "udp6:[ff15::1]:7"), (2, "255"), (4, "16m")]))
    write(t, "bootstrap-env", table(9, [(1, "[::1]:4000"), (3, "8"), (5, "1min")]))
    write(t, "dpdk-env", table(10, [(5, "65536"), (8, "dpdk:03:1b:bc:00:00:01"), (9, "frames")]))
    write(t, "mpi-env", table(11, [(0, "udp")], [(0x40 | 1, "nope")]))
    write(t, "verbs-env", table(131, [(3, "auto"), (3, "-1")], [(3, "255"), (3, "256")]))


def chunk_header(file=0, index=0, offset=0, length=4096, crc=0, flags=0, magic=0x43534249,
                 version=1, reserved=0):
    """tools/stage/stage_protocol.h: 32 bytes, little-endian."""
    return struct.pack("<IBBHIIQII", magic, version, flags, reserved, file, index, offset, length,
                       crc)


def stage_entry(kind, path, size=0, mode=0o644, mtime=0, target=b"", digest=b"\x5a" * 32):
    """One manifest entry: kind, reserved, path length, mode, size, mtime, digest, target length,
    path, target."""
    return struct.pack("<BBHIQq", kind, 0, len(path), mode, size, mtime) + digest + \
        struct.pack("<H", len(target)) + path + target


def manifest(entries, digest_kind=2, count=None, magic=0x4D534249, version=1):
    head = struct.pack("<IHHI", magic, version, digest_kind,
                       len(entries) if count is None else count)
    return head + b"".join(entries)


def start_block(chunk=1 << 20, error=0, manifest_len=0, entries=0, message=b"", flags=0,
                n=None, magic=0x53534249, version=1, size=256):
    out = struct.pack("<IHHIIQII", magic, version, flags, chunk, error, manifest_len, entries,
                      len(message) if n is None else n) + message
    return (out + bytes(max(0, size - len(out))))[:size]


def stage():
    t = "fuzz_stage"
    # [selector][rest]: 0 chunk header, 1 manifest, 2 start block, 3 parameters (fuzz_stage.cc).
    ok = chunk_header(3, 2, 2 << 20, 1 << 20, 0xDEADBEEF)
    write(t, "chunk-ok", b"\0" + ok)
    write(t, "chunk-ok-with-data", b"\0" + ok + b"data" * 8)
    write(t, "chunk-abort", b"\0" + chunk_header(flags=1, length=0))
    write(t, "chunk-empty-file", b"\0" + chunk_header(length=0))
    write(t, "chunk-max-length", b"\0" + chunk_header(length=64 << 20))
    write(t, "chunk-max-offset", b"\0" + chunk_header(offset=2**64 - 1 - 4096))
    write(t, "chunk-last-file", b"\0" + chunk_header(file=(1 << 24) - 1))
    write(t, "chunk-bad-file", b"\0" + chunk_header(file=1 << 24))
    write(t, "chunk-too-long", b"\0" + chunk_header(length=(64 << 20) + 1))
    write(t, "chunk-overflow", b"\0" + chunk_header(offset=2**64 - 4096))
    write(t, "chunk-bad-flags", b"\0" + chunk_header(flags=2))
    write(t, "chunk-bad-version", b"\0" + chunk_header(version=2))
    write(t, "chunk-reserved", b"\0" + chunk_header(reserved=1))
    write(t, "chunk-truncated", b"\0" + ok[:31])

    f = stage_entry(1, b"a", size=5)
    write(t, "manifest-empty", b"\1" + manifest([]))
    write(t, "manifest-one-letter", b"\1" + manifest([f], digest_kind=1))
    tree = [stage_entry(2, b"d", mode=0o755), stage_entry(1, b"d/f.bin", size=3 << 20, mtime=-1),
            stage_entry(3, b"d/link", mode=0o777, target=b"../outside/f"),
            stage_entry(1, b"d/e/empty", size=0, mode=0o4755), stage_entry(2, b"d/e")]
    write(t, "manifest-tree", b"\1" + manifest(tree))
    write(t, "manifest-large-files", b"\1" + manifest([stage_entry(1, b"x", size=2**62),
                                                       stage_entry(1, b"y", size=2**62 - 1)]))
    write(t, "manifest-max-path", b"\1" + manifest([stage_entry(1, b"p/" * 2047 + b"q")]))
    write(t, "manifest-dotdot", b"\1" + manifest([stage_entry(1, b"d/../../etc/passwd")]))
    write(t, "manifest-absolute", b"\1" + manifest([stage_entry(1, b"/etc/passwd")]))
    write(t, "manifest-dot", b"\1" + manifest([stage_entry(2, b"./d")]))
    write(t, "manifest-empty-part", b"\1" + manifest([stage_entry(2, b"d//e")]))
    write(t, "manifest-nul", b"\1" + manifest([stage_entry(1, b"a\0b")]))
    write(t, "manifest-twice", b"\1" + manifest([f, stage_entry(2, b"a")]))
    write(t, "manifest-below-link", b"\1" + manifest([stage_entry(3, b"l", target=b"/tmp"),
                                                      stage_entry(1, b"l/f", size=1)]))
    write(t, "manifest-link-no-target", b"\1" + manifest([stage_entry(3, b"l")]))
    write(t, "manifest-file-target", b"\1" + manifest([stage_entry(1, b"f", target=b"t")]))
    write(t, "manifest-dir-size", b"\1" + manifest([stage_entry(2, b"d", size=1)]))
    write(t, "manifest-mode", b"\1" + manifest([stage_entry(1, b"f", mode=0o10644)]))
    write(t, "manifest-kind", b"\1" + manifest([stage_entry(4, b"f")], digest_kind=3))
    write(t, "manifest-count-lie", b"\1" + manifest([f], count=1 << 24))
    write(t, "manifest-trailing", b"\1" + manifest([f]) + b"\0")
    write(t, "manifest-truncated", b"\1" + manifest(tree)[:-3])
    write(t, "manifest-no-count", b"\1" + manifest([])[:8])

    write(t, "start-ok", b"\2" + start_block(manifest_len=300, entries=5, flags=3))
    write(t, "start-error", b"\2" + start_block(chunk=0, error=3,
                                                 message=b"cannot read /data/x: Permission denied"))
    write(t, "start-long-message", b"\2" + start_block(error=11, message=b"m" * 224))
    write(t, "start-message-too-long", b"\2" + start_block(error=11, message=b"m" * 224, n=225))
    write(t, "start-max", b"\2" + start_block(chunk=64 << 20, entries=(1 << 24) - 1,
                                               manifest_len=2**64 - 1))
    write(t, "start-too-many", b"\2" + start_block(entries=1 << 24))
    write(t, "start-chunk-0", b"\2" + start_block(chunk=0))
    write(t, "start-chunk-big", b"\2" + start_block(chunk=(64 << 20) + 1))
    write(t, "start-bad-code", b"\2" + start_block(error=12))
    write(t, "start-bad-flags", b"\2" + start_block(flags=4))
    write(t, "start-short", b"\2" + start_block(size=255))

    # Parameters: [start flags][chunk...][manifest_len u64][entries][message\n]
    # [chunk header: flags u8, file u32, index u32, offset u64, length u32, crc u32][cut u8]
    # [digest kind][count] per entry [shape][mode u16][size][mtime u64][digest byte] path\n
    # [target\n]; then [schedule pick u64][cut u16][at u16][mask u8].
    def params(sflags, chunk, entries, message, hdr, dk, ents, tail):
        out = bytes([sflags]) + (struct.pack("<I", chunk) if sflags & 4 else bytes([chunk]))
        out += (bytes([3]) if sflags & 8 else b"") + struct.pack("<Q", 1000)
        out += struct.pack("<I", entries) if sflags & 16 else bytes([entries])
        out += (message + b"\n") if sflags & 32 else b""
        out += struct.pack("<BIIQII", *hdr) + b"\x10" + bytes([dk, len(ents)])
        for shape, mode, size, name, target in ents:
            out += bytes([shape]) + struct.pack("<H", mode)
            out += struct.pack("<Q", size) if shape & 0x20 else struct.pack("<H", size) \
                if (shape & 3) % 3 == 0 or shape & 0x10 else b""
            out += struct.pack("<Q", 17) + b"\x33" + name + b"\n"
            out += (target + b"\n") if (shape & 3) % 3 == 2 or shape & 8 else b""
        return b"\3" + out + tail
    tree_ents = [(1, 0o755, 0, b"d", b""), (0, 0o644, 5000, b"d/f", b""),
                 (2, 0o777, 0, b"d/l", b"../f"), (0x20, 0o600, 2**40 + 1, b"big", b"")]
    write(t, "params-tree", params(3, 0, 4, b"", (0, 1, 2, 4096, 4096, 7), 1, tree_ents,
                                   struct.pack("<QHHB", 99, 40, 60, 0xFF)))
    write(t, "params-chunk-1", params(4, 1, 1, b"", (1, 2, 0, 0, 0, 0), 0x81,
                                      [(0x20, 0o644, 2**63 - 1, b"huge", b"")],
                                      struct.pack("<QHHB", 2**63, 3, 5, 1)))
    write(t, "params-error", params(0x3C, 0, 1 << 24, b"no such file", (2, 1 << 24, 0, 2**64 - 1,
                                                                        1, 0), 0x80, [],
                                    b""))
    write(t, "params-bad-entries", params(0x24, 1 << 26, 2, b"x" * 230, (0, 0, 0, 0, 0, 0), 2,
                                          [(0x40, 0o17777, 1, b"../up", b""),
                                           (0x88, 0, 0, b"k", b"t"), (2, 0, 0, b"s", b""),
                                           (0x10 | 1, 0, 7, b"s/x", b"")],
                                          struct.pack("<QHHB", 1, 2, 3, 4)))
    write(t, "params-one-letter", params(0, 8, 1, b"", (0, 0, 0, 0, 5, 0), 0, [(0, 0o644, 5, b"a",
                                                                                 b"")], b""))
    write(t, "params-size-max", params(0, 0, 1, b"", (0, 0, 0, 0, 0, 0), 1,
                                       [(0x20, 0o644, 2**64 - 1, b"zz", b"")],
                                       struct.pack("<QHHB", 2**64 - 1, 0, 0, 0)))


if __name__ == "__main__":
    decoder()
    rdgram()
    tcp()
    config()
    stage()
