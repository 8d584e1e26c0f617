#include "tools/stage/stage_pipeline.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "core/protocol/crc32c.h"
#include "core/protocol/units.h"
#include "tools/stage/stage_dest.h"
#include "tools/stage/stage_schedule.h"

namespace ibbcast::tool::stage {
namespace {

constexpr std::size_t kInFlight = 2;  // broadcasts posted at once
constexpr int kBuffers = 6;           // reading, on the wire (2), writing, two spare

// A buffer going round: one broadcast (a batch of pieces) of the schedule.
struct Chunk {
  std::vector<std::byte> buf;
  uint64_t batch = 0;
};

// A closable blocking queue of chunk buffers; pop returns nullptr once closed.
class Queue {
 public:
  void push(Chunk* c) {
    {
      std::lock_guard lock(mu_);
      q_.push_back(c);
    }
    cv_.notify_one();
  }
  Chunk* pop() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return closed_ || !q_.empty(); });
    if (q_.empty()) return nullptr;
    Chunk* c = q_.front();
    q_.pop_front();
    return c;
  }
  void close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Chunk*> q_;
  bool closed_ = false;
};

bool unchanged_since_walk(int fd, const Entry& e) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return false;
  const int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return static_cast<uint64_t>(st.st_size) == e.size && mtime == e.mtime_ns;
}

