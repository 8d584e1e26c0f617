#include "dpdk/eal.h"

#include <dirent.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#include "dpdk/port.h"

namespace ibbcast::dpdk {
namespace {

struct State {
  std::mutex mu;
  bool eal_tried = false;
  bool owned = false;  // we ran rte_eal_init, so we clean up at exit
  std::string vdev;    // what our own EAL was started with
  Status eal_failure;  // a failed start is final: the EAL cannot be retried
  std::map<std::string, std::unique_ptr<Port>> ports;  // "own", or "port N" in app mode
};

State& state() {
  static State* s = new State;  // never destroyed: atexit handlers use it
  return *s;
}

// Runtime files of our EAL, collected after init so the signal handler only
// makes async-signal-safe calls.
constexpr int kMaxFiles = 16;
char g_files[kMaxFiles][256];
int g_nfiles = 0;
char g_dir[256];

void remove_runtime_files() {
  for (int i = 0; i < g_nfiles; ++i)
    ::unlink(g_files[i]);
  if (g_dir[0] != '\0') ::rmdir(g_dir);
}

// Runtime directories of our earlier processes that died by SIGKILL (no
// handler runs then): "ibbcast-<pid>" beside ours, with no such process.
void remove_stale_runtime_dirs(const std::string& parent) {
  DIR* d = ::opendir(parent.c_str());
  if (d == nullptr) return;
  while (dirent* e = ::readdir(d)) {
    int pid = 0;
    char tail = 0;
    if (std::sscanf(e->d_name, "ibbcast-%d%c", &pid, &tail) != 1 || pid <= 0) continue;
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    const std::string dir = parent + "/" + e->d_name;
    if (DIR* inner = ::opendir(dir.c_str())) {
      while (dirent* f = ::readdir(inner))
        if (f->d_name[0] != '.') ::unlink((dir + "/" + f->d_name).c_str());
      ::closedir(inner);
    }
    ::rmdir(dir.c_str());
  }
  ::closedir(d);
}

void collect_runtime_files() {
  const char* dir = rte_eal_get_runtime_dir();
  if (dir == nullptr || std::strlen(dir) >= sizeof g_dir) return;
  if (const char* slash = std::strrchr(dir, '/'))
    remove_stale_runtime_dirs(std::string(dir, slash));
  std::strcpy(g_dir, dir);
  if (DIR* d = ::opendir(dir)) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.' || g_nfiles == kMaxFiles) continue;
      const std::string path = std::string(dir) + "/" + e->d_name;
      if (path.size() >= sizeof g_files[0]) continue;
      std::memcpy(g_files[g_nfiles++], path.c_str(), path.size() + 1);
    }
    ::closedir(d);
  }
}

void on_signal(int sig) {
  remove_runtime_files();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_signal_cleanup() {
  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) continue;
    if (old.sa_handler != SIG_DFL) continue;  // the application's handler stays
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    ::sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

void at_exit() {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.ports.clear();
  if (s.owned) {
    rte_eal_cleanup();
    remove_runtime_files();
  }
}

std::string vdev_of(const DpdkConfig& cfg) {
  if (!cfg.vdev.empty()) return cfg.vdev;
  return "net_af_packet0,iface=" + cfg.interface + ",framecnt=" + std::to_string(cfg.ring_frames);
}

std::vector<std::string> eal_args(const DpdkConfig& cfg) {
  std::vector<std::string> a = {"ibbcast",
                                "--no-huge",
                                "--no-shconf",
                                "--no-pci",
                                "--no-telemetry",
                                "-m",
                                "256",
                                "--log-level=*:warning",
                                "--file-prefix=ibbcast-" + std::to_string(::getpid()),
                                Eal::lcores_argument(),
                                "--vdev=" + vdev_of(cfg)};
  std::istringstream extra(cfg.eal_args);
  for (std::string w; extra >> w;)
    a.push_back(w);
  return a;
}

// Starts our EAL. The application's EAL (lcores already counted) is never
// started again: callers then use its ports (dpdk_eal=app).
Status start_eal(State& s, const DpdkConfig& cfg) {
  if (cfg.vdev.empty() && cfg.interface.empty()) {
    return make_error(Errc::kInvalidArgument,
                      "dpdk: set dpdk_interface (af_packet port) or dpdk_vdev");
  }
  std::vector<std::string> args = eal_args(cfg);
  std::vector<char*> argv;
  for (auto& w : args)
    argv.push_back(w.data());
  argv.push_back(nullptr);
  if (rte_eal_init(static_cast<int>(args.size()), argv.data()) < 0) {
    return make_error(Errc::kUnsupported, "dpdk: rte_eal_init failed (" +
                                              std::string(rte_strerror(rte_errno)) +
                                              "); EAL arguments: " + Eal::eal_command_line(cfg));
  }
  s.owned = true;
  collect_runtime_files();
  install_signal_cleanup();
  std::atexit(at_exit);
  if (rte_eth_dev_count_avail() == 0) {
    return make_error(Errc::kUnsupported,
                      "dpdk: no port came up for --vdev=" + vdev_of(cfg) +
                          " (af_packet needs the interface in this network namespace and root)");
  }
  return Status::ok();
}

Result<Port*> open_port(State& s, const std::string& key, uint16_t id, const DpdkConfig& cfg,
                        bool configure) {
  if (auto it = s.ports.find(key); it != s.ports.end()) return it->second.get();
  if (!rte_eth_dev_is_valid_port(id)) {
    return make_error(Errc::kInvalidArgument, "dpdk: no ethdev port " + std::to_string(id));
  }
  auto port = Port::open(id, cfg, configure);
  if (!port) return port.status();
  if (s.ports.empty() && !s.owned) std::atexit(at_exit);
  return s.ports.emplace(key, std::move(*port)).first->second.get();
}

}  // namespace

std::string Eal::lcores_argument() {
  std::string cpus;
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
  }
  return "--lcores=0@(" + (cpus.empty() ? std::string("0") : cpus) + ")";
}

std::string Eal::eal_command_line(const DpdkConfig& cfg) {
  std::string out;
  for (const auto& w : eal_args(cfg))
    out += (out.empty() ? "" : " ") + w;
  return out;
}

Result<Port*> Eal::acquire_port(const DpdkConfig& cfg) {
  State& s = state();
  std::lock_guard lock(s.mu);
  const bool app_eal = !s.owned && rte_lcore_count() > 0;
  if (cfg.eal == "app" || app_eal) {
    // The application's EAL and ports: it configured and started the port;
    // we use its queue 0 and our own pool for transmit buffers.
    if (!app_eal) {
      return make_error(Errc::kInvalidArgument,
                        "dpdk_eal=app, but the application has not started DPDK's EAL");
    }
    return open_port(s, "port " + std::to_string(cfg.port), static_cast<uint16_t>(cfg.port), cfg,
                     false);
  }
  if (!s.eal_tried) {
    s.eal_tried = true;
    s.vdev = vdev_of(cfg);
    s.eal_failure = start_eal(s, cfg);
  }
  if (!s.eal_failure) return s.eal_failure;
  if (vdev_of(cfg) != s.vdev) {
    return make_error(Errc::kInvalidArgument, "dpdk: this process's EAL runs --vdev=" + s.vdev +
                                                  "; one port per process (asked for " +
                                                  vdev_of(cfg) + ")");
  }
  return open_port(s, "own", static_cast<uint16_t>(rte_eth_find_next(0)), cfg, true);
}

}  // namespace ibbcast::dpdk
