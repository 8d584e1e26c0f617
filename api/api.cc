// The C++ API of <ibbcast/ibbcast.hpp>: the entry points that read the
// environment, and the Group that stands in front of Group::Impl.
#include "include/ibbcast/ibbcast.hpp"

#include "api/settings.h"
#include "core/runtime/config.h"
#include "core/runtime/engine_config_table.h"
#include "core/runtime/group.h"
#include "transports/bootstrap/bootstrap_config.h"
#include "transports/bootstrap/bootstrap_select.h"
#include "transports/factory.h"
#include "transports/loopback/loopback.h"

namespace ibbcast {

void Release::operator()(Bootstrap* b) const noexcept {
  delete b;
}
void Release::operator()(Transport* t) const noexcept {
  delete t;
}

Result<BootstrapPtr> make_bootstrap() {
  warn_unknown_env();
  Config<BootstrapConfig> cfg{"bootstrap", bootstrap_config_table()};
  if (Status st = cfg.load_env(); !st) return st;
  auto boot = make_bootstrap(cfg.value());
  if (!boot) return boot.status();
  return BootstrapPtr(boot->release());
}

Result<TransportPtr> make_transport(const std::string& name, Bootstrap& boot) {
  auto cfg = fabric_configs_from_env();
  if (!cfg) return cfg.status();
  auto t = make_fabric_transport(choose_fabric_transport(boot, name, *cfg), *cfg, boot);
  if (!t) return t.status();
  return TransportPtr(t->release());
}

std::vector<LocalRank> make_local_ranks(uint32_t ranks) {
  auto fabric = loopback::make_fabric(ranks);
  std::vector<LocalRank> out(ranks);
  for (uint32_t r = 0; r < ranks; ++r) {
    out[r].bootstrap.reset(loopback::make_bootstrap(fabric, r).release());
    out[r].transport.reset(loopback::make_transport(fabric, r).release());
  }
  return out;
}

Group::Group(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Group::~Group() = default;

Result<std::unique_ptr<Group>> create_group(Transport& transport, Bootstrap& bootstrap,
                                            const EngineConfig& config) {
  auto impl = Group::Impl::create(transport, bootstrap, config);
  if (!impl) return impl.status();
  return std::unique_ptr<Group>(new Group(std::move(*impl)));
}

Result<std::unique_ptr<Group>> Group::create(Transport& transport, Bootstrap& bootstrap) {
  return create(transport, bootstrap, Knobs{});
}

Result<std::unique_ptr<Group>> Group::create(Transport& transport, Bootstrap& bootstrap,
                                             const Knobs& knobs) {
  warn_unknown_env();
  Config<EngineConfig> cfg{"engine", engine_config_table()};
  if (Status st = cfg.load_env(); !st) return st;
  for (const auto& [name, value] : knobs.values)
    IBBCAST_RETURN_IF_ERROR(cfg.set(name, value, ConfigOrigin::kApi));
  return create_group(transport, bootstrap, cfg.value());
}

Status Group::bcast(uint32_t root, void* buffer, std::size_t n) {
  return impl_->bcast(root, buffer, n);
}
Result<uint64_t> Group::ibcast(uint32_t root, void* buffer, std::size_t n) {
  return impl_->ibcast(root, buffer, n);
}
Result<bool> Group::test(uint64_t request) {
  return impl_->test(request);
}
Status Group::wait(uint64_t request) {
  return impl_->wait(request);
}
Status Group::progress(bool block, std::chrono::nanoseconds max_wait) {
  return impl_->application_progress(block, max_wait);
}
const Status& Group::health() const {
  return impl_->health();
}
uint32_t Group::rank() const {
  return impl_->rank();
}
uint32_t Group::size() const {
  return impl_->size();
}
uint32_t Group::fragment_size() const {
  return impl_->fragment_size();
}
bool Group::multicast_active() const {
  return impl_->multicast_active();
}
const std::string& Group::fallback_reason() const {
  return impl_->fallback_reason();
}

Stats Group::stats() const {
  const GroupStats& s = impl_->stats();
  Stats out;
  for (uint64_t n : s.broadcasts)
    out.broadcasts += n;
  out.bytes_delivered = s.bytes_delivered;
  out.datagrams_sent = s.datagrams_sent;
  out.datagrams_received = s.datagrams_received;
  out.datagrams_rejected = s.rejected_total();
  out.messages_sent = s.messages_sent;
  out.messages_received = s.messages_received;
  out.fragments_repaired = s.fragments_repaired;
  out.errors = s.errors;
  return out;
}

std::string Group::stats_summary() const {
  return impl_->stats().to_string();
}

}  // namespace ibbcast
