// Target listing and forcing (included once, by implementation.hpp).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <hwy/highway.h>
#include <hwy/targets.h>
#include <mixprec/kernels/targets.hpp>

namespace mixprec::kernels {
namespace detail {

inline std::vector<std::int64_t> compiled_target_bits() {
  std::vector<std::int64_t> bits;
  for (std::int64_t targets = HWY_TARGETS; targets != 0; targets &= targets - 1) bits.push_back(targets & -targets);
  return bits;  // lowest bit first: best target first
}

}  // namespace detail

MIXPREC_KERNEL_API std::vector<std::string> compiled_targets() {
  std::vector<std::string> names;
  for (std::int64_t bit : detail::compiled_target_bits()) names.emplace_back(hwy::TargetName(bit));
  return names;
}

MIXPREC_KERNEL_API std::vector<std::string> supported_targets() {
  std::vector<std::string> names;
  for (std::int64_t bit : hwy::SupportedAndGeneratedTargets()) names.emplace_back(hwy::TargetName(bit));
  return names;
}

MIXPREC_KERNEL_API std::string active_target() {
  const std::int64_t chosen = hwy::SupportedTargets() & HWY_TARGETS;
  return hwy::TargetName(chosen & -chosen);
}

MIXPREC_KERNEL_API void force_target(std::string_view name) {
  // While a target is forced, SupportedTargets() reports that one alone: the CPU's own set is
  // read with the forcing lifted, and a refused name puts the forcing back as it was.
  const std::int64_t before = hwy::SupportedTargets();
  hwy::SetSupportedTargetsForTest(0);
  const std::int64_t cpu = hwy::SupportedTargets();
  for (std::int64_t bit : detail::compiled_target_bits()) {
    if (name == hwy::TargetName(bit) && (cpu & bit) != 0) {
      hwy::SetSupportedTargetsForTest(bit);
      return;
    }
  }
  std::string supported;
  for (const auto& target : kernels::supported_targets()) supported += (supported.empty() ? "" : ", ") + target;
  hwy::SetSupportedTargetsForTest(before == cpu ? 0 : before);
  throw std::invalid_argument("Cannot force the kernel target '" + std::string(name) +
                              "'. Targets compiled in and supported by this CPU: " + supported + ".");
}

MIXPREC_KERNEL_API void reset_target() { hwy::SetSupportedTargetsForTest(0); }

}  // namespace mixprec::kernels
