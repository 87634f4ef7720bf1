// Elementwise kernels on every supported target: bit-identical results across targets on dense
// sweeps, every 16-bit pattern, special values, ragged lengths, unaligned starts and in place;
// accuracy against double references; the 16-bit results are the float results rounded once;
// softmax, bias_add and bias_activation against their definitions; the backward steps of the
// activations and of softmax against double derivatives (themselves checked against central
// differences); error paths; double.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numbers>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
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

constexpr activation all_activations[] = {activation::linear,  activation::relu, activation::gelu,
                                          activation::gelu_approximate, activation::sigmoid, activation::tanh,
                                          activation::exponential};

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
double gelu_reference(double x) {
  if (std::isinf(x)) return x > 0 ? x : -0.0;
  return 0.5 * x * std::erfc(-x / std::sqrt(2.0));  // x Phi(x)
}
double gelu_two_u(double x) { return 2 * std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x); }
double gelu_approximate_reference(double x) {
  if (std::isinf(x)) return x > 0 ? x : -0.0;
  return x / (1 + std::exp(-gelu_two_u(x)));  // = 0.5 x (1 + tanh(u)), without its cancellation
}
double reference(activation a, double x) {
  switch (a) {
    case activation::linear: return x;
    case activation::relu: return x > 0 ? x : 0.0;
    case activation::gelu: return gelu_reference(x);
    case activation::gelu_approximate: return gelu_approximate_reference(x);
    case activation::sigmoid: return sigmoid_reference(x);
    case activation::tanh: return std::tanh(x);
    case activation::exponential: return std::exp(x);
    case activation::softmax: break;  // a row operation, not elementwise
  }
  return x;
}

/// a'(x) in double, as the sum of its terms, whose magnitudes bound the rounding error of any
/// float evaluation (where they cancel, near the minimum of gelu, the derivative has no
/// relative accuracy to keep). For relu and linear: 1 (they select).
struct derivative_terms {
  double first = 0, second = 0;
  double value() const { return first + second; }
  double scale() const { return std::fabs(first) + std::fabs(second); }
};
derivative_terms derivative_reference(activation a, double x) {
  switch (a) {
    case activation::linear:
    case activation::relu: return {1.0, 0.0};
    case activation::gelu: {
      if (std::isinf(x)) return {x > 0 ? 1.0 : 0.0, 0.0};
      const double density = std::exp(-x * x / 2) / std::sqrt(2 * std::numbers::pi);
      return {0.5 * std::erfc(-x / std::sqrt(2.0)), x * density};  // Phi(x) + x phi(x)
    }
    case activation::gelu_approximate: {
      // d/dx of 0.5 x (1 + tanh(u)): 0.5 (1 + tanh(u)) + 0.5 x u' / cosh(u)^2.
      if (std::isinf(x)) return {x > 0 ? 1.0 : 0.0, 0.0};
      const double u = gelu_two_u(x) / 2;
      const double du = std::sqrt(2 / std::numbers::pi) * (1 + 3 * 0.044715 * x * x);
      return {sigmoid_reference(2 * u), 0.5 * x * du / (std::cosh(u) * std::cosh(u))};
    }
    case activation::sigmoid: return {sigmoid_reference(x) * sigmoid_reference(-x), 0.0};
    case activation::tanh: return {1 / (std::cosh(x) * std::cosh(x)), 0.0};
    case activation::exponential: return {std::exp(x), 0.0};
    case activation::softmax: break;  // a row operation, not elementwise
  }
  return {};
}

/// The float ulp at magnitude |v| (the subnormal ulp below 2^-126).
double float_ulp(double v) {
  int exponent = 0;
  std::frexp(v, &exponent);
  return std::ldexp(1.0, std::max(exponent - 24, -149));
}

