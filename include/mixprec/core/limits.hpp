// Caps on what a model may allocate, so that a config, a batch or a layer written by someone else
// cannot make mixprec wrap a size or exhaust memory: every size is computed with checked
// arithmetic and compared with the caps BEFORE anything is allocated; over a cap (or past
// 2^64) is a std::invalid_argument naming the layer, the size and the cap.
//
//   mixprec::set_size_limits({.max_parameters = 100'000'000, .max_allocation_bytes = 1ull << 30});
//
// The defaults never bother a model that fits in memory; a fuzzer or a service that loads
// untrusted configs lowers them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mixprec {

struct size_limits {
  /// The most parameters (weight elements, trainable or not) a model may have; a runtime model
  /// counts all its layers, a compile-time layer its own.
  std::size_t max_parameters = 4'000'000'000;
  /// The largest single buffer a layer may allocate: a weight (counted at 8 bytes an element:
  /// its initial values are drawn in float64), or what a call allocates for its batch (the input
  /// in the compute dtype, the output, a Conv2D's im2col columns; at least 4 bytes an element,
  /// as 16-bit dtypes are widened to float32 for some of that work). 32 GiB.
  std::size_t max_allocation_bytes = std::size_t{32} << 30;

  friend bool operator==(const size_limits&, const size_limits&) = default;
};

namespace detail {
struct size_limits_state {
  std::atomic<std::size_t> max_parameters{size_limits{}.max_parameters};
  std::atomic<std::size_t> max_allocation_bytes{size_limits{}.max_allocation_bytes};
};
inline size_limits_state& size_limits_in_force() {
  static size_limits_state state;
  return state;
}
}  // namespace detail

/// The caps in force (process-wide). Safe to call from any thread; each field is read atomically.
inline size_limits get_size_limits() {
  const auto& state = detail::size_limits_in_force();
  return {state.max_parameters.load(std::memory_order_relaxed), state.max_allocation_bytes.load(std::memory_order_relaxed)};
}
/// Sets the caps for every model built or called from then on (models already built keep their
/// weights). Safe to call from any thread.
inline void set_size_limits(const size_limits& limits) {
  auto& state = detail::size_limits_in_force();
  state.max_parameters.store(limits.max_parameters, std::memory_order_relaxed);
  state.max_allocation_bytes.store(limits.max_allocation_bytes, std::memory_order_relaxed);
}

namespace detail {

/// a * b, or std::invalid_argument when it does not fit in 64 bits.
inline std::size_t checked_multiply(std::size_t a, std::size_t b, std::string_view what) {
  std::size_t product = 0;
  if (__builtin_mul_overflow(a, b, &product))
    throw std::invalid_argument(std::string(what) + " has more than 2^64 elements (" + std::to_string(a) + " x " +
                                std::to_string(b) + " overflows).");
  return product;
}
/// a + b, or std::invalid_argument when it does not fit in 64 bits.
inline std::size_t checked_add(std::size_t a, std::size_t b, std::string_view what) {
  std::size_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum))
    throw std::invalid_argument(std::string(what) + " has more than 2^64 elements (" + std::to_string(a) + " + " +
                                std::to_string(b) + " overflows).");
  return sum;
}
/// The product of extents (1 for none), checked as checked_multiply.
inline std::size_t checked_product(std::span<const std::size_t> extents, std::string_view what) {
  std::size_t product = 1;
  for (std::size_t e : extents) product = checked_multiply(product, e, what);
  return product;
}
/// Throws unless `elements` of `element_bytes` each fit in size_limits::max_allocation_bytes.
inline void check_allocation(std::string_view what, std::size_t elements, std::size_t element_bytes) {
  const std::size_t cap = get_size_limits().max_allocation_bytes;
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(elements, element_bytes, &bytes) || bytes > cap)
    throw std::invalid_argument(std::string(what) + " takes " + std::to_string(elements) + " elements x " +
                                std::to_string(element_bytes) + " bytes, over the allocation cap of " +
                                std::to_string(cap) +
                                " bytes (size_limits::max_allocation_bytes; raise it with mixprec::set_size_limits).");
}
/// Throws unless a layer's `own` parameters, after the `before` of the layers ahead of it in its
/// model, fit in size_limits::max_parameters.
inline void check_parameter_count(std::size_t before, std::size_t own) {
  const std::size_t cap = get_size_limits().max_parameters;
  std::size_t total = 0;
  if (__builtin_add_overflow(before, own, &total) || total > cap)
    throw std::invalid_argument(
        "its " + std::to_string(own) + " parameters" +
        (before == 0 ? std::string() : " (after the model's " + std::to_string(before) + ")") +
        " are over the cap of " + std::to_string(cap) +
        " parameters (size_limits::max_parameters; raise it with mixprec::set_size_limits).");
}

}  // namespace detail
}  // namespace mixprec
