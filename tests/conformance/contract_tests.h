#pragma once
// Registers the contract (contract()) as GoogleTest tests, so that every
// runner instantiates the same list: a check added to contract() runs in
// every runner without naming it there.

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>

#include "tests/conformance/contract.h"

namespace ibbcast::conformance {

/// One test per check that `include` accepts, named `<suite>.<check><suffix>`,
/// whose body is `body(check)`. Call before RUN_ALL_TESTS.
inline void register_contract(const std::string& suite, const std::string& suffix,
                              const std::function<bool(const Check&)>& include,
                              std::function<void(const Check&)> body) {
  class CheckTest : public ::testing::Test {
   public:
    CheckTest(const Check& check, std::function<void(const Check&)> body)
        : check_(check), body_(std::move(body)) {}
    void TestBody() override { body_(check_); }

   private:
    const Check& check_;
    std::function<void(const Check&)> body_;
  };
  for (const Check& check : contract()) {
    if (!include(check)) continue;
    const std::string name = std::string(check.name) + suffix;
    ::testing::RegisterTest(
        suite.c_str(), name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
        [&check, body]() -> ::testing::Test* { return new CheckTest(check, body); });
  }
}

}  // namespace ibbcast::conformance
