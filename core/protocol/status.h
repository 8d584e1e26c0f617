#pragma once
// Status and Result<T> are public (include/ibbcast/status.hpp); the library
// adds the early-return macro its own code uses.

#include "include/ibbcast/status.hpp"

/// Return early from a function that returns Status or Result<T>.
#define IBBCAST_RETURN_IF_ERROR(expr) \
  do {                                \
    ::ibbcast::Status st_ = (expr);   \
    if (!st_.is_ok()) return st_;     \
  } while (0)
