// Scalar dtypes: concrete conversions, the registry, names, Eigen compatibility, cast<>.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

#include <Eigen/Core>

#include <mixprec/core.hpp>

using namespace mixprec;

namespace {
constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float qnan = std::numeric_limits<float>::quiet_NaN();
}  // namespace

TEST_CASE("float16 rounds to nearest even, keeps subnormals, overflows to inf") {
  CHECK(float16(1.0f).to_bits() == 0x3C00);
  CHECK(float16(-2.0f).to_bits() == 0xC000);
  CHECK(float16(65504.0f).to_bits() == 0x7BFF);       // max
  CHECK(float16(65519.99f).to_bits() == 0x7BFF);      // below the halfway point to 65536
  CHECK(float16(65520.0f).to_bits() == 0x7C00);       // halfway, ties to even: inf
  CHECK(float16(1e9f).to_bits() == 0x7C00);
  CHECK(float16(-inf).to_bits() == 0xFC00);
  CHECK(float16(0x1p-24f).to_bits() == 0x0001);       // smallest subnormal
  CHECK(float16(0x1p-25f).to_bits() == 0x0000);       // halfway to it: ties to even (zero)
  CHECK(float16(0x1.000002p-25f).to_bits() == 0x0001);
  CHECK(float16(0x1.8p-24f).to_bits() == 0x0002);     // 1.5 units: ties to even (2)
  CHECK(float16(0x1p-14f).to_bits() == 0x0400);       // smallest normal
  CHECK(float16(1.0f + 0x1p-11f).to_bits() == 0x3C00);            // tie, even stays
  CHECK(float16(1.0f + 0x1p-10f + 0x1p-11f).to_bits() == 0x3C02); // tie, odd rounds up
  CHECK(float16(-0.0f).to_bits() == 0x8000);
  CHECK(float16(0.0f).to_bits() == 0x0000);
}

TEST_CASE("NaN stays a quiet NaN with its sign and leading payload bits") {
  CHECK(float16(qnan).to_bits() == 0x7E00);
  CHECK(float16(-qnan).to_bits() == 0xFE00);
  const float signaling = std::bit_cast<float>(0x7FA00000u);  // payload 0x200000, quiet bit clear
  CHECK(float16(signaling).to_bits() == (0x7E00 | 0x0100));
  CHECK(bfloat16(signaling).to_bits() == (0x7FC0 | 0x0020));
  CHECK(std::isnan(static_cast<float>(float16::from_bits(0x7C01))));
  CHECK(std::bit_cast<std::uint32_t>(static_cast<float>(float16::from_bits(0xFE00))) == 0xFFC00000u);
  CHECK(float8_e4m3fn(qnan).to_bits() == 0x7F);
  CHECK(float8_e4m3fn(-qnan).to_bits() == 0xFF);
  CHECK(float8_e5m2(qnan).to_bits() == 0x7E);
}

TEST_CASE("bfloat16 rounds to nearest even (Highway's BF16FromF32 truncates)") {
  CHECK(bfloat16(1.0f).to_bits() == 0x3F80);
  CHECK(bfloat16(1.0f + 0x1p-8f).to_bits() == 0x3F80);                // tie, even
  CHECK(bfloat16(1.0f + 0x1p-7f + 0x1p-8f).to_bits() == 0x3F82);      // tie, odd: up
  CHECK(bfloat16(1.0f + 0x1p-8f + 0x1p-23f).to_bits() == 0x3F81);     // above the tie
  CHECK(bfloat16(std::numeric_limits<float>::max()).to_bits() == 0x7F80);  // rounds up to inf
  CHECK(bfloat16(0x1.FEp127f).to_bits() == 0x7F7F);
  CHECK(bfloat16(std::numeric_limits<float>::denorm_min()).to_bits() == 0x0000);  // tie below 2^-133
  CHECK(bfloat16(0x1p-133f).to_bits() == 0x0001);
  CHECK(static_cast<float>(bfloat16::from_bits(0x0001)) == 0x1p-133f);
}

