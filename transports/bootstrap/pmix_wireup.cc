// The PMIx bootstrap's wire-up and collectives: PMIx carries one key per
// Bootstrap (rank 0's host, a random job token and its TCP endpoints); the
// collectives run over the TCP bootstrap's star through rank 0.
#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "transports/bootstrap/pmix_bootstrap.h"
#include "transports/bootstrap/pmix_util.h"
#include "transports/bootstrap/tcp_endpoints.h"

namespace ibbcast::pmix {
namespace {

// Bootstraps created by this process, in turn (PMIx_Init is reference
// counted, so they share one client): ranks agree on the number because every
// rank creates them in the same order, and it keeps their PMIx keys apart.
std::atomic<uint64_t> instances{0};

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

}  // namespace

Status Bootstrap::fence(bool collect, const char* what) {
  const pmix_proc_t all = make_proc(nspace_, PMIX_RANK_WILDCARD);
  pmix_info_t info[2] = {};
  std::size_t ninfo = 0;
  if (collect) {
    const bool yes = true;
    PMIx_Info_load(&info[ninfo++], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
  }
  if (fence_timeout_.count() > 0) {
    // Without a timeout a rank that died before the fence (or never reaches
    // it) would hang every other rank's setup forever.
    const int seconds = pmix_seconds(fence_timeout_);
    PMIx_Info_load(&info[ninfo++], PMIX_TIMEOUT, &seconds, PMIX_INT);
  }
  const pmix_status_t rc = PMIx_Fence(&all, 1, ninfo == 0 ? nullptr : info, ninfo);
  for (std::size_t i = 0; i < ninfo; ++i)
    PMIx_Value_destruct(&info[i].value);
  if (rc != PMIX_SUCCESS) return pmix_error(rc, std::string("PMIx_Fence (") + what + ")");
  return Status::ok();
}

Result<std::string> Bootstrap::get_string(uint32_t rank, const char* key) {
  // After the collecting fence the value is local: PMIX_IMMEDIATE turns a key
  // the peer never put into NOT_FOUND at once instead of asking its server.
  pmix_info_t info[1] = {};
  const bool yes = true;
  PMIx_Info_load(&info[0], PMIX_IMMEDIATE, &yes, PMIX_BOOL);
  const pmix_proc_t peer = make_proc(nspace_, rank);
  pmix_value_t* raw = nullptr;
  const pmix_status_t rc = PMIx_Get(&peer, key, info, 1, &raw);
  PMIx_Value_destruct(&info[0].value);
  if (rc != PMIX_SUCCESS) {
    return pmix_error(rc, "PMIx_Get (" + std::string(key) + ", rank " + std::to_string(rank) + ")");
  }
  ValuePtr got(raw);
  if (got->type != PMIX_STRING || got->data.string == nullptr) {
    return make_error(Errc::kMismatch, "pmix: " + std::string(key) + " of rank " +
                                           std::to_string(rank) + " is not a string");
  }
  return std::string(got->data.string);
}

Status Bootstrap::wire_up() {
  const uint64_t instance = instances.fetch_add(1);
  const std::string key = "ibbcast.tcp." + std::to_string(instance);
  // No timeout: 0 s means wait forever, which the TCP star spells as a year.
  const std::chrono::nanoseconds timeout =
      fence_timeout_.count() > 0 ? std::chrono::nanoseconds(fence_timeout_)
                                 : std::chrono::nanoseconds(std::chrono::hours(24 * 365));
  tcp::Options opt{
      .root = {}, .rank = rank_, .size = size_, .job = {}, .timeout = timeout, .listen_fd = -1};
  if (rank_ == 0) {
    auto listener = tcp::listen_anywhere(static_cast<int>(size_));
    if (!listener) return listener.status();
    opt.listen_fd = listener->fd;
    opt.root = listener->endpoints;
    // The host name lets each rank try loopback first when it shares the
    // root's host, and the host's own addresses otherwise.
    // A random job token, known only to the job's members through PMIx:
    // a stranger who guessed the namespace cannot take a rank's place.
    opt.job = tcp::random_job_token();
    const std::string value = host_name() + " " + opt.job + " " + listener->endpoints;
    pmix_value_t val{};
    val.type = PMIX_STRING;
    val.data.string = const_cast<char*>(value.c_str());  // PMIx_Put copies it
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key.c_str(), &val);
    if (rc == PMIX_SUCCESS) rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) {
      ::close(opt.listen_fd);
      return pmix_error(rc, "PMIx_Put/Commit (" + key + ")");
    }
  }
  if (Status st = fence(true, key.c_str()); !st) {
    if (opt.listen_fd >= 0) ::close(opt.listen_fd);
    return st;
  }
  if (rank_ != 0) {
    auto published = get_string(0, key.c_str());
    if (!published) return published.status();
    const std::size_t space = published->find(' ');
    const std::size_t second = published->find(' ', space + 1);
    if (space == std::string::npos || second == std::string::npos) {
      return make_error(Errc::kMismatch, "pmix: rank 0 published '" + *published +
                                             "', not its host, job token and endpoints");
    }
    opt.job = published->substr(space + 1, second - space - 1);
    opt.root = tcp::order_endpoints(published->substr(second + 1),
                                    published->substr(0, space) == host_name());
  }
  auto star = tcp::Bootstrap::create(opt);
  if (!star) {
    return make_error(star.status().code(),
                      "pmix: the TCP star of rank 0's endpoints: " + star.status().message());
  }
  star_ = std::move(*star);
  return Status::ok();
}

Status Bootstrap::allgather(std::span<const std::byte> mine, std::span<std::byte> all) {
  return star_->allgather(mine, all);
}

Status Bootstrap::barrier() {
  return star_->barrier();
}

Status Bootstrap::progressing_barrier(const std::function<void()>& while_waiting) {
  return star_->progressing_barrier(while_waiting);
}

Status Bootstrap::progressing_allgather(std::span<const std::byte> mine, std::span<std::byte> all,
                                        const std::function<void()>& while_waiting) {
  return star_->progressing_allgather(mine, all, while_waiting);
}
}  // namespace ibbcast::pmix