/// |got - want| in float ulps of want; inf counts as right only when want is beyond FLT_MAX's
/// rounding boundary.
double ulp_error(float got, double want) {
  if (std::fabs(want) >= 0x1.ffffffp127) return std::isinf(got) && (got > 0) == (want > 0) ? 0.0 : 1e30;
  return std::fabs(static_cast<double>(got) - want) / float_ulp(want);
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
  kernels::convert<T, float>(x, out);
  return out;
}
template <class T>
std::vector<T> narrow(const std::vector<float>& x) {
  std::vector<T> out(x.size());
  kernels::convert<float, T>(x, out);
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
  // References, not bindings: doctest's INFO captures them in a lambda.
  const std::string& first_target = results.begin()->first;
  const auto& expected = results.begin()->second;
  for (const auto& result : results) {
    const std::string& target = result.first;
    const auto& got = result.second;
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
  // Measured maxima over every 13th float: exp 0.96, tanh 1.52, sigmoid 2.34, gelu 5.9 ulp
  // (everywhere, the negative tail included); gelu_approximate 14 ulp for x >= -3, beyond that
  // about 2.4 ulp per unit of |2u| (the rounding of its argument 2u, magnified by exp).
  const std::map<activation, double> bound{
      {activation::exponential, 1.0}, {activation::tanh, 2.0}, {activation::sigmoid, 2.5}, {activation::gelu, 7.0}};
  for (activation a : {activation::exponential, activation::tanh, activation::sigmoid, activation::gelu,
                       activation::gelu_approximate, activation::relu}) {
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
      if (a == activation::gelu_approximate) allowed = x[i] >= -3.0f ? 16.0 : 3.0 * std::fabs(gelu_two_u(x[i])) + 4.0;
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
    CHECK(run(activation::exponential, {inf, -inf, 89.0f, 88.72284f, -104.0f, 0.0f, -0.0f}) ==
          std::vector<float>{inf, 0.0f, inf, inf, 0.0f, 1.0f, 1.0f});
    const float largest = run(activation::exponential, {88.72283f})[0];  // just below FLT_MAX
    CHECK(ulp_error(largest, std::exp(static_cast<double>(88.72283f))) <= 1.0);
    const float tiny = run(activation::exponential, {-103.0f})[0];
    CHECK(tiny > 0.0f);
    CHECK(tiny < std::numeric_limits<float>::min());  // subnormal, not flushed
    CHECK(run(activation::sigmoid, {-inf, inf, 0.0f, -100.0f, 100.0f}) ==
          std::vector<float>{0.0f, 1.0f, 0.5f, static_cast<float>(std::exp(-100.0)), 1.0f});
    const auto t = run(activation::tanh, {inf, -inf, -0.0f, 0x1p-100f, 20.0f, -20.0f});
    CHECK(t == std::vector<float>{1.0f, -1.0f, 0.0f, 0x1p-100f, 1.0f, -1.0f});
    CHECK(std::signbit(t[2]));
    const auto r = run(activation::relu, {-0.0f, -1.0f, 2.0f, -inf, inf});
    CHECK(bits_of(r) == bits_of(std::vector<float>{0.0f, 0.0f, 2.0f, 0.0f, inf}));
    for (activation gelu : {activation::gelu, activation::gelu_approximate}) {
      const auto g = run(gelu, {-inf, inf, -0.0f, 0.0f, -1e30f, 1e30f, -20.0f});
      CHECK(bits_of(g) == bits_of(std::vector<float>{-0.0f, inf, -0.0f, 0.0f, -0.0f, 1e30f, -0.0f}));
    }
    // The exact gelu's negative tail keeps its relative accuracy down to the subnormals:
    // gelu(-13) = -8.0e-38 is normal, gelu(-13.5) = -1.1e-40 subnormal, gelu(-14.5) rounds to -0.
    const auto tail = run(activation::gelu, {-10.0f, -13.0f, -13.5f, -14.5f});
    for (std::size_t i = 0; i < tail.size(); ++i) {
      const double want = gelu_reference(std::vector<double>{-10.0, -13.0, -13.5, -14.5}[i]);
      CHECK(ulp_error(tail[i], want) <= 7.0);
    }
    CHECK(tail[2] < 0.0f);
    CHECK(tail[2] > -std::numeric_limits<float>::min());
    CHECK(bits(tail[3]) == bits(-0.0f));
    for (activation a : all_activations) {
      const auto n = run(a, {qnan, -qnan, signaling, std::bit_cast<float>(0x7FC12345u)});
      if (a == activation::linear) {
        CHECK(std::bit_cast<std::uint32_t>(n[2]) == 0xFF800001u);  // linear copies
      } else {
        for (float v : n) CHECK(std::bit_cast<std::uint32_t>(v) == canonical_nan);
      }
    }
    std::vector<bfloat16> b{bfloat16(100.0f), bfloat16::from_bits(0xFF81)};
    kernels::activate<bfloat16>(activation::exponential, b, b);
    CHECK(b[0].to_bits() == 0x7F80);  // e^100 overflows bfloat16 too
    CHECK(b[1].to_bits() == 0x7FC0);
    std::vector<float16> h{float16(12.0f), float16(-20.0f), float16(-10.0f)};
    kernels::activate<float16>(activation::exponential, h, h);
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
  // Overlaps across dtypes are compared in bytes: a 16-bit y over acc's memory would overwrite
  // accumulators not yet read; a bias inside the rows would change as the rows are written.
  std::vector<float> acc(8, 1.0f);
  const std::span<bfloat16> y_over_acc(reinterpret_cast<bfloat16*>(acc.data() + 4), 8);  // never read
  CHECK_THROWS_WITH_AS(kernels::bias_activation<bfloat16>(acc, {}, activation::relu, y_over_acc, 4),
                       "bias_activation: acc and y overlap; they must lie apart.", std::invalid_argument);
  std::vector<float> rows{1, 2, 3, 4, 5, 6};
  CHECK_THROWS_WITH_AS(kernels::bias_add<float>(rows, std::span<const float>(rows).first(3)),
                       "bias_add: rows and bias overlap; they must lie apart.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::bias_activation<float>(std::span<const float>(rows), std::span<const float>(rows).last(3),
                                                       activation::relu, std::span<float>(rows), 3),
                       "bias_activation: bias and y overlap; they must lie apart.", std::invalid_argument);
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

// ---------------------------------------------------------------------------------------------
// Backward steps.

namespace {

template <class T>
std::vector<std::uint32_t> backward_bits(activation a, const std::vector<T>& x, const std::vector<T>& dy) {
  std::vector<T> dx(x.size());
  kernels::activation_backward<T>(a, x, dy, dx);
  return bits_of(dx);
}

/// Incoming gradients for a sweep: normal values of both signs over many binades, with zeros,
/// infinities and NaN among them.
std::vector<float> gradient_sweep(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> binade(-20, 20);
  std::vector<float> dy(n);
  for (auto& v : dy) v = std::ldexp(normal(rng), binade(rng));
  const float specials[] = {0.0f, -0.0f, inf, -inf, qnan, 1.0f, -1.0f};
  for (std::size_t i = 0; i < n; i += 97) dy[i] = specials[(i / 97) % std::size(specials)];
  return dy;
}

/// f'(x) by central differences of the double reference f, and a bound on their rounding
/// error (eps |f| / h). h shrinks with |x| like the scale on which the Gaussian tails vary, so
/// that the truncation error h^2 f''' / 6 stays below 1e-8 of f' on [-12, 12].
struct difference {
  double slope, rounding;
};
difference central_difference(activation a, double x) {
  const double h = 1e-5 / std::max(1.0, std::fabs(x));
  return {(reference(a, x + h) - reference(a, x - h)) / (2 * h),
          4 * std::numeric_limits<double>::epsilon() * std::fabs(reference(a, x)) / h};
}

/// Short spans at unaligned starts, out of place and in place (dx = dy), against the long result.
template <class T>
void check_backward_ragged_and_in_place(activation a, const std::vector<T>& x, const std::vector<T>& dy) {
  std::vector<T> full(x.size());
  kernels::activation_backward<T>(a, x, dy, full);
  for (std::size_t offset = 0; offset < 4; ++offset) {
    for (std::size_t n = 0; n <= 2 * 16 + 1; ++n) {
      const auto xs = std::span<const T>(x).subspan(offset, n);
      std::vector<T> dx(n + 1, T(7.0f));
      kernels::activation_backward<T>(a, xs, std::span<const T>(dy).subspan(offset, n), std::span<T>(dx).first(n));
      std::vector<T> in_place(dy.begin() + offset, dy.begin() + offset + n + 1);
      kernels::activation_backward<T>(a, xs, std::span<const T>(in_place).first(n), std::span<T>(in_place).first(n));
      for (std::size_t i = 0; i < n; ++i) {
        REQUIRE(bits(dx[i]) == bits(full[offset + i]));
        REQUIRE(bits(in_place[i]) == bits(full[offset + i]));
      }
      REQUIRE(bits(dx[n]) == bits(T(7.0f)));  // nothing written past the end
      REQUIRE(bits(in_place[n]) == bits(dy[offset + n]));
    }
  }
}

}  // namespace

TEST_CASE("activation_backward returns the same bits on every target") {
  const auto x = float_sweep();
  const auto dy = gradient_sweep(x.size(), 11);
  const auto bf16 = all_patterns<bfloat16>();
  const auto f16 = all_patterns<float16>();
  const auto dy_bf16 = narrow<bfloat16>(gradient_sweep(bf16.size(), 12));
  const auto dy_f16 = narrow<float16>(gradient_sweep(f16.size(), 13));
  for (activation a : all_activations) {
    INFO("activation ", static_cast<int>(a));
    check_identical_on_every_target([&] { return backward_bits(a, x, dy); });
    check_identical_on_every_target([&] { return backward_bits(a, bf16, dy_bf16); });
    check_identical_on_every_target([&] { return backward_bits(a, f16, dy_f16); });
  }
}

TEST_CASE("16-bit activation_backward is the float result rounded once") {
  const auto bf16 = all_patterns<bfloat16>();
  const auto f16 = all_patterns<float16>();
  const auto dy_bf16 = narrow<bfloat16>(gradient_sweep(bf16.size(), 21));
  const auto dy_f16 = narrow<float16>(gradient_sweep(f16.size(), 22));
  for_each_target([&](const std::string&) {
    for (activation a : all_activations) {
      INFO("activation ", static_cast<int>(a));
      if (a == activation::linear) {  // copies dy's bits
        CHECK(backward_bits(a, bf16, dy_bf16) == bits_of(dy_bf16));
        CHECK(backward_bits(a, f16, dy_f16) == bits_of(dy_f16));
        continue;
      }
      std::vector<float> wide(bf16.size());
      kernels::activation_backward<float>(a, widen(bf16), widen(dy_bf16), wide);
      CHECK(backward_bits(a, bf16, dy_bf16) == bits_of(narrow<bfloat16>(wide)));
      wide.resize(f16.size());
      kernels::activation_backward<float>(a, widen(f16), widen(dy_f16), wide);
      CHECK(backward_bits(a, f16, dy_f16) == bits_of(narrow<float16>(wide)));
    }
  });
}

TEST_CASE("activation_backward: ragged lengths, unaligned starts and in place") {
  const auto x = random_values<float>(64, 31, 3.0f);
  const auto dy = random_values<float>(64, 32, 1.0f);
  const auto xb = random_values<bfloat16>(64, 33, 3.0f);
  const auto dyb = random_values<bfloat16>(64, 34, 1.0f);
  const auto xh = random_values<float16>(64, 35, 3.0f);
  const auto dyh = random_values<float16>(64, 36, 1.0f);
  for_each_target([&](const std::string&) {
    for (activation a : all_activations) {
      INFO("activation ", static_cast<int>(a));
      check_backward_ragged_and_in_place(a, x, dy);
      check_backward_ragged_and_in_place(a, xb, dyb);
      check_backward_ragged_and_in_place(a, xh, dyh);
    }
  });
}

TEST_CASE("the double derivatives (the test references and the double kernel) agree with central differences") {
  for (activation a : all_activations) {
    INFO("activation ", static_cast<int>(a));
    for (int i = -1200; i <= 1200; ++i) {
      const double x = i / 100.0 + 0.003;  // off the kinks of relu
      const auto [want, rounding] = central_difference(a, x);
      const auto terms = derivative_reference(a, x);
      const double slope = a == activation::relu ? (x > 0 ? 1.0 : 0.0) : terms.value();
      INFO("x = ", x);
      REQUIRE(std::fabs(slope - want) <= 1e-7 * std::max(terms.scale(), std::fabs(want)) + rounding);
      // The double kernel, on a few points of the same grid.
      if (i % 10 == 0) {
        std::vector<double> dx(1);
        kernels::activation_backward<double>(a, std::vector<double>{x}, std::vector<double>{1.5}, dx);
        REQUIRE(dx[0] == doctest::Approx(1.5 * slope).epsilon(1e-13).scale(terms.scale()));
      }
    }
  }
}

TEST_CASE("activation_backward accuracy against double derivatives") {
  const auto x = float_sweep();
  const std::vector<float> ones(x.size(), 1.0f);
  std::vector<float> dx(x.size());
  // With dy = 1, dx is the float derivative itself. Its error, in ulps of the sum of the
  // magnitudes of its terms (the derivative itself where there is one term). Measured maxima
  // over every 13th float: exp 0.96, sigmoid' 4.1, tanh' 4.1, gelu' 6.1, gelu_approximate'
  // 12.8 for x >= -3 and about 2.7 ulp per unit of |2u| below (like its function); where
  // e^-|2u| is subnormal (x < -10.2, |derivative| < 1e-36) only the absolute error stays small.
  const std::map<activation, double> bound{{activation::exponential, 1.0},
                                           {activation::sigmoid, 4.5},
                                           {activation::tanh, 4.5},
                                           {activation::gelu, 7.0},
                                           {activation::gelu_approximate, 16.0}};
  for (const auto& entry : bound) {
    const auto& a = std::get<0>(entry);  // not a binding: lambdas (doctest's INFO) capture it
    const auto& allowed_ulps = std::get<1>(entry);
    INFO("activation ", static_cast<int>(a));
    kernels::activation_backward<float>(a, x, ones, dx);
    double worst = 0;
    float worst_at = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const auto terms = derivative_reference(a, x[i]);
      if (std::isnan(x[i])) {
        REQUIRE(std::bit_cast<std::uint32_t>(dx[i]) == canonical_nan);
        continue;
      }
      if (std::fabs(terms.scale()) >= 0x1.ffffffp127) {  // e^x beyond FLT_MAX
        REQUIRE(dx[i] == inf);
        continue;
      }
      double allowed = allowed_ulps;
      if (a == activation::gelu_approximate && x[i] < -3.0f) allowed = 3.0 * std::fabs(gelu_two_u(x[i])) + 8.0;
      const double error = std::fabs(dx[i] - terms.value());
      double excess = error / float_ulp(terms.scale()) - allowed;
      if (a == activation::gelu_approximate && error <= 0x1p-138) excess = 0;  // the subnormal e
      if (excess > worst) {
        worst = excess;
        worst_at = x[i];
      }
    }
    INFO("worst excess at x = ", worst_at);
    CHECK(worst <= 0.0);
    // Any other dy: the float derivative times dy, rounded once.
    const auto dy = gradient_sweep(x.size(), 41);
    std::vector<float> scaled(x.size());
    kernels::activation_backward<float>(a, x, dy, scaled);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float want = dy[i] * dx[i];
      REQUIRE(bits(scaled[i]) == (std::isnan(want) ? canonical_nan : bits(want)));
    }
  }
}

