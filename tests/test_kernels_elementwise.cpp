// Elementwise kernels on every supported target: bit-identical results across targets on dense
// sweeps, every 16-bit pattern, special values, ragged lengths, unaligned starts and in place;
// accuracy against double references; the 16-bit results are the float results rounded once;
// softmax, bias_add and bias_activation against their definitions; error paths; double.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numbers>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <mixprec/kernels/convert.hpp>
#include <mixprec/kernels/elementwise.hpp>

#include "kernel_targets.hpp"

using namespace mixprec;
using kernels::activation;
using mixprec::test::for_each_target;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float qnan = std::numeric_limits<float>::quiet_NaN();
constexpr std::uint32_t canonical_nan = 0x7FC00000u;

constexpr activation all_activations[] = {activation::linear, activation::relu, activation::gelu,
                                          activation::sigmoid, activation::tanh, activation::exp};

template <class T>
std::uint32_t bits(T v) {
  if constexpr (std::is_same_v<T, float>) return std::bit_cast<std::uint32_t>(v);
  else return v.to_bits();
}

template <class T>
std::vector<std::uint32_t> bits_of(const std::vector<T>& values) {
  std::vector<std::uint32_t> out;
  out.reserve(values.size());
  for (const T& v : values) out.push_back(bits(v));
  return out;
}

/// Independent double references (the stable forms are mathematically the same functions).
double sigmoid_reference(double x) { return x < 0 ? std::exp(x) / (1 + std::exp(x)) : 1 / (1 + std::exp(-x)); }
double gelu_two_u(double x) { return 2 * std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x); }
double gelu_reference(double x) {
  if (std::isinf(x)) return x > 0 ? x : -0.0;
  return x / (1 + std::exp(-gelu_two_u(x)));  // = 0.5 x (1 + tanh(u)), without its cancellation
}
double reference(activation a, double x) {
  switch (a) {
    case activation::linear: return x;
    case activation::relu: return x > 0 ? x : 0.0;
    case activation::gelu: return gelu_reference(x);
    case activation::sigmoid: return sigmoid_reference(x);
    case activation::tanh: return std::tanh(x);
    case activation::exp: return std::exp(x);
  }
  return x;
}

/// |got - want| in float ulps of want (subnormal ulp below 2^-126); inf counts as right only
/// when want is beyond FLT_MAX's rounding boundary.
double ulp_error(float got, double want) {
  if (std::fabs(want) >= 0x1.ffffffp127) return std::isinf(got) && (got > 0) == (want > 0) ? 0.0 : 1e30;
  int exponent = 0;
  std::frexp(want, &exponent);
  return std::fabs(static_cast<double>(got) - want) / std::ldexp(1.0, std::max(exponent - 24, -149));
}

/// Every 4099-th float bit pattern (about a million, all binades) and a fine grid over [-20, 20].
std::vector<float> float_sweep() {
  std::vector<float> x;
  for (std::uint64_t b = 0; b < (1ull << 32); b += 4099) x.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(b)));
  for (int i = -200000; i <= 200000; ++i) x.push_back(static_cast<float>(i) * 1e-4f);
  for (float v : {0.0f, -0.0f, inf, -inf, qnan, -qnan, std::bit_cast<float>(0x7F800001u), 88.72283f, 88.72284f, 89.0f,
                  -87.33654f, -103.97208f, -103.97209f, -104.0f, 0.625f, -0.625f, 0.62499994f, 9.0f, -9.1f,
                  std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 0x1p-149f, -0x1p-149f})
    x.push_back(v);
  return x;
}

template <class T>
std::vector<T> all_patterns() {
  std::vector<T> values;
  for (std::uint32_t b = 0; b < (1u << 16); ++b) values.push_back(T::from_bits(static_cast<std::uint16_t>(b)));
  return values;
}

template <class T>
std::vector<float> widen(const std::vector<T>& x) {
  std::vector<float> out(x.size());
  convert<T, float>(x, out);
  return out;
}
template <class T>
std::vector<T> narrow(const std::vector<float>& x) {
  std::vector<T> out(x.size());
  convert<float, T>(x, out);
  return out;
}

template <class T>
std::vector<T> random_values(std::size_t n, std::uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> x(n);
  for (auto& v : x) v = normal(rng);
  if constexpr (std::is_same_v<T, float>) return x;
  else return narrow<T>(x);
}

