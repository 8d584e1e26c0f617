#pragma once
// A test hook shared by `ibbcast run --late-rank` and tests/mpi/late_check.cc:
// this process stays away from the library for a while, as a rank that
// computes, sleeps, or is stopped by a debugger or a job scheduler does.
// Header-only and plain C++/POSIX, so that an MPI test program needs nothing
// else of ours.
#include <signal.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string_view>
#include <thread>

namespace ibbcast::tool {

/// How a rank stays away: sleep, busy (a loop with no library call) or stop
/// (SIGSTOP to the whole process, every thread, continued by a child).
inline bool valid_away_mode(std::string_view how) {
  return how == "sleep" || how == "busy" || how == "stop";
}

inline void stay_away(std::string_view how, std::chrono::nanoseconds span) {
  if (how == "sleep") {
    std::this_thread::sleep_for(span);
  } else if (how == "busy") {
    const auto until = std::chrono::steady_clock::now() + span;
    volatile uint64_t x = 0;
    while (std::chrono::steady_clock::now() < until)
      for (int i = 0; i < 100000; ++i)
        x = x + static_cast<uint64_t>(i);
  } else if (how == "stop") {
    const pid_t parent = getpid();
    const pid_t child = fork();
    if (child == 0) {
      timespec ts{static_cast<time_t>(span.count() / 1000000000),
                  static_cast<long>(span.count() % 1000000000)};
      while (nanosleep(&ts, &ts) != 0) {
      }
      kill(parent, SIGCONT);
      _exit(0);
    }
    if (child > 0) raise(SIGSTOP);
  }
}

}  // namespace ibbcast::tool