TEST_CASE("activation_backward special values") {
  const auto run = [](activation a, std::vector<float> x, std::vector<float> dy) {
    kernels::activation_backward<float>(a, x, dy, dy);
    return dy;
  };
  const float signaling = std::bit_cast<float>(0xFF800001u);
  for_each_target([&](const std::string&) {
    // relu selects: dy where x > 0, else +0 (relu'(0) = 0, NaN x gives 0, dy there is not used).
    CHECK(bits_of(run(activation::relu, {-0.0f, 0.0f, qnan, -1.0f, 2.0f, inf, -inf, -1.0f, 0x1p-149f},
                      {5.0f, 5.0f, 5.0f, -5.0f, -5.0f, 5.0f, 5.0f, qnan, 3.0f})) ==
          bits_of(std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f, -5.0f, 5.0f, 0.0f, 0.0f, 3.0f}));
    CHECK(std::bit_cast<std::uint32_t>(run(activation::relu, {1.0f}, {signaling})[0]) == canonical_nan);
    // linear copies dy, NaN payloads included.
    CHECK(std::bit_cast<std::uint32_t>(run(activation::linear, {qnan}, {signaling})[0]) == 0xFF800001u);
    // The limits at +-inf, the values at 0.
    const std::vector<float> ends{-inf, inf, 0.0f, -0.0f, -1e30f, 1e30f};
    const std::vector<float> ones(ends.size(), 1.0f);
    CHECK(run(activation::gelu, ends, ones) == std::vector<float>{0.0f, 1.0f, 0.5f, 0.5f, 0.0f, 1.0f});
    CHECK(run(activation::gelu_approximate, ends, ones) == std::vector<float>{0.0f, 1.0f, 0.5f, 0.5f, 0.0f, 1.0f});
    CHECK(run(activation::sigmoid, ends, ones) == std::vector<float>{0.0f, 0.0f, 0.25f, 0.25f, 0.0f, 0.0f});
    CHECK(run(activation::tanh, ends, ones) == std::vector<float>{0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f});
    CHECK(run(activation::exponential, {-inf, 0.0f, -0.0f, -1e30f}, {1.0f, 1.0f, 1.0f, 1.0f}) ==
          std::vector<float>{0.0f, 1.0f, 1.0f, 0.0f});
    CHECK(run(activation::exponential, {89.0f, inf}, {1e-30f, 2.0f}) == std::vector<float>{inf, inf});  // e^x overflows first
    // gelu' is tiny and negative in the tail: -x phi(x) dominates.
    const float tail = run(activation::gelu, {-12.0f}, {1.0f})[0];
    CHECK(ulp_error(tail, derivative_reference(activation::gelu, -12.0).value()) <= 7.0);
    CHECK(tail < 0.0f);
    // NaN x or dy give NaN, except for relu and linear (above); so does 0 * inf.
    for (activation a : {activation::gelu, activation::gelu_approximate, activation::sigmoid, activation::tanh,
                         activation::exponential}) {
      INFO("activation ", static_cast<int>(a));
      const auto n = run(a, {qnan, signaling, 1.0f, -1.0f, 0.5f}, {1.0f, 1.0f, qnan, signaling, inf * 0.0f});
      for (float v : n) CHECK(std::bit_cast<std::uint32_t>(v) == canonical_nan);
    }
    CHECK(std::bit_cast<std::uint32_t>(run(activation::exponential, {100.0f}, {0.0f})[0]) == canonical_nan);  // 0 * inf
    CHECK(std::bit_cast<std::uint32_t>(run(activation::sigmoid, {0.0f}, {inf})[0]) == 0x7F800000u);
  });
}

