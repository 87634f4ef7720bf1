// Conversion kernels on every supported target: bit-identical to the scalar codec (itself
// checked against an independent reference in test_dtypes_exhaustive), on special values,
// every 16-bit and 8-bit pattern, ragged lengths and unaligned starts.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <mixprec/kernels/convert.hpp>
#include <mixprec/kernels/gemm.hpp>

#include "kernel_targets.hpp"

using namespace mixprec;
using mixprec::test::for_each_target;

namespace {

template <class T>
auto bits_of(T value) {
  if constexpr (sizeof(T) == 4) return std::bit_cast<std::uint32_t>(value);
  else if constexpr (sizeof(T) == 8) return std::bit_cast<std::uint64_t>(value);
  else return value.to_bits();
}

/// Specials, then random bit patterns.
std::vector<float> float_inputs(std::size_t random_count) {
  std::vector<float> x{0.0f, -0.0f, 1.0f, -1.0f, std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                       -std::numeric_limits<float>::quiet_NaN(), std::bit_cast<float>(0x7F800001u),
                       std::bit_cast<float>(0xFFA00000u), std::numeric_limits<float>::denorm_min(),
                       std::numeric_limits<float>::min(), std::numeric_limits<float>::max(),
                       65504.0f, 65520.0f, 448.0f, 464.0f, 57344.0f, 61440.0f, 0x1p-24f, 0x1p-25f, 0x1p-133f};
  std::mt19937 rng(42);
  for (std::size_t i = 0; i < random_count; ++i) x.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
  return x;
}

/// convert<From, To> on `from` must equal the scalar cast of each element, bit for bit, for
/// every length prefix up to 2 * lanes + 1 and every start offset up to 3.
template <class From, class To>
void check_against_scalar(const std::vector<From>& from, overflow_mode overflow = overflow_mode::ieee) {
  const auto expected_at = [&](std::size_t i) {
    if constexpr (std::is_constructible_v<To, float, overflow_mode>) {
      if constexpr (std::is_same_v<From, float>) return To(from[i], overflow);
      else return To(static_cast<float>(from[i]), overflow);
    } else {
      return cast<To>(from[i]);
    }
  };
  std::vector<To> to(from.size());
  kernels::convert<From, To>(from, to, overflow);
  for (std::size_t i = 0; i < from.size(); ++i) {
    const auto expected = expected_at(i);
    if (bits_of(to[i]) != bits_of(expected)) {
      FAIL_CHECK("element " << i << ": got bits " << bits_of(to[i]) << ", expected " << bits_of(expected));
      return;
    }
  }
  for (std::size_t offset = 0; offset < 4 && offset < from.size(); ++offset) {
    for (std::size_t n = 0; n <= 41 && offset + n <= from.size(); ++n) {
      std::vector<To> part(n + 1, To{});
      const auto canary = bits_of(part[n] = cast<To>(From{}));
      kernels::convert<From, To>(std::span(from).subspan(offset, n), std::span(part).first(n), overflow);
      for (std::size_t i = 0; i < n; ++i) REQUIRE(bits_of(part[i]) == bits_of(expected_at(offset + i)));
      REQUIRE(bits_of(part[n]) == canary);  // nothing written past the end
    }
  }
}

template <class T>
std::vector<T> all_patterns() {
  std::vector<T> values;
  for (std::uint32_t bits = 0; bits < (1u << (8 * sizeof(T))); ++bits)
    values.push_back(T::from_bits(static_cast<typename T::storage_type>(bits)));
  return values;
}

}  // namespace

TEST_CASE("float -> bfloat16 / float16 / float8 on every target") {
  const auto x = float_inputs(200000);
  for_each_target([&](const std::string&) {
    check_against_scalar<float, bfloat16>(x);
    check_against_scalar<float, float16>(x);
    check_against_scalar<float, float8_e4m3fn>(x);
    check_against_scalar<float, float8_e4m3fn>(x, overflow_mode::saturate);
    check_against_scalar<float, float8_e5m2>(x);
    check_against_scalar<float, float8_e5m2>(x, overflow_mode::saturate);
  });
}

