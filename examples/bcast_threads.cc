// A first ibbcast program: four ranks as threads of one process over the
// in-process fabric, one broadcast of 1 MiB from rank 2, every rank's bytes
// checked. On a real fabric each rank is a process, and its bootstrap and
// transport come from the job instead of make_local_ranks:
//   auto boot = ibbcast::make_bootstrap();                   // PMIx or TCP
//   auto fabric = ibbcast::make_transport("auto", **boot);
// Build against an installation:
//   c++ -std=c++20 bcast_threads.cc $(pkg-config --cflags --libs ibbcast) -pthread
#include <ibbcast/ibbcast.hpp>

#include <cstdio>
#include <thread>
#include <vector>

int main() {
  constexpr uint32_t kRanks = 4, kRoot = 2;
  constexpr std::size_t kSize = 1 << 20;
  std::vector<ibbcast::LocalRank> local = ibbcast::make_local_ranks(kRanks);
  std::vector<int> ok(kRanks, 0);
  std::vector<std::thread> ranks;
  for (uint32_t r = 0; r < kRanks; ++r) {
    ranks.emplace_back([&, r] {
      // Collective; knobs from IBBCAST_* variables and, for this group, these.
      auto group = ibbcast::Group::create(*local[r].transport, *local[r].bootstrap,
                                          ibbcast::Knobs{{{"fragment_size", "2k"}}});
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