namespace {

template <class T>
std::vector<std::uint32_t> softmax_backward_bits(const std::vector<T>& y, const std::vector<T>& dy, std::size_t cols) {
  std::vector<T> dx(y.size());
  kernels::softmax_rows_backward<T>(y, dy, dx, cols);
  return bits_of(dx);
}

}  // namespace

TEST_CASE("softmax_rows_backward") {
  std::vector<std::size_t> widths;
  for (std::size_t c = 1; c <= 40; ++c) widths.push_back(c);
  for (std::size_t c : {255, 2049, 5000}) widths.push_back(c);
  for (std::size_t cols : widths) {
    INFO("cols = ", cols);
    std::vector<float> y(3 * cols);
    kernels::softmax_rows<float>(random_values<float>(3 * cols, static_cast<std::uint32_t>(cols), 3.0f), y, cols);
    const auto dy = random_values<float>(3 * cols, static_cast<std::uint32_t>(cols + 100), 1.0f);
    const auto yb = narrow<bfloat16>(y), dyb = narrow<bfloat16>(dy);
    const auto yh = narrow<float16>(y), dyh = narrow<float16>(dy);
    check_identical_on_every_target([&] { return softmax_backward_bits(y, dy, cols); });
    check_identical_on_every_target([&] { return softmax_backward_bits(yb, dyb, cols); });
    check_identical_on_every_target([&] { return softmax_backward_bits(yh, dyh, cols); });

    std::vector<float> dx(y.size());
    kernels::softmax_rows_backward<float>(y, dy, dx, cols);
    for (std::size_t row = 0; row < 3; ++row) {
      double weighted = 0, magnitude = 0;
      for (std::size_t c = row * cols; c < (row + 1) * cols; ++c) {
        weighted += static_cast<double>(dy[c]) * y[c];
        magnitude += std::fabs(static_cast<double>(dy[c]) * y[c]);
      }
      // The float sum: each product (2^-24 relative) and the pairwise additions (2^-24 per
      // level); then one subtraction and one product, each rounded.
      const double sum_error = magnitude * 0x1p-24 * (2.0 + std::log2(static_cast<double>(cols)) + 64.0);
      for (std::size_t c = row * cols; c < (row + 1) * cols; ++c) {
        const double want = y[c] * (dy[c] - weighted);
        const double allowed = y[c] * sum_error + std::fabs(want) * 0x1p-23 + y[c] * std::fabs(dy[c] - weighted) * 0x1p-24;
        REQUIRE(std::fabs(dx[c] - want) <= allowed);
      }
    }
    // In place over dy gives the same bits.
    auto in_place = dy;
    kernels::softmax_rows_backward<float>(y, in_place, in_place, cols);
    CHECK(bits_of(in_place) == bits_of(dx));
    // 16-bit rows: the float result on the widened rows, rounded once.
    for_each_target([&](const std::string&) {
      std::vector<float> wide(y.size());
      kernels::softmax_rows_backward<float>(widen(yb), widen(dyb), wide, cols);
      CHECK(softmax_backward_bits(yb, dyb, cols) == bits_of(narrow<bfloat16>(wide)));
      kernels::softmax_rows_backward<float>(widen(yh), widen(dyh), wide, cols);
      CHECK(softmax_backward_bits(yh, dyh, cols) == bits_of(narrow<float16>(wide)));
    });
  }
  for_each_target([&](const std::string&) {
    // y one-hot: dx = 0 everywhere (the sum is dy of the hot class). A NaN in y or dy makes
    // its row NaN.
    CHECK(softmax_backward_bits<float>({0.0f, 1.0f, 0.0f}, {3.0f, -2.0f, 7.0f}, 3) ==
          bits_of(std::vector<float>{0.0f, 0.0f, 0.0f}));
    const auto nan_rows =
        softmax_backward_bits<float>({0.5f, 0.5f, 0.2f, 0.8f, 0.3f, 0.7f}, {1.0f, qnan, 1.0f, 2.0f, 1.0f, 2.0f}, 2);
    CHECK(std::vector<std::uint32_t>(nan_rows.begin(), nan_rows.begin() + 2) ==
          std::vector<std::uint32_t>{canonical_nan, canonical_nan});
    const auto other_rows = softmax_backward_bits<float>({0.2f, 0.8f, 0.3f, 0.7f}, {1.0f, 2.0f, 1.0f, 2.0f}, 2);
    CHECK(std::vector<std::uint32_t>(nan_rows.begin() + 2, nan_rows.end()) == other_rows);  // rows stay apart
    for (std::uint32_t b : softmax_backward_bits<float>({0.5f, qnan}, {1.0f, 2.0f}, 2)) CHECK(b == canonical_nan);
  });
}