TEST_CASE("float8_e4m3fn: max 448, no infinities, NaN or saturation on overflow") {
  CHECK(float8_e4m3fn(448.0f).to_bits() == 0x7E);
  CHECK(float8_e4m3fn(464.0f).to_bits() == 0x7E);  // tie between 448 and 480: even (448)
  CHECK(float8_e4m3fn(464.01f).to_bits() == 0x7F);  // rounds to 480, which does not exist: NaN
  CHECK(float8_e4m3fn(inf).to_bits() == 0x7F);
  CHECK(float8_e4m3fn(-1e6f).to_bits() == 0xFF);
  CHECK(float8_e4m3fn(1e6f, overflow_mode::saturate).to_bits() == 0x7E);
  CHECK(float8_e4m3fn(-inf, overflow_mode::saturate).to_bits() == 0xFE);
  CHECK(float8_e4m3fn(qnan, overflow_mode::saturate).to_bits() == 0x7F);
  CHECK(float8_e4m3fn(0x1p-9f).to_bits() == 0x01);   // smallest subnormal
  CHECK(float8_e4m3fn(0x1p-10f).to_bits() == 0x00);  // tie to even
  CHECK(float8_e4m3fn(0x1p-6f).to_bits() == 0x08);   // smallest normal
  CHECK(float8_e4m3fn(1.0f).to_bits() == 0x38);
  CHECK(static_cast<float>(float8_e4m3fn::from_bits(0x7E)) == 448.0f);
  CHECK(std::isnan(static_cast<float>(float8_e4m3fn::from_bits(0xFF))));
  CHECK(static_cast<float>(float8_e4m3fn::from_bits(0x78)) == 256.0f);  // the top exponent is finite
}

TEST_CASE("float8_e5m2: max 57344, IEEE infinities") {
  CHECK(float8_e5m2(57344.0f).to_bits() == 0x7B);
  CHECK(float8_e5m2(61439.0f).to_bits() == 0x7B);
  CHECK(float8_e5m2(61440.0f).to_bits() == 0x7C);  // tie: even is 65536, beyond max: inf
  CHECK(float8_e5m2(61440.0f, overflow_mode::saturate).to_bits() == 0x7B);
  CHECK(float8_e5m2(-inf).to_bits() == 0xFC);
  CHECK(float8_e5m2(0x1p-16f).to_bits() == 0x01);
  CHECK(static_cast<float>(float8_e5m2::from_bits(0x7C)) == inf);
  CHECK(float8_e5m2(1.0f).to_bits() == 0x3C);
}

TEST_CASE("conversion from double rounds once (no double rounding through float)") {
  const double x = 1.0 + 0x1p-11 + 0x1p-40;  // just above the float16 tie; float(x) sits exactly on it
  CHECK(float16(x).to_bits() == 0x3C01);
  CHECK(float16(static_cast<float>(x)).to_bits() == 0x3C00);
  CHECK(bfloat16(1.0 + 0x1p-8 + 0x1p-30).to_bits() == 0x3F81);
  CHECK(float16(1e300).to_bits() == 0x7C00);
  CHECK(float16(1e-300).to_bits() == 0x0000);
  CHECK(float16(-1e-300).to_bits() == 0x8000);
  CHECK(float8_e4m3fn(std::numeric_limits<double>::infinity(), overflow_mode::saturate).to_bits() == 0x7E);
  CHECK(float16(std::numeric_limits<double>::quiet_NaN()).to_bits() == 0x7E00);
}

TEST_CASE("arithmetic rounds once in the same dtype; comparisons are IEEE") {
  CHECK((float16(1.0f) + float16(2.0f)).to_bits() == float16(3.0f).to_bits());
  CHECK((bfloat16(1.0f) + bfloat16(0x1p-9f)) == bfloat16(1.0f));  // below bfloat16 precision
  CHECK((-float16(0.0f)).to_bits() == 0x8000);
  CHECK(float16(0.0f) == -float16(0.0f));
  CHECK_FALSE(float16(qnan) == float16(qnan));
  CHECK(float16(1.0f) < float16(2.0f));
  float16 accumulator(1.0f);
  accumulator *= float16(4.0f);
  CHECK(static_cast<float>(accumulator) == 4.0f);
  CHECK(float16(3).to_bits() == float16(3.0f).to_bits());
}