/// Calls f() on every target and checks that it returns the same bits everywhere.
template <class F>
void check_identical_on_every_target(F&& f) {
  std::map<std::string, std::vector<std::uint32_t>> results;
  for_each_target([&](const std::string& target) { results[target] = f(); });
  const auto& [first_target, expected] = *results.begin();
  for (const auto& [target, got] : results) {
    INFO(target, " against ", first_target);
    REQUIRE(got.size() == expected.size());
    const auto where = std::mismatch(got.begin(), got.end(), expected.begin());
    if (where.first != got.end()) FAIL_CHECK("first difference at element " << (where.first - got.begin()));
  }
}

template <class T>
std::vector<std::uint32_t> activated_bits(activation a, const std::vector<T>& x) {
  std::vector<T> y(x.size());
  kernels::activate<T>(a, x, y);
  return bits_of(y);
}

/// Short spans at unaligned starts, out of place and in place, against the long result.
template <class T>
void check_ragged_and_in_place(activation a, const std::vector<T>& x) {
  std::vector<T> full(x.size());
  kernels::activate<T>(a, x, full);
  for (std::size_t offset = 0; offset < 4; ++offset) {
    for (std::size_t n = 0; n <= 2 * 16 + 1; ++n) {
      std::vector<T> y(n + 1, T(7.0f));
      kernels::activate<T>(a, std::span<const T>(x).subspan(offset, n), std::span<T>(y).first(n));
      std::vector<T> in_place(x.begin() + offset, x.begin() + offset + n + 1);
      kernels::activate<T>(a, std::span<const T>(in_place).first(n), std::span<T>(in_place).first(n));
      for (std::size_t i = 0; i < n; ++i) {
        REQUIRE(bits(y[i]) == bits(full[offset + i]));
        REQUIRE(bits(in_place[i]) == bits(full[offset + i]));
      }
      REQUIRE(bits(y[n]) == bits(T(7.0f)));                // nothing written past the end
      REQUIRE(bits(in_place[n]) == bits(x[offset + n]));
    }
  }
}

}  // namespace

TEST_CASE("activations return the same bits on every target") {
  const auto sweep = float_sweep();
  const auto bf16 = all_patterns<bfloat16>();
  const auto f16 = all_patterns<float16>();
  for (activation a : all_activations) {
    INFO("activation ", static_cast<int>(a));
    check_identical_on_every_target([&] { return activated_bits(a, sweep); });
    check_identical_on_every_target([&] { return activated_bits(a, bf16); });
    check_identical_on_every_target([&] { return activated_bits(a, f16); });
  }
}

TEST_CASE("16-bit activations are the float results rounded once") {
  const auto bf16 = all_patterns<bfloat16>();
  const auto f16 = all_patterns<float16>();
  for_each_target([&](const std::string&) {
    for (activation a : all_activations) {
      INFO("activation ", static_cast<int>(a));
      if (a == activation::linear) continue;  // linear copies bits (checked below)
      std::vector<float> wide = widen(bf16);
      kernels::activate<float>(a, wide, wide);
      CHECK(activated_bits(a, bf16) == bits_of(narrow<bfloat16>(wide)));
      wide = widen(f16);
      kernels::activate<float>(a, wide, wide);
      CHECK(activated_bits(a, f16) == bits_of(narrow<float16>(wide)));
    }
    CHECK(activated_bits(activation::linear, bf16) == bits_of(bf16));
    CHECK(activated_bits(activation::linear, f16) == bits_of(f16));
  });
}

TEST_CASE("ragged lengths, unaligned starts and in place") {
  const auto x = random_values<float>(64, 1, 3.0f);
  const auto xb = random_values<bfloat16>(64, 2, 3.0f);
  const auto xh = random_values<float16>(64, 3, 3.0f);
  for_each_target([&](const std::string&) {
    for (activation a : all_activations) {
      check_ragged_and_in_place(a, x);
      check_ragged_and_in_place(a, xb);
      check_ragged_and_in_place(a, xh);
    }
  });
}

TEST_CASE("accuracy against double references") {
  const auto x = float_sweep();
  std::vector<float> y(x.size());
  // Measured maxima over every 13th float: exp 0.96, tanh 1.52, sigmoid 2.34 ulp; gelu 14 ulp
  // for x >= -3, beyond that about 2.4 ulp per unit of |2u| (the rounding of its argument 2u,
  // magnified by exp).
  const std::map<activation, double> bound{{activation::exp, 1.0}, {activation::tanh, 2.0}, {activation::sigmoid, 2.5}};
  for (activation a : {activation::exp, activation::tanh, activation::sigmoid, activation::gelu, activation::relu}) {
    INFO("activation ", static_cast<int>(a));
    kernels::activate<float>(a, x, y);
    double worst = 0;
    float worst_at = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double want = reference(a, x[i]);
      if (std::isnan(want)) {
        REQUIRE(std::bit_cast<std::uint32_t>(y[i]) == canonical_nan);
        continue;
      }
      const double error = ulp_error(y[i], want);
      double allowed = 0.0;
      if (a == activation::gelu) allowed = x[i] >= -3.0f ? 16.0 : 3.0 * std::fabs(gelu_two_u(x[i])) + 4.0;
      else if (a != activation::relu) allowed = bound.at(a);
      if (error - allowed > worst) {
        worst = error - allowed;
        worst_at = x[i];
      }
    }
    INFO("worst excess at x = ", worst_at);
    CHECK(worst <= 0.0);
  }
}