TEST_CASE("softmax_rows_backward is the gradient of softmax_rows (central differences)") {
  // L(x) = sum_c dy_c softmax(x)_c; dL/dx_j = (y (dy - dot(dy, y)))_j, in double.
  const std::vector<double> x{0.3, -1.2, 2.0, 0.7, -0.4, 1.1};
  const std::vector<double> dy{1.0, -0.5, 0.25, 2.0, -1.5, 0.75};
  const std::size_t cols = 3;
  std::vector<double> y(x.size()), dx(x.size());
  kernels::softmax_rows<double>(x, y, cols);
  kernels::softmax_rows_backward<double>(y, dy, dx, cols);
  const auto loss = [&](std::vector<double> at) {
    std::vector<double> p(at.size());
    kernels::softmax_rows<double>(at, p, cols);
    double total = 0;
    for (std::size_t i = 0; i < p.size(); ++i) total += dy[i] * p[i];
    return total;
  };
  for (std::size_t j = 0; j < x.size(); ++j) {
    auto plus = x, minus = x;
    plus[j] += 1e-6;
    minus[j] -= 1e-6;
    CHECK(dx[j] == doctest::Approx((loss(plus) - loss(minus)) / 2e-6).epsilon(1e-7).scale(1.0));
  }
  // The float kernel agrees with the double one to float accuracy.
  std::vector<float> yf(y.begin(), y.end()), dyf(dy.begin(), dy.end()), dxf(x.size());
  kernels::softmax_rows_backward<float>(yf, dyf, dxf, cols);
  for (std::size_t j = 0; j < x.size(); ++j) CHECK(dxf[j] == doctest::Approx(dx[j]).epsilon(1e-6).scale(1.0));
}

