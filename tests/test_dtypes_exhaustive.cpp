// Every 16-bit and 8-bit pattern, and dense samples of float and double inputs, against the
// independent reference in float_reference.hpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <mixprec/core.hpp>

#include "float_reference.hpp"

using namespace mixprec;
using namespace mixprec::test;

namespace {

template <class T>
constexpr const reference_format& reference_for() {
  if constexpr (std::is_same_v<T, float16>) return ref_binary16;
  else if constexpr (std::is_same_v<T, bfloat16>) return ref_bfloat16;
  else if constexpr (std::is_same_v<T, float8_e4m3fn>) return ref_e4m3fn;
  else return ref_e5m2;
}

template <class T>
constexpr std::uint32_t pattern_count() { return 1u << (8 * sizeof(T)); }

/// Our encoding of x must decode to the reference's rounding of x (same sign, NaN for NaN).
template <class T, class Source>
bool agrees_with_reference(Source x, overflow_mode overflow) {
  const auto& f = reference_for<T>();
  const bool saturate = overflow == overflow_mode::saturate;
  double expected = reference_round(f, static_cast<double>(x), saturate);
  if (!f.has_infinity && std::isinf(expected)) expected = std::numeric_limits<double>::quiet_NaN();
  const T ours(x, overflow);
  const double got = reference_decode(f, ours.to_bits());
  if (std::isnan(expected)) return std::isnan(got) && std::signbit(got) == std::signbit(static_cast<double>(x));
  return got == expected && std::signbit(got) == std::signbit(expected);
}

/// The inputs where rounding is decided: every representable value and the midpoints between
/// neighbours, each with the float (or double) just below and above.
template <class T, class Source>
std::vector<Source> critical_inputs() {
  std::vector<double> values;
  const auto& f = reference_for<T>();
  for (std::uint32_t bits = 0; bits < pattern_count<T>() / 2; ++bits) {
    const double v = reference_decode(f, bits);
    if (std::isnan(v) || std::isinf(v)) continue;
    values.push_back(v);
  }
  std::sort(values.begin(), values.end());
  values.push_back(2 * values.back() - values[values.size() - 2]);  // the first value beyond max
  std::vector<Source> inputs;
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::vector<double> centers{values[i]};
    if (i + 1 < values.size()) centers.push_back((values[i] + values[i + 1]) / 2);
    for (double center : centers) {
      const auto c = static_cast<Source>(center);
      for (Source x : {std::nextafter(c, Source(-1)), c, std::nextafter(c, std::numeric_limits<Source>::infinity())}) {
        inputs.push_back(x);
        inputs.push_back(-x);
      }
    }
  }
  return inputs;
}

template <class T>
void check_all_patterns_round_trip() {
  const auto& f = reference_for<T>();
  for (std::uint32_t bits = 0; bits < pattern_count<T>(); ++bits) {
    const auto storage = static_cast<typename T::storage_type>(bits);
    const float widened = static_cast<float>(T::from_bits(storage));
    const double reference = reference_decode(f, bits);
    if (std::isnan(reference)) {
      REQUIRE(std::isnan(widened));
      REQUIRE(std::signbit(widened) == std::signbit(reference));
      REQUIRE(std::isnan(static_cast<float>(T(widened))));
      continue;
    }
    REQUIRE(static_cast<double>(widened) == reference);
    REQUIRE(std::signbit(widened) == std::signbit(reference));
    REQUIRE(T(widened).to_bits() == storage);                          // exact round trip
    REQUIRE(T(static_cast<double>(widened)).to_bits() == storage);     // from double too
  }
}

template <class T>
void check_rounding_against_reference() {
  for (const overflow_mode overflow : {overflow_mode::ieee, overflow_mode::saturate}) {
    for (float x : critical_inputs<T, float>()) REQUIRE(agrees_with_reference<T>(x, overflow));
    for (double x : critical_inputs<T, double>()) REQUIRE(agrees_with_reference<T>(x, overflow));
    // A dense sweep over all float bit patterns (every 997th), both signs.
    for (std::uint64_t bits = 0; bits < 0x100000000ull; bits += 997)
      REQUIRE(agrees_with_reference<T>(std::bit_cast<float>(static_cast<std::uint32_t>(bits)), overflow));
    for (double x : {0.0, -0.0, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::denorm_min(),
                     std::numeric_limits<double>::max(), -std::numeric_limits<double>::max()})
      REQUIRE(agrees_with_reference<T>(x, overflow));
  }
}

}  // namespace

TEST_CASE_TEMPLATE("every bit pattern widens exactly and narrows back to itself", T, float16, bfloat16,
                   float8_e4m3fn, float8_e5m2) {
  check_all_patterns_round_trip<T>();
}

TEST_CASE_TEMPLATE("float and double inputs round as the independent reference does", T, float16, bfloat16,
                   float8_e4m3fn, float8_e5m2) {
  check_rounding_against_reference<T>();
}