TEST_CASE("layout and Eigen bit compatibility") {
  static_assert(sizeof(float16) == sizeof(Eigen::half));
  static_assert(sizeof(bfloat16) == sizeof(Eigen::bfloat16));
  static_assert(std::is_trivially_copyable_v<float16> && std::is_standard_layout_v<float16>);
  static_assert(alignof(float16) == 2 && alignof(float8_e4m3fn) == 1);
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto h = std::bit_cast<Eigen::half>(static_cast<std::uint16_t>(bits));
    const auto b = std::bit_cast<Eigen::bfloat16>(static_cast<std::uint16_t>(bits));
    const float ours_h = static_cast<float>(float16::from_bits(static_cast<std::uint16_t>(bits)));
    const float ours_b = static_cast<float>(bfloat16::from_bits(static_cast<std::uint16_t>(bits)));
    if (std::isnan(ours_h)) {
      REQUIRE(std::isnan(static_cast<float>(h)));
    } else {
      REQUIRE(std::bit_cast<std::uint32_t>(ours_h) == std::bit_cast<std::uint32_t>(static_cast<float>(h)));
      // Eigen's float -> half also rounds to nearest even: the two agree on every value.
      REQUIRE(std::bit_cast<std::uint16_t>(Eigen::half(ours_h)) == float16(ours_h).to_bits());
    }
    if (!std::isnan(ours_b)) {
      REQUIRE(std::bit_cast<std::uint32_t>(ours_b) == std::bit_cast<std::uint32_t>(static_cast<float>(b)));
    }
  }
  // Eigen's float -> bfloat16 rounds to nearest even too; compare on values between bfloat16s.
  for (std::uint32_t bits = 0; bits < 0x7F800000u; bits += 0x3F1) {
    const float x = std::bit_cast<float>(bits);
    REQUIRE(std::bit_cast<std::uint16_t>(Eigen::bfloat16(x)) == bfloat16(x).to_bits());
  }
}

TEST_CASE("dtype registry: Keras names, floating flags, bit widths") {
  static_assert(dtype_name_v<float16> == "float16");
  static_assert(dtype_name_v<bfloat16> == "bfloat16");
  static_assert(dtype_name_v<float> == "float32");
  static_assert(dtype_name_v<double> == "float64");
  static_assert(dtype_name_v<float8_e4m3fn> == "float8_e4m3fn");
  static_assert(dtype_name_v<float8_e5m2> == "float8_e5m2");
  static_assert(dtype_name_v<std::int8_t> == "int8" && dtype_name_v<std::uint64_t> == "uint64");
  static_assert(dtype_name_v<bool> == "bool");
  static_assert(dtype_name_v<std::complex<float>> == "complex64" && dtype_name_v<complex128> == "complex128");
  static_assert(FloatingDType<float16> && FloatingDType<double> && FloatingDType<float8_e4m3fn>);
  static_assert(!FloatingDType<int> && !FloatingDType<bool> && !FloatingDType<complex64>);
  static_assert(DType<std::uint16_t> && !DType<long double> && !DType<char> && !DType<float*>);
  static_assert(dtype_traits<bfloat16>::bits == 16 && dtype_traits<float8_e5m2>::bits == 8);
  static_assert(dtype_traits<complex128>::bits == 128 && dtype_traits<bool>::bits == 1);
  static_assert(dtype_count == 17);

  for (std::size_t i = 0; i < dtype_count; ++i) {
    CHECK(find_dtype(dtype_names[i]) == i);
    const std::string_view name = with_dtype_at(i, [](auto type) { return dtype_name_v<typename decltype(type)::type>; });
    CHECK(name == dtype_names[i]);
  }
  CHECK_FALSE(find_dtype("float"));
  CHECK_FALSE(find_dtype("string"));
  CHECK_FALSE(find_dtype(""));
  CHECK_FALSE(find_dtype("Float32"));
}

TEST_CASE("cast<To>: exact widening, one rounding when narrowing") {
  static_assert(cast<float>(cast<bfloat16>(1.5f)) == 1.5f);
  static_assert(cast<float16>(cast<bfloat16>(3.0f)).to_bits() == 0x4200);
  static_assert(cast<int>(cast<float16>(-2.75f)) == -2);
  static_assert(cast<float16>(1.0 + 0x1p-11 + 0x1p-40).to_bits() == 0x3C01);
  static_assert(cast<float8_e4m3fn>(std::int64_t{3}).to_bits() == 0x44);
  CHECK(cast<double>(float16::from_bits(0x0001)) == 0x1p-24);
  CHECK(cast<bfloat16>(float16(65504.0f)).to_bits() == bfloat16(65504.0f).to_bits());
}