TEST_CASE("backward size and overlap errors") {
  std::vector<float> x(6), dy(6), dx(6), short_dx(5);
  CHECK_THROWS_WITH_AS(kernels::activation_backward<float>(activation::relu, x, dy, short_dx),
                       "activation_backward: x has 6 elements, dy 6 and dx 5; they must match.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::activation_backward<float>(activation::relu, std::span<const float>(x).first(4), dy, dx),
                       "activation_backward: x has 4 elements, dy 6 and dx 6; they must match.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::activation_backward<float>(activation::gelu, std::span<const float>(dy).first(4),
                                                           std::span<const float>(dy).subspan(1, 4),
                                                           std::span<float>(dy).subspan(1, 4)),
                       "activation_backward: dx overlaps x; only dy may be overwritten (in place, as the same span).",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::activation_backward<float>(activation::gelu, x, x, x),  // in place over x
                       "activation_backward: dx overlaps x; only dy may be overwritten (in place, as the same span).",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::activation_backward<float>(activation::tanh, std::span<const float>(x).first(4),
                                                           std::span<const float>(dy).first(4),
                                                           std::span<float>(dy).subspan(2, 4)),
                       "activation_backward: dx overlaps dy without being the same span.", std::invalid_argument);
  kernels::activation_backward<float>(activation::tanh, x, dy, dy);  // in place over dy
  kernels::activation_backward<float>(activation::tanh, std::span<const float>{}, std::span<const float>{}, std::span<float>{});
  std::vector<double> xd(3), dyd(3);
  CHECK_THROWS_AS(kernels::activation_backward<double>(activation::relu, xd, dyd, std::span<double>(xd)),
                  std::invalid_argument);

  CHECK_THROWS_WITH_AS(kernels::softmax_rows_backward<float>(x, dy, dx, 0),
                       "softmax_rows_backward: cols must be positive, got 0.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::softmax_rows_backward<float>(x, dy, dx, 4),
                       "softmax_rows_backward: the size 6 is not a multiple of cols = 4.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::softmax_rows_backward<float>(x, dy, short_dx, 3),
                       "softmax_rows_backward: y has 6 elements, dy 6 and dx 5; they must match.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::softmax_rows_backward<float>(x, std::span<const float>(dy).first(3), dx, 3),
                       "softmax_rows_backward: y has 6 elements, dy 3 and dx 6; they must match.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::softmax_rows_backward<float>(x, dy, x, 3),
                       "softmax_rows_backward: dx overlaps y; only dy may be overwritten (in place, as the same span).",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::softmax_rows_backward<float>(std::span<const float>(x).first(3),
                                                             std::span<const float>(dy).first(3),
                                                             std::span<float>(dy).subspan(1, 3), 3),
                       "softmax_rows_backward: dx overlaps dy without being the same span.", std::invalid_argument);
  kernels::softmax_rows_backward<float>(x, dy, dy, 3);  // in place over dy
  kernels::softmax_rows_backward<float>(std::span<const float>{}, std::span<const float>{}, std::span<float>{}, 3);
}

