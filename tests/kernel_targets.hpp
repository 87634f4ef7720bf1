// Runs test code once per kernel target this CPU supports (AVX3, AVX2, SSE4, SCALAR ...).
//
//   for_each_target([&](const std::string& target) { ... CHECK(...); });
//
// Every kernel called inside runs `target`'s code; the target name is attached to failures.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <mixprec/kernels/targets.hpp>

namespace mixprec::test {

template <class F>
void for_each_target(F&& f) {
  const std::vector<std::string> targets = kernels::supported_targets();
  REQUIRE_FALSE(targets.empty());
  for (const std::string& target : targets) {
    kernels::target_scope scope(target);
    INFO("kernel target ", target);
    REQUIRE(kernels::active_target() == target);
    f(target);
  }
}

}  // namespace mixprec::test
