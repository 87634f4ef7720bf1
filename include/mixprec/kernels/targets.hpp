// Which CPU target the kernels run on: list the compiled ones, see the active one, force one
// (for tests and benchmarks). Forcing is process-wide.
//
//   for (const auto& target : kernels::supported_targets()) {
//     kernels::target_scope scope(target);   // every kernel now runs `target`'s code
//     ...
//   }
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <mixprec/kernels/config.hpp>

namespace mixprec::kernels {

/// Targets compiled into the kernels, best first (e.g. AVX3, AVX2, SSE4, SCALAR).
MIXPREC_KERNEL_API std::vector<std::string> compiled_targets();
/// The compiled targets this CPU can run, best first.
MIXPREC_KERNEL_API std::vector<std::string> supported_targets();
/// The target the kernels dispatch to now.
MIXPREC_KERNEL_API std::string active_target();
/// Makes every kernel run `name`'s code; throws std::invalid_argument naming the supported
/// targets if `name` is not one of them, and then leaves the target as it was.
MIXPREC_KERNEL_API void force_target(std::string_view name);
/// Back to the best supported target.
MIXPREC_KERNEL_API void reset_target();

/// Forces a target for a scope.
class target_scope {
 public:
  explicit target_scope(std::string_view name) { force_target(name); }
  ~target_scope() { reset_target(); }
  target_scope(const target_scope&) = delete;
  target_scope& operator=(const target_scope&) = delete;
};

}  // namespace mixprec::kernels

#include <mixprec/kernels/detail/default_implementation.hpp>