TEST_CASE("backward in double runs scalar double math") {
  const std::vector<double> x{-3.0, -0.0, 0.5, 2.0, -30.0, 30.0, -800.0, 800.0};
  const std::vector<double> dy{1.5, -2.0, 0.25, 1.0, 3.0, -1.0, 2.0, 0.5};
  for (activation a : all_activations) {
    INFO("activation ", static_cast<int>(a));
    std::vector<double> dx(x.size());
    kernels::activation_backward<double>(a, x, dy, dx);
    for (std::size_t i = 0; i < x.size(); ++i) {
      INFO("x = ", x[i]);
      const auto terms = derivative_reference(a, x[i]);
      double want = dy[i] * terms.value();
      if (a == activation::relu) want = x[i] > 0 ? dy[i] : 0.0;
      if (std::isinf(want)) CHECK(dx[i] == want);
      else CHECK(std::fabs(dx[i] - want) <= 1e-13 * std::fabs(dy[i]) * terms.scale());
    }
  }
  // dx may be dy itself.
  std::vector<double> in_place = dy;
  kernels::activation_backward<double>(activation::gelu, x, in_place, in_place);
  std::vector<double> apart(x.size());
  kernels::activation_backward<double>(activation::gelu, x, dy, apart);
  CHECK(in_place == apart);
  std::vector<double> relu_dx(2);
  kernels::activation_backward<double>(activation::relu, std::vector<double>{std::nan(""), 0.0}, std::vector<double>{1.0, 1.0},
                                       relu_dx);
  CHECK(relu_dx == std::vector<double>{0.0, 0.0});
}

TEST_CASE("add_rows adds a strided block into another, bit for bit on every target") {
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  const float nan_a = std::bit_cast<float>(0x7FC00123u);
  for_each_target([&](const std::string& target) {
    for (std::size_t row_length : {1, 3, 7, 8, 15, 16, 17, 33, 64, 100})
      for (std::size_t rows : {0, 1, 2, 5}) {
        const std::size_t from_stride = row_length + rng() % 5, to_stride = row_length + rng() % 9;
        std::vector<float> from(rows == 0 ? 0 : (rows - 1) * from_stride + row_length);
        std::vector<float> to(rows == 0 ? 0 : (rows - 1) * to_stride + row_length + 3);  // room after the block
        for (auto& v : from) v = rng() % 29 == 0 ? nan_a : u(rng);
        for (auto& v : to) v = rng() % 31 == 0 ? inf : u(rng);
        std::vector<float> expected = to;
        for (std::size_t r = 0; r < rows; ++r)
          for (std::size_t i = 0; i < row_length; ++i) {
            const float sum = expected[r * to_stride + i] + from[r * from_stride + i];
            expected[r * to_stride + i] = std::isnan(sum) ? std::numeric_limits<float>::quiet_NaN() : sum;
          }
        kernels::add_rows<float>(from, from_stride, to, to_stride, rows, row_length);
        INFO(target, ": rows = ", rows, ", row_length = ", row_length);
        for (std::size_t i = 0; i < to.size(); ++i) REQUIRE(bits(to[i]) == bits(expected[i]));
      }
  });
  std::vector<double> to{1, 1, 1, 1, 1, 1};
  kernels::add_rows<double>(std::vector<double>{1, 2, 9, 3, 4}, 3, to, 4, 2, 2);
  CHECK(to == std::vector<double>{2, 3, 1, 1, 4, 5});
}

