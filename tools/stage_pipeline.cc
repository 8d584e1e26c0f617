#include "tools/stage_pipeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "core/crc32c.h"
#include "core/units.h"
#include "tools/stage_dest.h"

namespace ibbcast::tool::stage {
namespace {

constexpr std::size_t kInFlight = 2;  // broadcasts posted at once
constexpr int kBuffers = 6;           // reading, on the wire (2), writing, two spare

struct Chunk {
  std::vector<std::byte> buf;
  uint32_t file = 0, index = 0, length = 0;
  uint64_t offset = 0, seq = 0;
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

// Calls f(file, chunk index, offset, length, seq) for every scheduled chunk,
// in the order every rank broadcasts them.
template <typename F>
bool for_each_chunk(const TransferPlan& p, F&& f) {
  uint64_t seq = 0;
  for (uint32_t file : p.files) {
    const uint64_t size = p.manifest->entries[file].size;
    const uint64_t n = chunk_count(size, p.chunk_size);
    for (uint64_t k = 0; k < n; ++k) {
      const uint64_t off = k * p.chunk_size;
      const auto len = static_cast<uint32_t>(std::min<uint64_t>(p.chunk_size, size - off));
      if (!f(file, static_cast<uint32_t>(k), off, len, seq++)) return false;
    }
  }
  return true;
}

// Root: fills buffers from the sources, one file open at a time.
void read_chunks(const TransferPlan& p, Queue& free_q, Queue& full_q) {
  int fd = -1;
  uint32_t open_file = UINT32_MAX;
  for_each_chunk(p, [&](uint32_t file, uint32_t k, uint64_t off, uint32_t len, uint64_t seq) {
    Chunk* c = free_q.pop();
    if (c == nullptr) return false;
    if (file != open_file) {
      if (fd >= 0) ::close(fd);
      fd = ::open((*p.sources)[file].c_str(), O_RDONLY | O_CLOEXEC);
      open_file = file;
    }
    std::byte* data = c->buf.data() + kChunkHeaderSize;
    std::size_t got = 0;
    while (fd >= 0 && got < len) {
      const ssize_t n = ::pread(fd, data + got, len - got, static_cast<off_t>(off + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    ChunkHeader h{0, file, k, off, len, 0};
    // A file that shrank or vanished since the walk: every rank drops it.
    if (got != len) h.flags = kChunkFlagAbort;
    h.crc32c = crc32c(data, len);
    encode_chunk_header(h, std::span<std::byte, kChunkHeaderSize>(c->buf.data(), kChunkHeaderSize));
    *c = Chunk{std::move(c->buf), file, k, len, off, seq};
    full_q.push(c);
    return true;
  });
  if (fd >= 0) ::close(fd);
}

// Every rank: checks each chunk and writes the files this rank needs.
void write_chunks(const TransferPlan& p, Queue& write_q, Queue& free_q, TransferResult& res,
                  int64_t rank) {
  FileWriter w(p.dest, p.manifest->digest_kind);
  std::vector<bool> failed(p.manifest->entries.size(), false);
  auto fail = [&](uint32_t file, Status st) {
    failed[file] = true;
    w.discard();
    if (res.status.is_ok()) res.status = std::move(st);
  };
  while (Chunk* c = write_q.pop()) {
    const Entry& e = p.manifest->entries[c->file];
    std::byte* data = c->buf.data() + kChunkHeaderSize;
    if (p.fault.kind == TestFault::Kind::kCorrupt && p.fault.rank == rank &&
        p.fault.chunk == c->seq && c->length > 0) {
      data[c->length / 2] ^= std::byte{0x5a};
    }
    auto h = decode_chunk_header(std::span<const std::byte>(c->buf.data(), kChunkHeaderSize));
    const std::string where = e.path + " at offset " + std::to_string(c->offset);
    if (!p.mine[c->file] || failed[c->file]) {
      // Not this rank's file, or already failed: the bytes are dropped.
    } else if (!h) {
      fail(c->file, make_error(Errc::kCorrupt, where + ": " + h.status().message()));
    } else if (h->file_index != c->file || h->chunk_index != c->index || h->offset != c->offset ||
               h->length != c->length) {
      fail(c->file,
           make_error(Errc::kCorrupt, where + ": chunk header does not match the schedule"));
    } else if ((h->flags & kChunkFlagAbort) != 0) {
      fail(c->file, make_error(Errc::kInvalidArgument, "the root could not read " + e.path +
                                                           " (changed or removed during the run)"));
    } else if (crc32c(data, c->length) != h->crc32c) {
      fail(c->file, make_error(Errc::kCorrupt, "checksum error in " + where + " (chunk CRC32C)"));
    } else {
      Status st = c->index == 0 ? w.open(e) : Status::ok();
      if (st) st = w.write(c->offset, data, c->length);
      if (st && c->index + 1 == chunk_count(e.size, p.chunk_size)) {
        st = w.finish(p.preserve);
        if (st) {
          ++res.files_written;
          res.bytes_written += e.size;
        }
      }
      if (!st) fail(c->file, st);
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
  std::vector<Chunk> pool(kBuffers);
  Queue free_q, full_q, write_q;
  for (Chunk& c : pool) {
    c.buf.resize(kChunkHeaderSize + plan.chunk_size);
    free_q.push(&c);
  }
  std::thread reader;
  if (root) reader = std::thread([&] { read_chunks(plan, free_q, full_q); });
  std::thread writer([&] { write_chunks(plan, write_q, free_q, res, group.rank()); });
  const auto me = static_cast<int64_t>(group.rank());
  Status group_status;
  // Two broadcasts in flight: stage 2 of chunk k overlaps stage 1 of k+1.
  std::deque<std::pair<Chunk*, uint64_t>> inflight;
  auto complete_oldest = [&]() -> bool {
    auto [c, req] = inflight.front();
    inflight.pop_front();
    group_status = group.wait(req);
    if (!group_status) {
      free_q.push(c);
      return false;
    }
    if (plan.fault.kind == TestFault::Kind::kKill && plan.fault.chunk == c->seq &&
        (plan.fault.rank < 0 || plan.fault.rank == me)) {
      std::raise(SIGKILL);
    }
    res.bytes_broadcast += c->length;
    write_q.push(c);
    progress(res.bytes_broadcast);
    return true;
  };
  bool ok = for_each_chunk(
      plan, [&](uint32_t file, uint32_t k, uint64_t off, uint32_t len, uint64_t seq) {
        Chunk* c = root ? full_q.pop() : free_q.pop();
        if (c == nullptr) return false;
        if (!root) *c = Chunk{std::move(c->buf), file, k, len, off, seq};
        auto req = group.ibcast(0, c->buf.data(), kChunkHeaderSize + len);
        if (!req) {
          group_status = req.status();
          free_q.push(c);
          return false;
        }
        inflight.emplace_back(c, *req);
        return inflight.size() < kInFlight || complete_oldest();
      });
  while (ok && !inflight.empty())
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