TEST_CASE("float -> bfloat16 without the native AVX-512 BF16 kernel, on every target") {
  const auto x = float_inputs(200000);
  kernels::detail::set_native_bf16_enabled(false);
  for_each_target([&](const std::string&) {
    CHECK_FALSE(kernels::detail::convert_uses_native_bf16());
    check_against_scalar<float, bfloat16>(x);
  });
  kernels::detail::set_native_bf16_enabled(true);
}

TEST_CASE("float -> bfloat16: a subnormal in any lane among normal values rounds as the scalar cast") {
  // vcvtne2ps2bf16 flushes subnormal inputs to zero; the native kernel redoes those lanes alone.
  const float subnormals[] = {std::bit_cast<float>(0x00018000u), std::bit_cast<float>(0x80008000u),
                              std::bit_cast<float>(0x0001FFFFu), std::bit_cast<float>(0x007FFFFFu),
                              std::numeric_limits<float>::denorm_min()};
  for_each_target([&](const std::string&) {
    for (const float subnormal : subnormals) {
      for (std::size_t lane = 0; lane < 67; ++lane) {
        std::vector<float> x(67, 1.0f + 0x1p-8f);  // a tie: rounds to even, down
        x[lane] = subnormal;
        x[(lane + 5) % x.size()] = -0.0f;
        std::vector<bfloat16> y(x.size());
        kernels::convert<float, bfloat16>(x, y);
        for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(y[i].to_bits() == bfloat16(x[i]).to_bits());
      }
    }
  });
}

TEST_CASE("float -> bfloat16: lengths and alignments around the native kernel's prefetching loop") {
  // A source over 32 KiB (8192 floats) is prefetched 512 elements ahead, up to 512 before its end,
  // after a peel to the destination's 64-byte alignment: lengths on both sides of those edges,
  // every destination alignment of 16-bit elements.
  const auto x = float_inputs(9000);
  for_each_target([&](const std::string&) {
    for (const std::size_t n : {8191, 8192, 8193, 8224, 8704, 8705, 8736, 8737, 8999}) {
      for (std::size_t offset = 0; offset < 32; ++offset) {
        std::vector<bfloat16> y(offset + n + 1, bfloat16::from_bits(0x1234));
        kernels::convert<float, bfloat16>(std::span(x).last(n), std::span(y).subspan(offset, n));
        for (std::size_t i = 0; i < n; ++i) REQUIRE(y[offset + i].to_bits() == bfloat16(x[x.size() - n + i]).to_bits());
        REQUIRE(y[offset + n].to_bits() == 0x1234);  // nothing written past the end
        if (offset != 0) REQUIRE(y[offset - 1].to_bits() == 0x1234);  // nor before the start
      }
    }
  });
}

TEST_CASE("every 16-bit and 8-bit pattern widens exactly on every target") {
  const auto bf = all_patterns<bfloat16>();
  const auto h = all_patterns<float16>();
  const auto e4 = all_patterns<float8_e4m3fn>();
  const auto e5 = all_patterns<float8_e5m2>();
  for_each_target([&](const std::string&) {
    check_against_scalar<bfloat16, float>(bf);
    check_against_scalar<float16, float>(h);
    check_against_scalar<float8_e4m3fn, float>(e4);
    check_against_scalar<float8_e5m2, float>(e5);
    check_against_scalar<bfloat16, float16>(bf);
    check_against_scalar<float16, bfloat16>(h);
    // Saturating: the finite values fit, the infinities become bfloat16's largest finite values.
    check_against_scalar<bfloat16, float16>(bf, overflow_mode::saturate);
    check_against_scalar<float16, bfloat16>(h, overflow_mode::saturate);
  });
}