TEST_CASE("add_rows rejects blocks that do not fit and overlapping spans") {
  std::vector<float> from(10), to(10);
  CHECK_THROWS_WITH_AS(kernels::add_rows<float>(from, 4, to, 4, 3, 4),
                       "add_rows: 3 rows of 4 elements, 4 apart, do not fit in from's 10 elements.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::add_rows<float>(from, 2, to, 4, 2, 3),
                       "add_rows: from's row stride 2 is shorter than a row (3).", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::add_rows<float>(std::span(from).first(4), 4, std::span(from).subspan(2), 4, 1, 4),
                       "add_rows: from and to overlap; they must lie apart.", std::invalid_argument);
  CHECK_THROWS_AS(kernels::add_rows<float>(from, 4, to, std::size_t(1) << 62, 2, 4), std::invalid_argument);  // no wrap
  kernels::add_rows<float>(from, 6, to, 6, 2, 4);  // exactly fits: rows at 0 and 6, the last ending at 10
}

TEST_CASE("every activation maps to its name and back") {
  static_assert(static_cast<std::size_t>(activation::softmax) + 1 == kernels::activation_names.size(),
                "activation_names has one name per enumerator");
  for (std::size_t i = 0; i < kernels::activation_names.size(); ++i) {
    const auto a = static_cast<activation>(i);
    CAPTURE(kernels::activation_names[i]);
    CHECK(kernels::find_activation(kernels::activation_name(a)) == a);
    CHECK(kernels::is_elementwise(a) == (a != activation::softmax));
  }
  CHECK(kernels::activation_name(activation::exponential) == "exponential");  // Keras' name
  CHECK(kernels::find_activation("None") == activation::linear);
  CHECK(kernels::find_activation("") == activation::linear);
  CHECK(kernels::find_activation("exp") == std::nullopt);
  CHECK(kernels::find_activation("Relu") == std::nullopt);
  CHECK_THROWS_WITH_AS(kernels::activation_name(static_cast<activation>(42)),
                       "activation_name: 42 is not an activation (0 to 7).", std::invalid_argument);
}

TEST_CASE("the elementwise kernels reject softmax and values outside the enum") {
  std::vector<float> x{1.0f, 2.0f}, y{7.0f, 7.0f}, dy{1.0f, 1.0f};
  const std::vector<float> untouched = y;
  const std::string softmax_message = ": softmax is not elementwise; it runs over rows, with kernels::softmax_rows.";
  CHECK_THROWS_WITH_AS(kernels::activate(activation::softmax, x, y), ("activate" + softmax_message).c_str(),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::activation_backward(activation::softmax, x, dy, y),
                       ("activation_backward" + softmax_message).c_str(), std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::bias_activation(x, std::span<const float>(), activation::softmax, y, 2),
                       ("bias_activation" + softmax_message).c_str(), std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::activate(static_cast<activation>(8), x, y),
                       "activate: 8 is not an activation (0 to 7).", std::invalid_argument);
  CHECK(y == untouched);
}

template <class X, class Y>
concept activates = requires { kernels::activate(activation::relu, std::declval<X>(), std::declval<Y>()); };

TEST_CASE("the elementwise kernels deduce the dtype from spans and containers") {
  const std::vector<bfloat16> x{bfloat16(-1.0f), bfloat16(0.5f), bfloat16(2.0f)};
  std::vector<bfloat16> named(3), deduced(3), from_spans(3);
  kernels::activate<bfloat16>(activation::gelu, x, named);
  kernels::activate(activation::gelu, x, deduced);
  kernels::activate(activation::gelu, std::span<const bfloat16>(x), std::span<bfloat16>(from_spans));
  CHECK(bits_of(deduced) == bits_of(named));
  CHECK(bits_of(from_spans) == bits_of(named));

  std::vector<float> logits{1.0f, 2.0f, 3.0f, 0.0f}, probabilities(4), dx(4);
  kernels::softmax_rows(logits, probabilities, 2);
  CHECK(probabilities[0] + probabilities[1] == doctest::Approx(1.0f));
  kernels::softmax_rows_backward(probabilities, std::vector<float>{1.0f, 1.0f, 1.0f, 1.0f}, dx, 2);
  CHECK(std::fabs(dx[0] + dx[1]) < 1e-7f);  // a constant gradient moves no probability
  std::vector<float> rows{1.0f, 2.0f, 3.0f, 4.0f};
  kernels::bias_add(rows, std::vector<float>{10.0f, 20.0f});
  CHECK(rows == std::vector<float>{11.0f, 22.0f, 13.0f, 24.0f});
  std::vector<float> y(4);
  kernels::bias_activation(rows, std::vector<float>{-11.0f, 0.0f}, activation::relu, y, 2);
  CHECK(y == std::vector<float>{0.0f, 22.0f, 2.0f, 24.0f});
  kernels::activation_backward(activation::relu, y, std::vector<float>{5.0f, 5.0f, 5.0f, 5.0f}, dx);
  CHECK(dx == std::vector<float>{0.0f, 5.0f, 5.0f, 5.0f});

  // Mismatched dtypes, read-only or temporary outputs do not resolve.
  static_assert(activates<std::vector<float>&, std::vector<float>&>);
  static_assert(!activates<std::vector<float>&, std::vector<double>&>);
  static_assert(!activates<std::vector<float>&, const std::vector<float>&>);
  static_assert(!activates<std::vector<float>&, std::vector<float>>);
  static_assert(!activates<std::vector<int>&, std::vector<int>&>);
}
