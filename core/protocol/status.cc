#include "core/protocol/status.h"

namespace ibbcast {

std::string_view errc_name(Errc c) {
  switch (c) {
    case Errc::kOk:
      return "ok";
    case Errc::kAgain:
      return "again";
    case Errc::kInvalidArgument:
      return "invalid_argument";
    case Errc::kTruncated:
      return "truncated";
    case Errc::kCorrupt:
      return "corrupt";
    case Errc::kUnsupported:
      return "unsupported";
    case Errc::kTimedOut:
      return "timed_out";
    case Errc::kPeerFailed:
      return "peer_failed";
    case Errc::kMismatch:
      return "mismatch";
    case Errc::kDeviceLost:
      return "device_lost";
    case Errc::kNoResource:
      return "no_resource";
    case Errc::kInternal:
      return "internal";
  }
  return "unknown";
}

std::string Status::to_string() const {
  std::string s(errc_name(code_));
  if (!message_.empty()) {
    s += ": ";
    s += message_;
  }
  return s;
}

}  // namespace ibbcast
