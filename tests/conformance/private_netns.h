#pragma once
// Moves the test process into a network namespace of its own with a veth
// pair (interface kPrivateInterface, 10.99.0.1 and fd00:99::1), so the udp backend can be tested
// with real sockets without touching the machine's own network. Call before starting rank threads
// (threads inherit the namespace). Returns "" or why not.

#include <string>

namespace ibbcast::conformance {

inline constexpr const char* kPrivateInterface = "ibv0";

std::string enter_private_netns();

}  // namespace ibbcast::conformance