TEST_CASE("double -> float on every target") {
  std::vector<double> x{0.0, -0.0, 1e300, -1e300, 1e-300, std::numeric_limits<double>::quiet_NaN(),
                        std::numeric_limits<double>::infinity(), 0x1.000000fffffffp0, 0x1.0000010000000p0,
                        0x1.0000030000000p0, static_cast<double>(std::numeric_limits<float>::max()) * (1 + 0x1p-25)};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; ++i) x.push_back(std::bit_cast<double>(rng()));
  for_each_target([&](const std::string&) { check_against_scalar<double, float>(x); });
}

TEST_CASE("pairs without a kernel round once, through the scalar path") {
  const std::vector<double> x{1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-8 + 0x1p-30};
  std::vector<float16> h(2);
  kernels::convert<double, float16>(x, h);
  CHECK(h[0].to_bits() == 0x3C01);  // no double rounding through float
  std::vector<bfloat16> b(2);
  kernels::convert<double, bfloat16>(x, b);
  CHECK(b[1].to_bits() == 0x3F81);
  std::vector<float> f(2);
  kernels::convert<float16, float>(h, f);
  CHECK(f[0] == 1.0f + 0x1p-10f);
}

TEST_CASE("mismatched sizes throw and write nothing") {
  std::vector<float> x(10, 1.0f);
  std::vector<bfloat16> y(9, bfloat16(7.0f));
  CHECK_THROWS_WITH_AS((kernels::convert<float, bfloat16>(x, y)),
                       "convert: the input has 10 elements but the output has 9; they must match.",
                       std::invalid_argument);
  for (auto v : y) CHECK(static_cast<float>(v) == 7.0f);
  std::vector<std::int8_t> q(3);
  CHECK_THROWS_AS(kernels::quantize_int8(x, 1.0f, q), std::invalid_argument);
}

TEST_CASE("int8 quantization: round half to even, clip to +-127, NaN -> 0, on every target") {
  std::vector<float> x{0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 0.49999997f, -0.49999997f, 126.5f, 127.4f, 1000.0f, -1000.0f,
                       std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                       std::numeric_limits<float>::quiet_NaN(), 0.0f, -0.0f, 3.75f};
  const std::vector<std::int8_t> expected{0, 2, 2, 0, -2, 0, 0, 126, 127, 127, -127, 127, -127, 0, 0, 0, 4};
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> random(1000);
  for (auto& v : random) v = dist(rng);
  for_each_target([&](const std::string&) {
    std::vector<std::int8_t> q(x.size());
    kernels::quantize_int8(x, 1.0f, q);
    CHECK(q == expected);
    std::vector<std::int8_t> r(random.size());
    kernels::quantize_int8(random, 63.5f, r);
    for (std::size_t i = 0; i < random.size(); ++i) {
      const float scaled = random[i] * 63.5f;
      const auto reference = static_cast<std::int8_t>(std::clamp(std::nearbyint(scaled), -127.0f, 127.0f));
      REQUIRE(r[i] == reference);
    }
  });
  // Keras' example (spec section 7): per-channel scale = 127 / max|W|.
  std::vector<float> column{0.25f, -2.0f};
  std::vector<std::int8_t> qc(2);
  kernels::quantize_int8(column, 127.0f / (2.0f + 1e-7f), qc);
  CHECK(qc == std::vector<std::int8_t>{16, -127});
}