TEST_CASE("special values") {
  const auto run = [](activation a, std::vector<float> x) {
    kernels::activate<float>(a, x, x);
    return x;
  };
  const float signaling = std::bit_cast<float>(0xFF800001u);
  for_each_target([&](const std::string&) {
    CHECK(run(activation::exp, {inf, -inf, 89.0f, 88.72284f, -104.0f, 0.0f, -0.0f}) ==
          std::vector<float>{inf, 0.0f, inf, inf, 0.0f, 1.0f, 1.0f});
    const float largest = run(activation::exp, {88.72283f})[0];  // just below FLT_MAX
    CHECK(ulp_error(largest, std::exp(static_cast<double>(88.72283f))) <= 1.0);
    const float tiny = run(activation::exp, {-103.0f})[0];
    CHECK(tiny > 0.0f);
    CHECK(tiny < std::numeric_limits<float>::min());  // subnormal, not flushed
    CHECK(run(activation::sigmoid, {-inf, inf, 0.0f, -100.0f, 100.0f}) ==
          std::vector<float>{0.0f, 1.0f, 0.5f, static_cast<float>(std::exp(-100.0)), 1.0f});
    const auto t = run(activation::tanh, {inf, -inf, -0.0f, 0x1p-100f, 20.0f, -20.0f});
    CHECK(t == std::vector<float>{1.0f, -1.0f, 0.0f, 0x1p-100f, 1.0f, -1.0f});
    CHECK(std::signbit(t[2]));
    const auto r = run(activation::relu, {-0.0f, -1.0f, 2.0f, -inf, inf});
    CHECK(bits_of(r) == bits_of(std::vector<float>{0.0f, 0.0f, 2.0f, 0.0f, inf}));
    const auto g = run(activation::gelu, {-inf, inf, -0.0f, 0.0f, -1e30f, 1e30f});
    CHECK(bits_of(g) == bits_of(std::vector<float>{-0.0f, inf, -0.0f, 0.0f, -0.0f, 1e30f}));
    for (activation a : all_activations) {
      const auto n = run(a, {qnan, -qnan, signaling, std::bit_cast<float>(0x7FC12345u)});
      if (a == activation::linear) {
        CHECK(std::bit_cast<std::uint32_t>(n[2]) == 0xFF800001u);  // linear copies
      } else {
        for (float v : n) CHECK(std::bit_cast<std::uint32_t>(v) == canonical_nan);
      }
    }
    std::vector<bfloat16> b{bfloat16(100.0f), bfloat16::from_bits(0xFF81)};
    kernels::activate<bfloat16>(activation::exp, b, b);
    CHECK(b[0].to_bits() == 0x7F80);  // e^100 overflows bfloat16 too
    CHECK(b[1].to_bits() == 0x7FC0);
    std::vector<float16> h{float16(12.0f), float16(-20.0f), float16(-10.0f)};
    kernels::activate<float16>(activation::exp, h, h);
    CHECK(h[0].to_bits() == 0x7C00);                       // e^12 = 162755 > 65504
    CHECK(h[1].to_bits() == float16(static_cast<float>(std::exp(-20.0))).to_bits());  // rounds to +0
    CHECK(h[2].to_bits() == float16(static_cast<float>(std::exp(-10.0))).to_bits());  // subnormal float16
  });
}

namespace {

template <class T>
std::vector<std::uint32_t> softmax_bits(const std::vector<T>& x, std::size_t cols) {
  std::vector<T> y(x.size());
  kernels::softmax_rows<T>(x, y, cols);
  return bits_of(y);
}

}  // namespace

