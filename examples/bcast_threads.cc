// A first ibbcast program: four ranks as threads of one process over the
// in-process loopback fabric, one broadcast of 1 MiB from rank 2, every
// rank's bytes checked. On a real fabric each rank is a process and the two
// loopback lines become
//   auto boot = ibbcast::make_bootstrap(bootstrap_config);     // PMIx or TCP
//   auto t = ibbcast::make_fabric_transport("udp", fabric_configs, **boot);
// Build against an installation:
//   c++ -std=c++20 bcast_threads.cc $(pkg-config --cflags --libs ibbcast) -pthread
#include <ibbcast/ibbcast.hpp>

#include <cstdio>
#include <thread>
#include <vector>

int main() {
  constexpr uint32_t kRanks = 4, kRoot = 2;
  constexpr std::size_t kSize = 1 << 20;
  auto fabric = ibbcast::loopback::make_fabric(kRanks);
  ibbcast::Config<ibbcast::EngineConfig> config{"engine", ibbcast::engine_config_table()};
  if (ibbcast::Status st = config.load_env(); !st) {  // IBBCAST_ALGORITHM=..., etc.
    std::fprintf(stderr, "%s\n", st.to_string().c_str());
    return 2;
  }
  std::vector<int> ok(kRanks, 0);
  std::vector<std::thread> ranks;
  for (uint32_t r = 0; r < kRanks; ++r) {
    ranks.emplace_back([&, r] {
      auto transport = ibbcast::loopback::make_transport(fabric, r);
      auto boot = ibbcast::loopback::make_bootstrap(fabric, r);
      auto group = ibbcast::Group::create(*transport, *boot, config.value());  // collective
      if (!group) {
        std::fprintf(stderr, "rank %u: %s\n", r, group.status().to_string().c_str());
        return;
      }
      std::vector<unsigned char> buf(kSize);
      if (r == kRoot) {
        for (std::size_t i = 0; i < kSize; ++i)
          buf[i] = static_cast<unsigned char>(i * 7);
      }
      ibbcast::Status st = (*group)->bcast(kRoot, buf.data(), buf.size());  // collective
      bool same = st.is_ok();
      for (std::size_t i = 0; same && i < kSize; ++i)
        same = buf[i] == static_cast<unsigned char>(i * 7);
      std::printf("rank %u: %s\n", r, !st ? st.to_string().c_str() : same ? "ok" : "wrong bytes");
      ok[r] = same ? 1 : 0;
    });
  }
  for (auto& t : ranks)
    t.join();
  for (int v : ok)
    if (v == 0) return 1;
  std::printf("every rank holds rank %u's %zu bytes\n", kRoot, kSize);
  return 0;
}