// Root: fills each batch's buffer from the sources, one file open at a time.
void read_chunks(const TransferPlan& p, const Schedule& sched, Queue& free_q, Queue& full_q) {
  int fd = -1;
  uint32_t open_file = UINT32_MAX;
  for (uint64_t b = 0; b < sched.batches.size(); ++b) {
    Chunk* c = free_q.pop();
    if (c == nullptr) break;
    const Batch& batch = sched.batches[b];
    std::byte* at = c->buf.data();
    for (uint64_t i = batch.first; i < batch.first + batch.count; ++i) {
      const Piece& pc = sched.pieces[i];
      if (pc.file != open_file) {
        if (fd >= 0) ::close(fd);
        fd = ::open((*p.sources)[pc.file].c_str(), O_RDONLY | O_CLOEXEC);
        open_file = pc.file;
      }
      if (p.fault.kind == TestFault::Kind::kTouch && p.fault.chunk == i)
        (void)::utimensat(AT_FDCWD, (*p.sources)[pc.file].c_str(), nullptr, 0);
      std::byte* data = at + kChunkHeaderSize;
      std::size_t got = 0;
      while (fd >= 0 && got < pc.length) {
        const ssize_t n =
            ::pread(fd, data + got, pc.length - got, static_cast<off_t>(pc.offset + got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
      }
      ChunkHeader h{0, pc.file, pc.index, pc.offset, pc.length, 0};
      // A file that vanished, shrank or was written since the walk (its
      // digest in the manifest is stale): every rank drops it, names it and
      // goes on with the rest. Checked after every read, so a change while
      // the file is read still reaches its last chunk.
      if (got != pc.length || !unchanged_since_walk(fd, p.manifest->entries[pc.file]))
        h.flags = kChunkFlagAbort;
      h.crc32c = crc32c(data, pc.length);
      encode_chunk_header(h, std::span<std::byte, kChunkHeaderSize>(at, kChunkHeaderSize));
      at = data + pc.length;
    }
    c->batch = b;
    full_q.push(c);
  }
  if (fd >= 0) ::close(fd);
}

// Every rank: checks each piece of each batch and writes the files this rank
// needs.
void write_chunks(const TransferPlan& p, const Schedule& sched, Queue& write_q, Queue& free_q,
                  TransferResult& res, int64_t rank) {
  FileWriter w(p.dest, p.manifest->digest_kind);
  std::vector<bool> failed(p.manifest->entries.size(), false);
  auto fail = [&](uint32_t file, Status st) {
    failed[file] = true;
    w.discard();
    if (res.status.is_ok()) res.status = std::move(st);
  };
  while (Chunk* c = write_q.pop()) {
    const Batch& batch = sched.batches[c->batch];
    std::byte* at = c->buf.data();
    for (uint64_t seq = batch.first; seq < batch.first + batch.count; ++seq) {
      const Piece& pc = sched.pieces[seq];
      const Entry& e = p.manifest->entries[pc.file];
      std::byte* data = at + kChunkHeaderSize;
      const std::span<const std::byte> head(at, kChunkHeaderSize);
      at = data + pc.length;
      if (p.fault.kind == TestFault::Kind::kCorrupt && p.fault.rank == rank &&
          p.fault.chunk == seq && pc.length > 0) {
        data[pc.length / 2] ^= std::byte{0x5a};
      }
      if (!p.mine[pc.file] || failed[pc.file]) continue;  // not this rank's, or failed: dropped
      const std::string where = e.path + " at offset " + std::to_string(pc.offset);
      auto h = decode_chunk_header(head);
      if (!h) {
        fail(pc.file, make_error(Errc::kCorrupt, where + ": " + h.status().message()));
      } else if (h->file_index != pc.file || h->chunk_index != pc.index || h->offset != pc.offset ||
                 h->length != pc.length) {
        fail(pc.file,
             make_error(Errc::kCorrupt, where + ": chunk header does not match the schedule"));
      } else if ((h->flags & kChunkFlagAbort) != 0) {
        fail(pc.file, make_error(Errc::kInvalidArgument,
                                 "source " + e.path +
                                     " changed, shrank or vanished on the root during the run: not "
                                     "staged (the rest was; rerun to stage it)"));
      } else if (crc32c(data, pc.length) != h->crc32c) {
        fail(pc.file, make_error(Errc::kCorrupt, "checksum error in " + where + " (chunk CRC32C)"));
      } else {
        Status st = pc.index == 0 ? w.open(e) : Status::ok();
        if (st) st = w.write(pc.offset, data, pc.length);
        if (st && pc.index + 1 == chunk_count(e.size, p.chunk_size)) {
          st = w.finish();
          if (st) {
            ++res.files_written;
            res.bytes_written += e.size;
          }
        }
        if (!st) fail(pc.file, st);
      }
    }
    free_q.push(c);
  }
}

}  // namespace

Result<TestFault> parse_test_fault(const std::string& spec) {
  TestFault f;
  if (spec.empty()) return f;
  const std::size_t a = spec.find(':'), b = spec.rfind(':');
  if (a == std::string::npos || a == b)
    return make_error(Errc::kInvalidArgument, "bad --test-fault");
  const std::string kind = spec.substr(0, a), rank = spec.substr(a + 1, b - a - 1);
  auto chunk = parse_uint(spec.substr(b + 1));
  if (!chunk) return chunk.status();
  f.chunk = *chunk;
  if (kind == "corrupt")
    f.kind = TestFault::Kind::kCorrupt;
  else if (kind == "kill")
    f.kind = TestFault::Kind::kKill;
  else if (kind == "term")
    f.kind = TestFault::Kind::kTerm;
  else if (kind == "touch")
    f.kind = TestFault::Kind::kTouch;
  else
    return make_error(Errc::kInvalidArgument, "bad --test-fault kind '" + kind + "'");
  if (rank != "all") {
    auto r = parse_uint(rank);
    if (!r) return r.status();
    f.rank = static_cast<int64_t>(*r);
  }
  return f;
}

TransferResult transfer(Group& group, const TransferPlan& plan,
                        const std::function<void(uint64_t)>& progress) {
  TransferResult res;
  const bool root = group.rank() == 0;
  const Schedule sched = make_schedule(*plan.manifest, plan.files, plan.chunk_size, plan.pack);
  std::vector<Chunk> pool(kBuffers);
  Queue free_q, full_q, write_q;
  for (Chunk& c : pool) {
    c.buf.resize(batch_capacity(plan.chunk_size));
    free_q.push(&c);
  }
  std::thread reader;
  if (root) reader = std::thread([&] { read_chunks(plan, sched, free_q, full_q); });
  std::thread writer([&] { write_chunks(plan, sched, write_q, free_q, res, group.rank()); });
  const auto me = static_cast<int64_t>(group.rank());
  Status group_status;
  // Two broadcasts in flight: stage 2 of batch k overlaps stage 1 of k+1.
  std::deque<std::pair<Chunk*, uint64_t>> inflight;
  auto complete_oldest = [&]() -> bool {
    auto [c, req] = inflight.front();
    inflight.pop_front();
    group_status = group.wait(req);
    if (!group_status) {
      free_q.push(c);
      return false;
    }
    const Batch& b = sched.batches[c->batch];
    if ((plan.fault.kind == TestFault::Kind::kKill || plan.fault.kind == TestFault::Kind::kTerm) &&
        plan.fault.chunk >= b.first && plan.fault.chunk < b.first + b.count &&
        (plan.fault.rank < 0 || plan.fault.rank == me)) {
      std::raise(plan.fault.kind == TestFault::Kind::kKill ? SIGKILL : SIGTERM);
    }
    res.bytes_broadcast += b.bytes - b.count * kChunkHeaderSize;
    ++res.broadcasts;
    write_q.push(c);
    progress(res.bytes_broadcast);
    return true;
  };
  bool ok = true;
  for (uint64_t k = 0; ok && k < sched.batches.size(); ++k) {
    Chunk* c = root ? full_q.pop() : free_q.pop();
    if (c == nullptr) break;
    c->batch = k;
    auto req = group.ibcast(0, c->buf.data(), sched.batches[k].bytes);
    if (!req) {
      group_status = req.status();
      free_q.push(c);
      break;
    }
    inflight.emplace_back(c, *req);
    ok = inflight.size() < kInFlight || complete_oldest();
  }
  while (ok && group_status && !inflight.empty())
    ok = complete_oldest();
  // After a failure the group is broken; the engine must let go of every
  // buffer still posted before the pool is freed.
  for (auto& [c, req] : inflight)
    (void)group.wait(req);
  free_q.close();
  full_q.close();
  write_q.close();
  if (reader.joinable()) reader.join();
  writer.join();
  if (!group_status) {
    res.group_failed = true;
    res.status = make_error(group_status.code(), "broadcast failed: " + group_status.message());
  }
  return res;
}

}  // namespace ibbcast::tool::stage