TEST_CASE("target control") {
  const auto compiled = kernels::compiled_targets();
  const auto supported = kernels::supported_targets();
  CHECK_FALSE(compiled.empty());
  CHECK(supported.size() <= compiled.size());
  CHECK(kernels::active_target() == supported.front());
  CHECK_THROWS_WITH_AS(kernels::force_target("NEON9"), doctest::Contains("Cannot force the kernel target 'NEON9'"),
                       std::invalid_argument);
  {
    kernels::target_scope scope(supported.back());
    CHECK(kernels::active_target() == supported.back());
    // A refused name leaves the forced target as it was, and the message lists every target
    // the CPU supports, not only the forced one.
    std::string listed = "Targets compiled in and supported by this CPU: ";
    for (std::size_t i = 0; i < supported.size(); ++i) listed += (i == 0 ? "" : ", ") + supported[i];
    listed += ".";
    CHECK_THROWS_WITH_AS(kernels::force_target("NEON9"), doctest::Contains(listed.c_str()), std::invalid_argument);
    CHECK(kernels::active_target() == supported.back());
    CHECK(kernels::supported_targets() == std::vector<std::string>{supported.back()});
    // So does a target compiled in that the CPU lacks (none on a CPU that runs them all).
    for (const auto& target : compiled) {
      if (std::find(supported.begin(), supported.end(), target) != supported.end()) continue;
      CHECK_THROWS_AS(kernels::force_target(target), std::invalid_argument);
      CHECK(kernels::active_target() == supported.back());
    }
  }
  CHECK(kernels::active_target() == supported.front());
  CHECK(kernels::supported_targets() == supported);
}

template <class From, class To>
concept converts = requires { kernels::convert(std::declval<From>(), std::declval<To>()); };

TEST_CASE("convert deduces the dtypes from spans and containers") {
  const std::vector<float> x{1.0f, 1.00390625f, -70000.0f, 3.0e38f};
  std::vector<bfloat16> named(4), deduced(4), from_spans(4);
  kernels::convert<float, bfloat16>(x, named);
  kernels::convert(x, deduced);
  kernels::convert(std::span<const float>(x), std::span<bfloat16>(from_spans));
  for (std::size_t i = 0; i < x.size(); ++i) {
    CHECK(deduced[i].to_bits() == named[i].to_bits());
    CHECK(from_spans[i].to_bits() == named[i].to_bits());
  }
  std::vector<float> mutable_x = x;  // a span of non-const elements is read as well
  std::vector<float16> saturated(4);
  kernels::convert(std::span<float>(mutable_x), saturated, overflow_mode::saturate);
  CHECK(static_cast<float>(saturated[2]) == -65504.0f);
  // double -> float saturates too (it overflowed to inf), infinities included as for every pair; NaN stays.
  const std::vector<double> wide{1e300, -1e300, std::numeric_limits<double>::infinity(), 1.5, std::nan("")};
  std::vector<float> narrowed(5), ieee(5);
  kernels::convert(wide, narrowed, overflow_mode::saturate);
  kernels::convert(wide, ieee);
  CHECK(narrowed[0] == std::numeric_limits<float>::max());
  CHECK(narrowed[1] == -std::numeric_limits<float>::max());
  CHECK(narrowed[2] == std::numeric_limits<float>::max());
  CHECK(narrowed[3] == 1.5f);
  CHECK(std::isnan(narrowed[4]));
  CHECK(ieee[0] == std::numeric_limits<float>::infinity());

  using floats = std::vector<float>&;
  static_assert(converts<floats, std::vector<bfloat16>&>);
  static_assert(!converts<floats, std::vector<bfloat16>>);  // a temporary: the result would be lost
  static_assert(!converts<floats, const std::vector<bfloat16>&>);
  static_assert(!converts<floats, std::vector<char*>&>);
}

// The names of the previous release still work (and warn: the project itself must not use them).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST_CASE("the deprecated mixprec::convert and quantize_int8 forward to kernels::") {
  const std::vector<float> x{1.00390625f, -2.5f};
  std::vector<bfloat16> old_name(2), new_name(2);
  mixprec::convert<float, bfloat16>(x, old_name);
  kernels::convert(x, new_name);
  CHECK(old_name[0].to_bits() == new_name[0].to_bits());
  CHECK(old_name[1].to_bits() == new_name[1].to_bits());
  std::vector<std::int8_t> q(2);
  mixprec::quantize_int8(x, 10.0f, q);
  CHECK(q == std::vector<std::int8_t>{10, -25});
}
#pragma GCC diagnostic pop