TEST_CASE("softmax_rows") {
  std::vector<std::size_t> widths;
  for (std::size_t c = 1; c <= 40; ++c) widths.push_back(c);
  for (std::size_t c : {255, 2049, 5000}) widths.push_back(c);
  for (std::size_t cols : widths) {
    INFO("cols = ", cols);
    const auto x = random_values<float>(3 * cols, static_cast<std::uint32_t>(cols), 4.0f);
    const auto xb = narrow<bfloat16>(x);
    const auto xh = narrow<float16>(x);
    check_identical_on_every_target([&] { return softmax_bits(x, cols); });
    check_identical_on_every_target([&] { return softmax_bits(xb, cols); });
    check_identical_on_every_target([&] { return softmax_bits(xh, cols); });

    std::vector<float> y(x.size());
    kernels::softmax_rows<float>(x, y, cols);
    for (std::size_t row = 0; row < 3; ++row) {
      const auto in = std::span(x).subspan(row * cols, cols);
      const double largest = *std::max_element(in.begin(), in.end());
      double total = 0;
      for (float v : in) total += std::exp(v - largest);
      double mass = 0;
      for (std::size_t c = 0; c < cols; ++c) {
        const double want = std::exp(in[c] - largest) / total;
        // exp (1 ulp), the division (0.5) and the float sum (relative 2^-24 per level).
        REQUIRE(std::fabs(y[row * cols + c] - want) <= want * 0x1p-24 * (4.0 + std::log2(static_cast<double>(cols)) + 64.0));
        mass += y[row * cols + c];
      }
      CHECK(mass == doctest::Approx(1.0).epsilon(1e-5));
    }
    // 16-bit rows: the float softmax of the widened row, rounded once.
    for_each_target([&](const std::string&) {
      std::vector<float> wide = widen(xb);
      kernels::softmax_rows<float>(wide, wide, cols);
      CHECK(softmax_bits(xb, cols) == bits_of(narrow<bfloat16>(wide)));
      wide = widen(xh);
      kernels::softmax_rows<float>(wide, wide, cols);
      CHECK(softmax_bits(xh, cols) == bits_of(narrow<float16>(wide)));
    });
  }
  for_each_target([&](const std::string&) {
    // Large logits do not overflow; -inf entries get 0; NaN, +inf or all -inf make a NaN row.
    CHECK(softmax_bits<float>({1000.0f, 1000.0f, -inf, -1000.0f, 1000.0f, -inf}, 3) ==
          bits_of(std::vector<float>{0.5f, 0.5f, 0.0f, 0.0f, 1.0f, 0.0f}));
    for (const std::vector<float>& row : {std::vector<float>{1.0f, qnan, 2.0f}, std::vector<float>{1.0f, inf, 2.0f},
                                          std::vector<float>{-inf, -inf, -inf}}) {
      for (std::uint32_t b : softmax_bits(row, 3)) CHECK(b == canonical_nan);
    }
  });
}

TEST_CASE("bias_add and bias_activation equal their definitions") {
  for (std::size_t cols : {1, 3, 8, 17, 33, 100}) {
    INFO("cols = ", cols);
    auto acc = random_values<float>(4 * cols, static_cast<std::uint32_t>(cols), 3.0f);
    acc[1] = qnan;
    acc[2] = -inf;
    const auto bias = random_values<float>(cols, static_cast<std::uint32_t>(cols + 1), 1.0f);
    const auto bias_b = narrow<bfloat16>(bias);
    const auto bias_h = narrow<float16>(bias);
    const auto rows_b = narrow<bfloat16>(acc);
    for (activation a : all_activations) {
      INFO("activation ", static_cast<int>(a));
      check_identical_on_every_target([&] {
        std::vector<bfloat16> y(acc.size());
        kernels::bias_activation<bfloat16>(acc, bias_b, a, y, cols);
        return bits_of(y);
      });
      for_each_target([&](const std::string&) {
        // act(acc + bias) in float, rounded once: against activate<float> on the float sums.
        std::vector<float> z(acc.size());
        const auto wide_bias = widen(bias_h);
        for (std::size_t i = 0; i < z.size(); ++i) z[i] = acc[i] + wide_bias[i % cols];
        std::vector<float> activated(z.size());
        kernels::activate<float>(a, z, activated);
        if (a == activation::linear)  // the sum is an arithmetic result: its NaN is canonical
          for (auto& v : activated) v = std::isnan(v) ? qnan : v;
        std::vector<float16> y(acc.size());
        kernels::bias_activation<float16>(acc, bias_h, a, y, cols);
        CHECK(bits_of(y) == bits_of(narrow<float16>(activated)));
        std::vector<float> no_bias = acc;  // in place on the accumulator
        kernels::bias_activation<float>(no_bias, {}, a, no_bias, cols);
        std::vector<float> direct(acc.size());
        kernels::activate<float>(a, acc, direct);
        if (a == activation::linear)
          for (auto& v : direct) v = std::isnan(v) ? qnan : v;
        CHECK(bits_of(no_bias) == bits_of(direct));
      });
    }
    for_each_target([&](const std::string&) {
      auto rows = rows_b;
      kernels::bias_add<bfloat16>(rows, bias_b);
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const float want = static_cast<float>(rows_b[i]) + static_cast<float>(bias_b[i % cols]);
        REQUIRE(rows[i].to_bits() == (std::isnan(want) ? 0x7FC0 : bfloat16(want).to_bits()));
      }
      auto rows_f = acc;
      kernels::bias_add<float>(rows_f, bias);
      for (std::size_t i = 0; i < rows_f.size(); ++i) {
        const float want = acc[i] + bias[i % cols];
        REQUIRE(bits(rows_f[i]) == (std::isnan(want) ? canonical_nan : bits(want)));
      }
    });
  }
}

