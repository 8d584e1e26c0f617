// The C API of <ibbcast/ibbcast.h>: opaque handles over the C++ objects. No
// exception leaves a function (allocation failure ends in terminate, as in
// the rest of the library).
#include "include/ibbcast/ibbcast.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "api/settings.h"
#include "core/runtime/group.h"
#include "include/ibbcast/ibbcast.hpp"

#define IBBCAST_STR2(x) #x
#define IBBCAST_STR(x) IBBCAST_STR2(x)
static_assert(std::string_view(IBBCAST_LIBRARY_VERSION) ==
                  IBBCAST_STR(IBBCAST_VERSION_MAJOR) "." IBBCAST_STR(
                      IBBCAST_VERSION_MINOR) "." IBBCAST_STR(IBBCAST_VERSION_PATCH),
              "ibbcast.h's version macros must match meson.build's project version");
static_assert(IBBCAST_ERR_INTERNAL == static_cast<int>(ibbcast::Errc::kInternal) &&
                  IBBCAST_ERR_PEER_FAILED == static_cast<int>(ibbcast::Errc::kPeerFailed) &&
                  IBBCAST_ERR_AGAIN == static_cast<int>(ibbcast::Errc::kAgain),
              "the C codes are ibbcast::Errc's values");

// Members in construction order: destroyed group first, then the transport
// (and its reliable channel), then the bootstrap they were built over.
struct ibbcast_group {
  ibbcast::BootstrapPtr boot;
  ibbcast::TransportPtr transport;
  std::unique_ptr<ibbcast::Group> group;
  std::set<ibbcast_request*> open;
};

struct ibbcast_request {
  ibbcast_group* group;
  uint64_t id;
};

namespace {

thread_local std::string last_error;

int fail(const ibbcast::Status& st) {
  last_error = st.message().empty() ? std::string(ibbcast::errc_name(st.code())) : st.to_string();
  return static_cast<int>(st.code());
}

int fail(int code, const char* what) {
  last_error = what;
  return code;
}

void close_request(ibbcast_request** request) {
  (*request)->group->open.erase(*request);
  delete *request;
  *request = nullptr;
}

}  // namespace

extern "C" {

const char* ibbcast_version(void) {
  return IBBCAST_LIBRARY_VERSION;
}

const char* ibbcast_error_name(int code) {
  if (code < 0 || code > IBBCAST_ERR_INTERNAL) return "unknown";
  // Names are literals of errc_name, so the pointer stays valid.
  return ibbcast::errc_name(static_cast<ibbcast::Errc>(code)).data();
}

const char* ibbcast_last_error(void) {
  return last_error.c_str();
}

int ibbcast_group_create(const char* transport, ibbcast_group** group) {
  if (group == nullptr) return fail(IBBCAST_ERR_INVALID_ARGUMENT, "group is NULL");
  *group = nullptr;
  auto g = std::make_unique<ibbcast_group>();
  auto config = ibbcast::engine_config_from_env();
  if (!config) return fail(config.status());
  auto boot = ibbcast::make_bootstrap();
  if (!boot) return fail(boot.status());
  g->boot = std::move(*boot);
  auto t = ibbcast::make_transport(transport == nullptr ? "auto" : transport, *g->boot);
  if (!t) return fail(t.status());
  g->transport = std::move(*t);
  auto created = ibbcast::create_group(*g->transport, *g->boot, *config);
  if (!created) return fail(created.status());
  g->group = std::move(*created);
  *group = g.release();
  return IBBCAST_OK;
}

int ibbcast_group_free(ibbcast_group* group) {
  if (group == nullptr) return IBBCAST_OK;
  for (ibbcast_request* r : group->open)
    delete r;
  delete group;
  return IBBCAST_OK;
}

uint32_t ibbcast_group_rank(const ibbcast_group* group) {
  return group->group->rank();
}
uint32_t ibbcast_group_size(const ibbcast_group* group) {
  return group->group->size();
}

int ibbcast_bcast(ibbcast_group* group, void* buffer, size_t bytes, uint32_t root) {
  if (group == nullptr) return fail(IBBCAST_ERR_INVALID_ARGUMENT, "group is NULL");
  if (ibbcast::Status st = group->group->bcast(root, buffer, bytes); !st) return fail(st);
  return IBBCAST_OK;
}

int ibbcast_ibcast(ibbcast_group* group, void* buffer, size_t bytes, uint32_t root,
                   ibbcast_request** request) {
  if (group == nullptr || request == nullptr)
    return fail(IBBCAST_ERR_INVALID_ARGUMENT, "group or request is NULL");
  *request = nullptr;
  auto id = group->group->ibcast(root, buffer, bytes);
  if (!id) return fail(id.status());
  *request = new ibbcast_request{group, *id};
  group->open.insert(*request);
  return IBBCAST_OK;
}

int ibbcast_test(ibbcast_request** request, int* done) {
  if (request == nullptr || *request == nullptr || done == nullptr)
    return fail(IBBCAST_ERR_INVALID_ARGUMENT, "request or done is NULL");
  auto r = (*request)->group->group->test((*request)->id);
  *done = r.is_ok() && *r ? 1 : 0;
  if (!r || *r) close_request(request);
  return r ? IBBCAST_OK : fail(r.status());
}

int ibbcast_wait(ibbcast_request** request) {
  if (request == nullptr || *request == nullptr)
    return fail(IBBCAST_ERR_INVALID_ARGUMENT, "request is NULL");
  ibbcast::Status st = (*request)->group->group->wait((*request)->id);
  close_request(request);
  return st ? IBBCAST_OK : fail(st);
}

int ibbcast_group_stats(const ibbcast_group* group, ibbcast_stats* stats) {
  if (group == nullptr || stats == nullptr)
    return fail(IBBCAST_ERR_INVALID_ARGUMENT, "group or stats is NULL");
  if (stats->struct_size < offsetof(ibbcast_stats, broadcasts))
    return fail(IBBCAST_ERR_INVALID_ARGUMENT,
                "stats->struct_size is not set (sizeof(ibbcast_stats))");
  ibbcast_stats all{};
  const ibbcast::Stats s = group->group->stats();
  all.struct_size = static_cast<uint32_t>(std::min<size_t>(stats->struct_size, sizeof all));
  all.multicast_active = group->group->multicast_active() ? 1 : 0;
  all.broadcasts = s.broadcasts;
  all.bytes_delivered = s.bytes_delivered;
  all.datagrams_sent = s.datagrams_sent;
  all.datagrams_received = s.datagrams_received;
  all.datagrams_rejected = s.datagrams_rejected;
  all.messages_sent = s.messages_sent;
  all.messages_received = s.messages_received;
  all.fragments_repaired = s.fragments_repaired;
  all.errors = s.errors;
  std::memcpy(stats, &all, all.struct_size);
  return IBBCAST_OK;
}

}  // extern "C"