TEST_CASE("size errors") {
  std::vector<float> x(6), y(5), z(6);
  CHECK_THROWS_WITH_AS(kernels::activate<float>(activation::relu, x, y),
                       "activate: the input has 6 elements but the output has 5; they must match.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::activate<float>(activation::relu, std::span<const float>(x).first(4),
                                                std::span<float>(x).subspan(1, 4)),
                       "activate: the output overlaps the input without being the same span.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::softmax_rows<float>(x, z, 0), "softmax_rows: cols must be positive, got 0.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::softmax_rows<float>(x, z, 4), "softmax_rows: the size 6 is not a multiple of cols = 4.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::softmax_rows<float>(x, y, 3),
                       "softmax_rows: the input has 6 elements but the output has 5; they must match.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::bias_add<float>(z, std::vector<float>(4)),
                       "bias_add: the rows have 6 elements, which is not a multiple of the bias size 4.",
                       std::invalid_argument);
  CHECK_THROWS_AS(kernels::bias_add<float>(z, std::vector<float>{}), std::invalid_argument);
  kernels::bias_add<float>(std::span<float>{}, std::vector<float>{});  // empty rows, empty bias: nothing to do
  CHECK_THROWS_WITH_AS(kernels::bias_activation<float>(x, std::vector<float>(2), activation::relu, z, 3),
                       "bias_activation: the bias has 2 elements but cols = 3; it must be empty or match.",
                       std::invalid_argument);
  CHECK_THROWS_AS(kernels::bias_activation<float>(x, {}, activation::relu, y, 3), std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::bias_activation<float>(std::span<const float>(x).first(3), {}, activation::relu,
                                                       std::span<float>(x).subspan(2, 3), 3),
                       "bias_activation: the output overlaps the input without being the same span.",
                       std::invalid_argument);
  CHECK_THROWS_AS(kernels::bias_activation<float>(x, {}, activation::relu, z, 0), std::invalid_argument);
  CHECK_THROWS_AS(kernels::bias_activation<float>(x, {}, activation::relu, z, 4), std::invalid_argument);
  kernels::softmax_rows<float>(std::span<const float>{}, std::span<float>{}, 3);  // no rows
}

TEST_CASE("double runs scalar double math") {
  const std::vector<double> x{-3.0, -0.0, 0.5, 2.0, -800.0, 800.0};
  for (activation a : all_activations) {
    std::vector<double> y(x.size());
    kernels::activate<double>(a, x, y);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double want = reference(a, x[i]);
      if (std::isinf(want)) CHECK(y[i] == want);
      else CHECK(y[i] == doctest::Approx(want).epsilon(1e-14));
    }
  }
  std::vector<double> relu{-0.0};
  kernels::activate<double>(activation::relu, relu, relu);
  CHECK_FALSE(std::signbit(relu[0]));
  std::vector<double> s{1.0, 2.0, 3.0, 1000.0, 1000.0, -1000.0};
  kernels::softmax_rows<double>(s, s, 3);
  const double total = std::exp(-2.0) + std::exp(-1.0) + 1.0;
  CHECK(s[0] == doctest::Approx(std::exp(-2.0) / total).epsilon(1e-15));
  CHECK(s[3] == 0.5);
  CHECK(s[5] == 0.0);
  std::vector<double> rows{1.0, 2.0, 3.0, 4.0};
  kernels::bias_add<double>(rows, std::vector<double>{0.5, -0.5});
  CHECK(rows == std::vector<double>{1.5, 1.5, 3.5, 3.5});
  std::vector<double> y(4);
  kernels::bias_activation<double>(std::vector<float>{1.0f, -2.0f, 3.0f, -4.0f}, std::vector<double>{0.5, 0.5},
                                   activation::relu, y, 2);
  CHECK(y == std::vector<double>{1.5, 0.0, 3.5, 0.0});
}
