// Reductions on every supported target: bit-identical results across targets (and, for sum and
// dot, bit-identical to the scalar form of the documented summation order), on random and
// special inputs, every short length, chunk boundaries and unaligned starts; numerics against
// independent double references; early exit; the scalar fallbacks; error paths.
#include <doctest/doctest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <mixprec/kernels/convert.hpp>
#include <mixprec/kernels/reduce.hpp>

#include "kernel_targets.hpp"

using namespace mixprec;
using mixprec::test::for_each_target;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float qnan = std::numeric_limits<float>::quiet_NaN();

std::uint32_t bits(float v) { return std::bit_cast<std::uint32_t>(v); }

template <class T>
T from_float(float v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else return T(v);
}
template <class T>
float to_float(T v) {
  return static_cast<float>(v);
}

/// Mostly normal(0, 1) values with a sprinkling of wide-range random bit patterns (which include
/// infinities, NaNs and subnormals for the 16-bit types) when `with_specials`.
template <class T>
std::vector<T> random_values(std::size_t n, std::uint32_t seed, bool with_specials) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<T> x(n);
  for (auto& v : x) {
    if (with_specials && rng() % 16 == 0) {
      if constexpr (std::is_same_v<T, float>) v = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
      else v = T::from_bits(static_cast<std::uint16_t>(rng()));
    } else {
      v = from_float<T>(normal(rng));
    }
  }
  return x;
}

/// Lengths that exercise every tail: all short ones (past two steps of all_finite on the widest
/// compiled target, 2 * 8 vectors of 32 16-bit lanes) and the chunk and level boundaries of the
/// summation order.
std::vector<std::size_t> test_lengths() {
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 2 * 8 * 32 + 1; ++n) lengths.push_back(n);
  for (std::size_t n : {1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097, 6144 + 31, 3 * 2048 + 33, 8 * 2048 + 1})
    lengths.push_back(n);
  return lengths;
}

/// Every reduction of x[offset, offset + n) and of the gradients it unscales, as bit patterns.
template <class T>
std::vector<std::uint32_t> all_results(const std::vector<T>& x, const std::vector<T>& y, float inv_scale) {
  std::vector<std::uint32_t> out;
  for (std::size_t offset = 0; offset < 4; ++offset) {
    for (std::size_t n : test_lengths()) {
      const std::span<const T> a(x.data() + offset, n);
      const std::span<const T> b(y.data() + offset, n);
      out.push_back(kernels::all_finite(a));
      out.push_back(bits(kernels::amax(a)));
      out.push_back(bits(kernels::sum(a)));
      out.push_back(bits(kernels::dot(a, b)));
      std::vector<T> g(a.begin(), a.end());
      out.push_back(kernels::unscale_and_check_finite<T>(g, inv_scale));
      for (const T& v : g) out.push_back(bits(to_float(v)));
    }
  }
  return out;
}

template <class T>
void check_identical_on_every_target(bool with_specials) {
  const auto x = random_values<T>(8 * 2048 + 8, 11, with_specials);
  const auto y = random_values<T>(8 * 2048 + 8, 12, with_specials);
  std::map<std::string, std::vector<std::uint32_t>> results;
  for_each_target([&](const std::string& target) { results[target] = all_results(x, y, 0.25f); });
  // References, not bindings: doctest's INFO captures them in a lambda.
  const std::string& first_target = results.begin()->first;
  const auto& expected = results.begin()->second;
  for (const auto& result : results) {
    const std::string& target = result.first;
    const auto& got = result.second;
    INFO(target, " against ", first_target);
    REQUIRE(got.size() == expected.size());
    CHECK(std::mismatch(got.begin(), got.end(), expected.begin()).first == got.end());
  }
}

/// The kernels add in exactly the order summation_order.hpp documents.
template <class T>
void check_sum_and_dot_follow_the_documented_order() {
  const auto x = random_values<T>(5 * 2048 + 77, 21, false);
  const auto y = random_values<T>(5 * 2048 + 77, 22, false);
  for_each_target([&](const std::string&) {
    for (std::size_t n : test_lengths()) {
      if (n > x.size()) continue;
      const std::span<const T> a(x.data(), n), b(y.data(), n);
      const float expected_sum =
          kernels::detail::ordered_sum<float>(n, [&](std::size_t i) { return to_float(x[i]); });
      const float expected_dot =
          kernels::detail::ordered_sum<float>(n, [&](std::size_t i) { return to_float(x[i]) * to_float(y[i]); });
      INFO("n = ", n);
      REQUIRE(bits(kernels::sum(a)) == bits(expected_sum));
      REQUIRE(bits(kernels::dot(a, b)) == bits(expected_dot));
    }
  });
}

/// The rounding error bound of the documented order: at most (terms per accumulator + chunk
/// levels + 5 tree levels) roundings of partial sums bounded by sum |x|.
double sum_error_bound(std::size_t n, double sum_of_magnitudes) {
  const double depth = 64.0 + std::log2(static_cast<double>(n) / 2048.0 + 1.0) + 1.0 + 5.0;
  return depth * 0x1p-24 * sum_of_magnitudes;
}

/// A page that faults on access right after `elements` floats.
struct guarded_floats {
  explicit guarded_floats(std::size_t elements) {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    usable = (elements * sizeof(float) + page - 1) / page * page;
    mapping = mmap(nullptr, usable + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(mapping != MAP_FAILED);
    REQUIRE(mprotect(static_cast<char*>(mapping) + usable, page, PROT_NONE) == 0);
    length = usable + page;
  }
  ~guarded_floats() { munmap(mapping, length); }
  guarded_floats(const guarded_floats&) = delete;
  guarded_floats& operator=(const guarded_floats&) = delete;
  float* data() const { return static_cast<float*>(mapping); }
  std::size_t usable = 0, length = 0;
  void* mapping = nullptr;
};

}  // namespace

TEST_CASE("reductions return the same bits on every target") {
  check_identical_on_every_target<float>(false);
  check_identical_on_every_target<float>(true);
  check_identical_on_every_target<bfloat16>(false);
  check_identical_on_every_target<bfloat16>(true);
  check_identical_on_every_target<float16>(false);
  check_identical_on_every_target<float16>(true);
}

TEST_CASE("sum and dot add in the documented order on every target") {
  check_sum_and_dot_follow_the_documented_order<float>();
  check_sum_and_dot_follow_the_documented_order<bfloat16>();
  check_sum_and_dot_follow_the_documented_order<float16>();
}

TEST_CASE("numerics against double references") {
  const auto x = random_values<float>(300007, 5, false);
  std::vector<bfloat16> xb(x.size());
  std::vector<float16> xh(x.size());
  kernels::convert<float, bfloat16>(x, xb);
  kernels::convert<float, float16>(x, xh);
  for_each_target([&](const std::string&) {
    for (std::size_t n : {std::size_t{1}, std::size_t{33}, std::size_t{5000}, x.size()}) {
      INFO("n = ", n);
      const std::span<const float> a(x.data(), n);
      double exact_sum = 0, magnitudes = 0, exact_dot = 0, squares = 0, largest = 0;
      for (float v : a) {
        exact_sum += v;
        magnitudes += std::fabs(v);
        exact_dot += static_cast<double>(v) * v;
        squares += static_cast<double>(v) * v;
        largest = std::max(largest, static_cast<double>(std::fabs(v)));
      }
      CHECK(std::fabs(kernels::sum(a) - exact_sum) <= sum_error_bound(n, magnitudes));
      // Each product adds one more rounding.
      CHECK(std::fabs(kernels::dot(a, a) - exact_dot) <= sum_error_bound(n, squares) + 0x1p-24 * squares);
      CHECK(kernels::amax(a) == largest);
      CHECK(kernels::all_finite(a));

      double exact_bf16 = 0, magnitudes_bf16 = 0, largest_bf16 = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const double v = static_cast<double>(xb[i]);
        exact_bf16 += v;
        magnitudes_bf16 += std::fabs(v);
        largest_bf16 = std::max(largest_bf16, std::fabs(v));
      }
      const std::span<const bfloat16> b(xb.data(), n);
      CHECK(std::fabs(kernels::sum(b) - exact_bf16) <= sum_error_bound(n, magnitudes_bf16));
      CHECK(kernels::amax(b) == largest_bf16);
      double largest_f16 = 0;
      for (std::size_t i = 0; i < n; ++i) largest_f16 = std::max(largest_f16, std::fabs(static_cast<double>(xh[i])));
      CHECK(kernels::amax(std::span<const float16>(xh.data(), n)) == largest_f16);
    }
  });
  // Pairwise chunks keep the error far below a sequential float loop's on a long constant sum.
  const std::vector<float> tenths(1 << 22, 0.1f);
  const double exact = static_cast<double>(0.1f) * (1 << 22);
  float sequential = 0.0f;
  for (float v : tenths) sequential += v;
  CHECK(std::fabs(sequential - exact) / exact > 1e-3);
  CHECK(std::fabs(kernels::sum<float>(tenths) - exact) / exact < 1e-6);
}

TEST_CASE("special values") {
  for_each_target([&](const std::string&) {
    const std::vector<float> empty;
    CHECK(bits(kernels::sum<float>(empty)) == 0u);
    CHECK(bits(kernels::amax<float>(empty)) == 0u);
    CHECK(kernels::all_finite<float>(empty));
    CHECK(bits(kernels::dot<float>(empty, empty)) == 0u);

    CHECK(bits(kernels::sum<float>(std::vector<float>{-0.0f})) == 0u);  // +0 + -0
    CHECK(bits(kernels::sum<float>(std::vector<float>{-0.0f, -0.0f, -0.0f})) == 0u);
    CHECK(kernels::amax<float>(std::vector<float>{-0.0f, -3.0f, 2.0f}) == 3.0f);
    CHECK(kernels::amax<float>(std::vector<float>{-inf, 1.0f}) == inf);
    CHECK(kernels::sum<float>(std::vector<float>{inf, 1.0f}) == inf);
    CHECK(kernels::sum<float>(std::vector<float>{3e38f, 3e38f}) == inf);
    CHECK(kernels::amax<float>(std::vector<float>{0x1p-149f}) == 0x1p-149f);
    CHECK(kernels::sum<float>(std::vector<float>{0x1p-149f, 0x1p-149f}) == 0x1p-148f);  // subnormals are kept

    // Every NaN result is the canonical quiet NaN, whatever NaNs went in.
    const float signaling = std::bit_cast<float>(0xFF800001u);
    for (std::size_t at : {std::size_t{0}, std::size_t{5}, std::size_t{40}, std::size_t{99}}) {
      std::vector<float> x(100, 1.0f);
      x[at] = signaling;
      x[99 - at] = std::bit_cast<float>(0x7FC12345u);
      CHECK(bits(kernels::amax<float>(x)) == 0x7FC00000u);
      CHECK(bits(kernels::sum<float>(x)) == 0x7FC00000u);
      CHECK(bits(kernels::dot<float>(x, x)) == 0x7FC00000u);
      CHECK_FALSE(kernels::all_finite<float>(x));
    }
    CHECK(bits(kernels::sum<float>(std::vector<float>{inf, -inf})) == 0x7FC00000u);
    CHECK(bits(kernels::dot<float>(std::vector<float>{inf}, std::vector<float>{0.0f})) == 0x7FC00000u);

    // 16-bit formats: the exponent test.
    CHECK_FALSE(kernels::all_finite<float16>(std::vector<float16>{float16(1.0f), float16::from_bits(0x7C00)}));
    CHECK_FALSE(kernels::all_finite<float16>(std::vector<float16>{float16::from_bits(0xFE01)}));
    CHECK(kernels::all_finite<float16>(std::vector<float16>{float16::from_bits(0x7BFF), float16::from_bits(0xFBFF)}));
    CHECK_FALSE(kernels::all_finite<bfloat16>(std::vector<bfloat16>{bfloat16::from_bits(0xFF80)}));
    CHECK(kernels::all_finite<bfloat16>(std::vector<bfloat16>{bfloat16::from_bits(0x7F7F)}));
    CHECK(kernels::amax<float16>(std::vector<float16>{float16::from_bits(0xFBFF)}) == 65504.0f);
    CHECK(std::isnan(kernels::amax<bfloat16>(std::vector<bfloat16>{bfloat16(1.0f), bfloat16::from_bits(0x7FC1)})));
  });
}

TEST_CASE("all_finite stops at the first non-finite block") {
  // The buffer ends at a page that faults: reading past the first block would crash.
  const std::size_t n = 64 * 1024;
  guarded_floats buffer(n);
  std::fill(buffer.data(), buffer.data() + n, 1.0f);
  buffer.data()[0] = inf;
  const std::span<const float> x(buffer.data(), buffer.usable / sizeof(float) + 1024);
  for_each_target([&](const std::string&) { CHECK_FALSE(kernels::all_finite(x)); });
  // The same scan over readable memory only, as a control.
  buffer.data()[0] = 1.0f;
  buffer.data()[n - 1] = qnan;
  for_each_target([&](const std::string&) {
    CHECK_FALSE(kernels::all_finite(std::span<const float>(buffer.data(), n)));
    CHECK(kernels::all_finite(std::span<const float>(buffer.data(), n - 1)));
  });
}

TEST_CASE("unscale_and_check_finite scales every gradient and judges the rounded result") {
  for_each_target([&](const std::string&) {
    // float16: 40000 * 2 overflows to inf after rounding; every other gradient is still scaled.
    std::vector<float16> h{float16(1.0f), float16(40000.0f), float16(-3.0f), float16(0.5f)};
    CHECK_FALSE(kernels::unscale_and_check_finite<float16>(h, 2.0f));
    CHECK(h[0].to_bits() == float16(2.0f).to_bits());
    CHECK(h[1].to_bits() == 0x7C00);
    CHECK(h[2].to_bits() == float16(-6.0f).to_bits());
    CHECK(h[3].to_bits() == float16(1.0f).to_bits());
    // 65504 * 1.0002 = 65517.1 rounds back to 65504; 65504 * 1.0003 = 65523.7 rounds to inf,
    // though both products are finite floats.
    std::vector<float16> edge{float16::from_bits(0x7BFF)};
    CHECK(kernels::unscale_and_check_finite<float16>(edge, 1.0002f));
    CHECK(edge[0].to_bits() == 0x7BFF);
    edge[0] = float16::from_bits(0x7BFF);
    CHECK_FALSE(kernels::unscale_and_check_finite<float16>(edge, 1.0003f));
    CHECK(edge[0].to_bits() == 0x7C00);

    std::vector<float> g{1.0f, 2.0f, qnan, 4.0f};
    CHECK_FALSE(kernels::unscale_and_check_finite<float>(g, 0.5f));
    CHECK(g[3] == 2.0f);
    std::vector<float> fine{1.0f, -8.0f, 0x1p-126f};
    CHECK(kernels::unscale_and_check_finite<float>(fine, 0.125f));
    CHECK(fine == std::vector<float>{0.125f, -1.0f, 0x1p-129f});
    std::vector<float> empty;
    CHECK(kernels::unscale_and_check_finite<float>(empty, qnan));
    std::vector<bfloat16> b(37, bfloat16(1.0f));
    CHECK_FALSE(kernels::unscale_and_check_finite<bfloat16>(b, inf));
    std::vector<bfloat16> b2(37, bfloat16(0.0f));
    CHECK_FALSE(kernels::unscale_and_check_finite<bfloat16>(b2, qnan));
  });
  // Each result is cast<T>(float(g) * inv_scale): random gradients against the scalar rule.
  const auto x = random_values<bfloat16>(1000, 3, true);
  for_each_target([&](const std::string&) {
    std::vector<bfloat16> g = x;
    bool finite = true;
    for (std::size_t i = 0; i < g.size(); ++i) finite = finite && std::isfinite(static_cast<float>(x[i]) * 0.3f);
    CHECK(kernels::unscale_and_check_finite<bfloat16>(g, 0.3f) == finite);
    for (std::size_t i = 0; i < g.size(); ++i) {
      const float product = static_cast<float>(x[i]) * 0.3f;
      if (std::isnan(product)) REQUIRE(std::isnan(static_cast<float>(g[i])));
      else REQUIRE(g[i].to_bits() == bfloat16(product).to_bits());
    }
  });
}

TEST_CASE("double and float8 take the scalar path with the same semantics") {
  const auto x = random_values<float>(5000, 9, false);
  std::vector<float8_e4m3fn> q(x.size());
  std::vector<float8_e5m2> r(x.size());
  kernels::convert<float, float8_e4m3fn>(x, q);
  kernels::convert<float, float8_e5m2>(x, r);
  std::vector<float> wide_q(q.size()), wide_r(r.size());
  kernels::convert<float8_e4m3fn, float>(q, wide_q);
  kernels::convert<float8_e5m2, float>(r, wide_r);
  // float8 sums are sum<float> of the widened values, bit for bit.
  CHECK(bits(kernels::sum<float8_e4m3fn>(q)) == bits(kernels::sum<float>(wide_q)));
  CHECK(bits(kernels::dot<float8_e5m2>(r, r)) == bits(kernels::dot<float>(wide_r, wide_r)));
  CHECK(kernels::amax<float8_e4m3fn>(q) == kernels::amax<float>(wide_q));
  CHECK(kernels::all_finite<float8_e5m2>(r));
  q[17] = float8_e4m3fn::from_bits(0x7F);  // NaN (E4M3FN has no inf)
  CHECK_FALSE(kernels::all_finite<float8_e4m3fn>(q));
  CHECK(std::isnan(kernels::amax<float8_e4m3fn>(q)));
  std::vector<float8_e4m3fn> big{float8_e4m3fn(300.0f)};
  CHECK_FALSE(kernels::unscale_and_check_finite<float8_e4m3fn>(big, 2.0f));  // 600 is beyond 448: NaN

  std::vector<double> d{1e300, 0.5, -1e300};
  CHECK(kernels::sum<double>(d) == 0.5f);  // accumulated in double (lane 0: 1e300 - 1e300, then + lane 1)
  CHECK(kernels::amax<double>(d) == inf);  // 1e300 rounds to inf as a float
  CHECK(kernels::dot<double>(std::vector<double>{1e-30, 3.0}, std::vector<double>{1e-30, 2.0}) == 6.0f);
  CHECK(kernels::all_finite<double>(d));
  d.push_back(std::numeric_limits<double>::quiet_NaN());
  CHECK_FALSE(kernels::all_finite<double>(d));
  CHECK(std::isnan(kernels::amax<double>(d)));
  std::vector<double> g{2.0, 1e308};
  CHECK_FALSE(kernels::unscale_and_check_finite<double>(g, 4.0f));
  CHECK(g[0] == 8.0);
}

TEST_CASE("dot rejects operands of different sizes") {
  const std::vector<float> a(5), b(4);
  CHECK_THROWS_WITH_AS(kernels::dot<float>(a, b), "dot: the first operand has 5 elements but the second has 4; they must match.",
                       std::invalid_argument);
  const std::vector<double> c(1), d(2);
  CHECK_THROWS_AS(kernels::dot<double>(c, d), std::invalid_argument);
}

namespace {

/// column_max's rule, written out: a NaN held stays, a NaN met replaces a number, a larger value
/// replaces a smaller one, ties keep the earlier value.
template <class T>
void column_max_reference(const std::vector<T>& rows, std::vector<T>& maxima) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    T& largest = maxima[i % maxima.size()];
    if (std::isnan(largest)) continue;
    if (std::isnan(rows[i]) || rows[i] > largest) largest = rows[i];
  }
}

}  // namespace

TEST_CASE("column_max matches its rule bit for bit on every target, tails and specials included") {
  // Random bit patterns (NaNs with many payloads, infinities, subnormals) mixed with small
  // integers, so that ties (+0 against -0, equal values) come up often.
  std::mt19937 rng(31);
  const auto value = [&] {
    if (rng() % 3 == 0) return std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    const float v = static_cast<float>(static_cast<int>(rng() % 5) - 2);
    return v == 0.0f && rng() % 2 == 0 ? -0.0f : v;
  };
  // Every column count up to 40, and around the 4-vector blocks of the widest targets (64 and
  // 128 columns on AVX3), so that blocks, single vectors and the scalar tail all meet.
  std::vector<std::size_t> column_counts{63, 64, 65, 77, 127, 128, 129, 131};
  for (std::size_t cols = 1; cols <= 40; ++cols) column_counts.push_back(cols);
  for_each_target([&](const std::string&) {
    for (std::size_t cols : column_counts)
      for (std::size_t row_count : {0, 1, 2, 3, 9}) {
        std::vector<float> rows(cols * row_count), maxima(cols);
        for (auto& v : rows) v = value();
        for (auto& v : maxima) v = rng() % 4 == 0 ? value() : -inf;
        std::vector<float> expected = maxima;
        column_max_reference(rows, expected);
        kernels::column_max<float>(rows, maxima);
        INFO("cols = ", cols, ", rows = ", row_count);
        for (std::size_t c = 0; c < cols; ++c) REQUIRE(bits(maxima[c]) == bits(expected[c]));
      }
  });
}

TEST_CASE("column_max: NaN propagation, ties and the double path") {
  const float nan_a = std::bit_cast<float>(0x7FC00001u), nan_b = std::bit_cast<float>(0xFFC00002u);
  for_each_target([&](const std::string&) {
    // Nine columns: a full AVX2 vector and a scalar tail see the same cases.
    const std::vector<float> rows{
        1, -0.0f, 2, nan_a, 5, 1, -0.0f, nan_a, 2,  //
        3, 0.0f, nan_a, nan_b, 4, 1, 0.0f, nan_b, nan_b};
    std::vector<float> maxima{-inf, -inf, 7, -inf, nan_b, -inf, -inf, -inf, 9};
    kernels::column_max<float>(rows, maxima);
    const std::vector<float> expected{3, -0.0f, nan_a, nan_a, nan_b, 1, -0.0f, nan_a, nan_b};
    for (std::size_t c = 0; c < maxima.size(); ++c) CHECK(bits(maxima[c]) == bits(expected[c]));
  });
  const std::vector<double> rows{1.0, -0.0, std::numeric_limits<double>::quiet_NaN(), 0.0, 2.0, 1.0};
  std::vector<double> maxima{-INFINITY, 0.5};
  kernels::column_max<double>(rows, maxima);
  CHECK(std::isnan(maxima[0]));
  CHECK(maxima[1] == 1.0);
  std::vector<double> ties{-INFINITY, -INFINITY};
  kernels::column_max<double>(std::vector<double>{-0.0, 0.0, 0.0, -0.0}, ties);
  CHECK(std::signbit(ties[0]));
  CHECK_FALSE(std::signbit(ties[1]));
}

TEST_CASE_TEMPLATE("column_max on 16-bit values is float32's on the widened values, rounded back as convert does",
                   T, bfloat16, float16) {
  // Random 16-bit patterns (signaling and quiet NaNs of both signs, infinities, subnormals) and
  // small integers with both zeros. The reference widens each value, runs column_max's rule in
  // float and rounds the maxima back with the scalar cast: every target and the scalar tail must
  // give those bits (a 16-bit maximum comes back as it was; a NaN comes back quiet).
  std::mt19937 rng(53);
  const auto value = [&] {
    if (rng() % 3 == 0) return T::from_bits(static_cast<std::uint16_t>(rng()));
    const float v = static_cast<float>(static_cast<int>(rng() % 5) - 2);
    return cast<T>(v == 0.0f && rng() % 2 == 0 ? -0.0f : v);
  };
  std::vector<std::size_t> column_counts{63, 64, 65, 127, 128, 129};
  for (std::size_t cols = 1; cols <= 34; ++cols) column_counts.push_back(cols);
  for_each_target([&](const std::string& target) {
    for (std::size_t cols : column_counts)
      for (std::size_t row_count : {0, 1, 2, 5}) {
        std::vector<T> rows(cols * row_count), maxima(cols);
        for (auto& v : rows) v = value();
        for (auto& v : maxima) v = rng() % 4 == 0 ? value() : cast<T>(-inf);
        std::vector<float> wide_rows(rows.size()), wide_maxima(cols);
        for (std::size_t i = 0; i < rows.size(); ++i) wide_rows[i] = static_cast<float>(rows[i]);
        for (std::size_t c = 0; c < cols; ++c) wide_maxima[c] = static_cast<float>(maxima[c]);
        column_max_reference(wide_rows, wide_maxima);
        kernels::column_max<T>(rows, maxima);
        INFO(target, ": cols = ", cols, ", rows = ", row_count);
        for (std::size_t c = 0; c < cols; ++c) {
          // Untouched maxima (no rows) keep their bits; the others are rounded back.
          const T expected = row_count == 0 ? maxima[c] : cast<T>(wide_maxima[c]);
          REQUIRE(maxima[c].to_bits() == expected.to_bits());
        }
      }
  });
}

TEST_CASE_TEMPLATE("column_max rejects rows that are not whole, writing nothing", T, float, bfloat16, float16) {
  std::vector<T> maxima(3, cast<T>(5.0f));
  CHECK_THROWS_WITH_AS(kernels::column_max<T>(std::vector<T>(7, cast<T>(9.0f)), maxima),
                       "column_max: the rows have 7 elements, which is not a multiple of the 3 maxima.",
                       std::invalid_argument);
  for (const T m : maxima) CHECK(static_cast<float>(m) == 5.0f);
  std::vector<T> none;
  CHECK_THROWS_AS(kernels::column_max<T>(std::vector<T>(1), none), std::invalid_argument);
  kernels::column_max<T>(std::vector<T>{}, none);  // empty into empty: nothing to do
  std::vector<double> no_doubles;
  CHECK_THROWS_AS(kernels::column_max<double>(std::vector<double>(1), no_doubles), std::invalid_argument);
  // Maxima over the rows gave other values on each target: refused, nothing written.
  std::vector<T> buffer(32);
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = cast<T>(static_cast<float>((i * 7) % 11));
  const std::vector<T> before = buffer;
  CHECK_THROWS_WITH_AS(kernels::column_max<T>(std::span<const T>(buffer), std::span<T>(buffer).subspan(8, 16)),
                       "column_max: rows and maxima overlap; they must lie apart.", std::invalid_argument);
  CHECK(std::memcmp(buffer.data(), before.data(), buffer.size() * sizeof(T)) == 0);
}

namespace {

/// column_sum's rule, written out: each column starts at +0 and adds its elements, widened to
/// float, in row order; the total replaces sums[c] or is added to it; a NaN comes out canonical.
template <class T>
void column_sum_reference(std::span<const T> x, std::vector<float>& sums, std::size_t cols, bool accumulate) {
  for (std::size_t c = 0; c < cols; ++c) {
    float total = 0.0f;
    for (std::size_t i = c; i < x.size(); i += cols) total += to_float(x[i]);
    const float result = accumulate ? sums[c] + total : total;
    sums[c] = std::isnan(result) ? qnan : result;
  }
}

/// Every column count up to 40 and around the 4-vector blocks of the widest targets.
std::vector<std::size_t> column_counts() {
  std::vector<std::size_t> counts{63, 64, 65, 127, 128, 129, 131};
  for (std::size_t cols = 1; cols <= 40; ++cols) counts.push_back(cols);
  return counts;
}

/// Matching the rule bit for bit on every target also makes the targets agree with each other.
template <class T>
void check_column_sum_rule(bool with_specials) {
  const auto x = random_values<T>(131 * 9 + 3, with_specials ? 41 : 42, with_specials);
  const auto initial_sums = random_values<float>(131, 43, with_specials);
  for_each_target([&](const std::string&) {
    for (std::size_t cols : column_counts())
      for (std::size_t rows = 0; rows <= 9; ++rows)
        for (std::size_t offset : {0, 1, 3})
          for (bool accumulate : {false, true}) {
            const std::span<const T> matrix(x.data() + offset, rows * cols);
            std::vector<float> sums(initial_sums.begin(), initial_sums.begin() + static_cast<std::ptrdiff_t>(cols));
            std::vector<float> expected = sums;
            column_sum_reference(matrix, expected, cols, accumulate);
            kernels::column_sum<T>(matrix, sums, cols, accumulate);
            INFO("cols = ", cols, ", rows = ", rows, ", offset = ", offset, ", accumulate = ", accumulate);
            for (std::size_t c = 0; c < cols; ++c) REQUIRE(bits(sums[c]) == bits(expected[c]));
          }
  });
}

}  // namespace

TEST_CASE("column_sum adds each column in row order, bit for bit on every target") {
  for (bool with_specials : {false, true}) {
    check_column_sum_rule<float>(with_specials);
    check_column_sum_rule<bfloat16>(with_specials);
    check_column_sum_rule<float16>(with_specials);
  }
}

TEST_CASE("column_sum against a double reference") {
  // A sequential float sum of n terms is within (n - 1) 2^-24 sum |x| of the exact sum; adding
  // to the sums already there is one more term.
  const std::size_t cols = 37;
  for (std::size_t rows : {1, 2, 9, 1000}) {
    const auto x = random_values<bfloat16>(rows * cols, 51, false);
    const auto start = random_values<float>(cols, 52, false);
    for_each_target([&](const std::string&) {
      std::vector<float> sums = start;
      kernels::column_sum<bfloat16>(x, sums, cols, true);
      for (std::size_t c = 0; c < cols; ++c) {
        double exact = start[c], magnitudes = std::fabs(start[c]);
        for (std::size_t r = 0; r < rows; ++r) {
          exact += to_float(x[r * cols + c]);
          magnitudes += std::fabs(to_float(x[r * cols + c]));
        }
        INFO("rows = ", rows, ", column ", c);
        REQUIRE(std::fabs(sums[c] - exact) <= static_cast<double>(rows) * 0x1p-24 * magnitudes);
      }
    });
  }
}

TEST_CASE("column_sum: zeros, infinities, NaN and no rows") {
  const float signaling = std::bit_cast<float>(0xFF800001u);
  for_each_target([&](const std::string&) {
    // Nine columns: a whole AVX2 vector and a scalar tail see the same cases.
    const std::vector<float> x{
        -0.0f, inf, inf, signaling, 1.0f, -0.0f, 3e38f, 0x1p-149f, 1.0f,  //
        -0.0f, 1.0f, -inf, 1.0f, 2.0f, -0.0f, 3e38f, 0x1p-149f, 0x1p-24f};
    std::vector<float> sums(9, 123.0f);
    kernels::column_sum<float>(x, sums, 9);
    const std::vector<float> expected{0.0f, inf, qnan, qnan, 3.0f, 0.0f, inf, 0x1p-148f, 1.0f};
    for (std::size_t c = 0; c < 9; ++c) CHECK(bits(sums[c]) == bits(expected[c]));  // +0, never -0

    // No rows: the sums are +0; accumulating +0 turns a -0 into +0 and leaves the rest.
    std::vector<float> none{-0.0f, 5.0f};
    kernels::column_sum<float>(std::vector<float>{}, none, 2, true);
    CHECK(bits(none[0]) == 0u);
    CHECK(none[1] == 5.0f);
    kernels::column_sum<float>(std::vector<float>{}, none, 2);
    CHECK(none == std::vector<float>{0.0f, 0.0f});

    // 16-bit inputs are widened exactly: 256 + 1 + 1 is 258 in float (bfloat16 would round).
    std::vector<float> wide_sum(1);
    kernels::column_sum<bfloat16>(std::vector<bfloat16>{bfloat16(256.0f), bfloat16(1.0f), bfloat16(1.0f)}, wide_sum, 1);
    CHECK(wide_sum[0] == 258.0f);
    kernels::column_sum<float16>(std::vector<float16>{float16::from_bits(0x7BFF), float16::from_bits(0x7BFF)}, wide_sum, 1);
    CHECK(wide_sum[0] == 131008.0f);  // 2 * 65504, beyond float16 but not float
  });
}

TEST_CASE("column_sum in double") {
  const std::vector<double> x{1.0, 1e300, 2.0, -1e300, 0.5, 1.0};
  std::vector<double> sums{10.0, 20.0};
  kernels::column_sum(x, sums, 2);
  CHECK(sums == std::vector<double>{3.5, 1.0});  // 1e300 - 1e300 + 1, in row order
  kernels::column_sum(x, sums, 2, true);
  CHECK(sums == std::vector<double>{7.0, 2.0});
}

TEST_CASE("column_sum rejects shapes that do not fit") {
  std::vector<float> sums(3, 7.0f);
  const std::vector<float> x(6);
  CHECK_THROWS_WITH_AS(kernels::column_sum<float>(x, sums, 0), "column_sum: cols must be positive, got 0.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::column_sum<float>(x, sums, 4), "column_sum: the size 6 is not a multiple of cols = 4.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::column_sum<float>(x, sums, 2), "column_sum: sums has 3 elements but cols = 2; they must match.",
                       std::invalid_argument);
  std::vector<float> buffer(9);
  CHECK_THROWS_WITH_AS(kernels::column_sum<float>(std::span<const float>(buffer).first(6), std::span<float>(buffer).subspan(5, 3), 3),
                       "column_sum: x and sums overlap; they must lie apart.", std::invalid_argument);
  CHECK(sums == std::vector<float>(3, 7.0f));
  std::vector<double> double_sums(2);
  CHECK_THROWS_WITH_AS(kernels::column_sum(std::vector<double>(3), double_sums, 2),
                       "column_sum: the size 3 is not a multiple of cols = 2.", std::invalid_argument);
  kernels::column_sum<float>(std::span<const float>(buffer).first(6), std::span<float>(buffer).subspan(6, 3), 3);  // adjacent: fine
}

namespace {

/// column_max_backward's rule, written out independently: the maximum of each column over the
/// window by column_max's own rule, then its gradient added at the first element (rows in order)
/// that is bit-equal to it or, for -0 / +0, equal in value; NaN maxima go to the first NaN.
template <class T>
void column_max_backward_reference(const std::vector<T>& window, const std::vector<T>& maxima,
                                   const std::vector<T>& gradient, std::vector<T>& window_gradient, std::size_t rows,
                                   std::size_t row_length, std::size_t row_stride) {
  const std::size_t cols = maxima.size();
  for (std::size_t c = 0; c < cols; ++c) {
    for (std::size_t r = 0, done = 0; r < rows && !done; ++r)
      for (std::size_t i = c; i < row_length && !done; i += cols) {
        const T v = window[r * row_stride + i];
        const bool same = std::isnan(maxima[c]) ? std::isnan(v) : v == maxima[c];
        if (same) {
          window_gradient[r * row_stride + i] = window_gradient[r * row_stride + i] + gradient[c];
          done = 1;
        }
      }
  }
}

}  // namespace

TEST_CASE("column_max_backward routes each maximum's gradient to its first holder, bit for bit on every target") {
  // Windows of small integers (ties are frequent), NaNs and infinities, with the maxima taken by
  // column_max itself (so they are the values max pooling hands back) or, in some columns, a
  // value no element holds (nothing is routed there).
  std::mt19937 rng(47);
  const float nan_a = std::bit_cast<float>(0x7FC00001u);
  const auto value = [&] {
    switch (rng() % 8) {
      case 0: return nan_a;
      case 1: return inf;
      case 2: return -0.0f;
      default: return static_cast<float>(static_cast<int>(rng() % 5) - 2);
    }
  };
  std::vector<std::size_t> column_counts{63, 64, 65, 127, 128, 129};
  for (std::size_t cols = 1; cols <= 36; ++cols) column_counts.push_back(cols);
  for_each_target([&](const std::string& target) {
    for (std::size_t cols : column_counts)
      for (auto entry : {std::array<std::size_t, 3>{1, 1, 0}, {2, 2, 0}, {3, 2, 5}, {3, 3, 1}, {2, 1, 3}}) {
        const auto& rows = std::get<0>(entry);  // not a binding: lambdas (doctest's INFO) capture it
        const auto& per_row = std::get<1>(entry);
        const auto& gap = std::get<2>(entry);  // not a binding: lambdas (doctest's INFO) capture it
        const std::size_t row_length = per_row * cols, row_stride = row_length + gap * cols / 2 + gap;
        std::vector<float> window((rows - 1) * row_stride + row_length);
        for (auto& v : window) v = value();
        std::vector<float> maxima(cols, -inf);
        for (std::size_t r = 0; r < rows; ++r)
          kernels::column_max<float>(std::span<const float>(window).subspan(r * row_stride, row_length), maxima);
        const std::vector<float> found_maxima = maxima;
        for (auto& m : maxima)
          if (rng() % 9 == 0) m = 7.5f;
        std::vector<float> gradient(cols), window_gradient(window.size()), expected;
        for (auto& g : gradient) g = static_cast<float>(rng() % 1000) / 64.0f - 7.0f;
        for (auto& g : window_gradient) g = static_cast<float>(rng() % 16) / 4.0f;
        const std::vector<float> initial = window_gradient;
        expected = window_gradient;
        column_max_backward_reference(window, maxima, gradient, expected, rows, row_length, row_stride);
        kernels::column_max_backward<float>(window, maxima, gradient, window_gradient, rows, row_length, row_stride);
        INFO(target, ": cols = ", cols, ", rows = ", rows, ", row_length = ", row_length, ", stride = ", row_stride);
        for (std::size_t i = 0; i < window.size(); ++i) REQUIRE(bits(window_gradient[i]) == bits(expected[i]));
        // No maxima given: the kernel finds column_max's.
        expected = window_gradient = initial;
        column_max_backward_reference(window, found_maxima, gradient, expected, rows, row_length, row_stride);
        kernels::column_max_backward<float>(window, {}, gradient, window_gradient, rows, row_length, row_stride);
        for (std::size_t i = 0; i < window.size(); ++i) REQUIRE(bits(window_gradient[i]) == bits(expected[i]));
      }
  });
  // The double path follows the same rule.
  const std::vector<double> window{1, 3, -0.0, 3, 0.0, 2, std::nan(""), 1};
  const std::vector<double> maxima{3, 3}, gradient{0.5, 0.25};  // two columns; the second's 3 is never held
  std::vector<double> window_gradient(window.size(), 1.0);
  kernels::column_max_backward<double>(window, maxima, gradient, window_gradient, 2, 4, 4);
  CHECK(window_gradient == std::vector<double>{1, 1.25, 1, 1, 1, 1, 1, 1});
  const std::vector<double> nan_max{std::nan(""), 3};  // column 0's NaN is its fourth element
  std::fill(window_gradient.begin(), window_gradient.end(), 0.0);
  kernels::column_max_backward<double>(window, nan_max, gradient, window_gradient, 2, 4, 4);
  CHECK(window_gradient == std::vector<double>{0, 0.25, 0, 0, 0, 0, 0.5, 0});
  std::fill(window_gradient.begin(), window_gradient.end(), 0.0);  // found: NaN and 3, as column_max finds them
  kernels::column_max_backward<double>(window, {}, gradient, window_gradient, 2, 4, 4);
  CHECK(window_gradient == std::vector<double>{0, 0.25, 0, 0, 0, 0, 0.5, 0});
}

TEST_CASE_TEMPLATE("column_max_backward on 16-bit windows routes in float32 as on the widened values", T, bfloat16,
                   float16) {
  // The maxima come from column_max<T> itself (NaNs come back quiet, and must still find the
  // signaling NaN they came from); the window's gradient is float32, summed there.
  std::mt19937 rng(59);
  const auto value = [&] {
    switch (rng() % 8) {
      case 0: {  // signaling NaNs, as column_max hands them back quiet
        const unsigned first_signaling = std::is_same_v<T, float16> ? 0x7C01 : 0x7F81;
        return T::from_bits(static_cast<std::uint16_t>(first_signaling + rng() % 3));
      }
      case 1: return cast<T>(inf);
      case 2: return cast<T>(-0.0f);
      default: return cast<T>(static_cast<float>(static_cast<int>(rng() % 5) - 2));
    }
  };
  std::vector<std::size_t> column_counts{63, 64, 65, 129};
  for (std::size_t cols = 1; cols <= 34; ++cols) column_counts.push_back(cols);
  for_each_target([&](const std::string& target) {
    for (std::size_t cols : column_counts)
      for (auto entry : {std::array<std::size_t, 3>{1, 1, 0}, {2, 2, 0}, {3, 2, 5}, {2, 1, 3}}) {
        const auto& rows = std::get<0>(entry);
        const auto& per_row = std::get<1>(entry);
        const auto& gap = std::get<2>(entry);
        const std::size_t row_length = per_row * cols, row_stride = row_length + gap * cols / 2 + gap;
        std::vector<T> window((rows - 1) * row_stride + row_length);
        for (auto& v : window) v = value();
        std::vector<T> maxima(cols, cast<T>(-inf)), gradient(cols);
        for (std::size_t r = 0; r < rows; ++r)
          kernels::column_max<T>(std::span<const T>(window).subspan(r * row_stride, row_length), maxima);
        for (auto& g : gradient) g = cast<T>(static_cast<float>(rng() % 1000) / 64.0f - 7.0f);
        std::vector<float> wide_window(window.size()), wide_maxima(cols), wide_gradient(cols);
        for (std::size_t i = 0; i < window.size(); ++i) wide_window[i] = static_cast<float>(window[i]);
        for (std::size_t c = 0; c < cols; ++c) {
          wide_maxima[c] = static_cast<float>(maxima[c]);
          wide_gradient[c] = static_cast<float>(gradient[c]);
        }
        std::vector<float> window_gradient(window.size());
        for (auto& g : window_gradient) g = static_cast<float>(rng() % 16) / 4.0f;
        std::vector<float> expected = window_gradient;
        const std::vector<float> initial = window_gradient;
        column_max_backward_reference(wide_window, wide_maxima, wide_gradient, expected, rows, row_length, row_stride);
        kernels::column_max_backward<T>(window, maxima, gradient, window_gradient, rows, row_length, row_stride);
        INFO(target, ": cols = ", cols, ", rows = ", rows, ", row_length = ", row_length, ", stride = ", row_stride);
        for (std::size_t i = 0; i < window.size(); ++i) REQUIRE(bits(window_gradient[i]) == bits(expected[i]));
        window_gradient = initial;  // no maxima given: the kernel finds column_max's
        kernels::column_max_backward<T>(window, {}, gradient, window_gradient, rows, row_length, row_stride);
        for (std::size_t i = 0; i < window.size(); ++i) REQUIRE(bits(window_gradient[i]) == bits(expected[i]));
      }
  });
}

TEST_CASE("column_max_backward: the max pooling of a 4x4 image, by hand") {
  // One channel, 2x2 windows with stride 2 (rows 4 apart): the maxima 5, 7, 9, 9 sit at
  // (0,1), (1,3), (2,0) and (2,2) -- the 9 at (3,3) comes after the one at (2,2) and gets nothing.
  const std::vector<float> image{1, 5, 2, 0,  //
                                 4, 3, 6, 7,  //
                                 9, 8, 9, 1,  //
                                 2, 9, 0, 9};
  const std::vector<float> pooled{5, 7, 9, 9}, dy{1, 2, 3, 4};
  std::vector<float> dx(16, 0.0f);
  for_each_target([&](const std::string&) {
    std::fill(dx.begin(), dx.end(), 0.0f);
    for (std::size_t oy = 0; oy < 2; ++oy)
      for (std::size_t ox = 0; ox < 2; ++ox) {
        const std::size_t first = oy * 8 + ox * 2, o = oy * 2 + ox;
        kernels::column_max_backward<float>(std::span<const float>(image).subspan(first, 6),
                                   std::span<const float>(pooled).subspan(o, 1), std::span<const float>(dy).subspan(o, 1),
                                   std::span<float>(dx).subspan(first, 6), 2, 2, 4);
      }
    CHECK(dx == std::vector<float>{0, 1, 0, 0, 0, 0, 0, 2, 3, 0, 4, 0, 0, 0, 0, 0});
  });
}

TEST_CASE_TEMPLATE("column_max_backward rejects windows that do not fit, writing nothing", T, float, bfloat16,
                   float16) {
  // A 16-bit window's gradient is float32 (accumulator_t): the checks are the same.
  using G = kernels::detail::accumulator_t<T>;
  std::vector<T> window(10), maxima(2), gradient(2, cast<T>(1.0f));
  std::vector<G> window_gradient(10, G(3));
  const auto call = [&](std::size_t rows, std::size_t row_length, std::size_t row_stride) {
    kernels::column_max_backward<T>(window, maxima, gradient, window_gradient, rows, row_length, row_stride);
  };
  CHECK_THROWS_WITH_AS(call(1, 3, 3), "column_max_backward: rows of 3 elements do not hold whole rows of the 2 maxima.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(call(2, 4, 2), "column_max_backward: window's row stride 2 is shorter than a row (4).", std::invalid_argument);
  CHECK_THROWS_WITH_AS(call(3, 4, 4),
                       "column_max_backward: 3 rows of 4 elements, 4 apart, do not fit in window's 10 elements.",
                       std::invalid_argument);
  CHECK_THROWS_AS(call(2, 4, std::size_t(1) << 62), std::invalid_argument);  // no overflow in the check
  std::vector<T> short_gradient(1);
  CHECK_THROWS_WITH_AS(kernels::column_max_backward<T>(window, maxima, short_gradient, window_gradient, 1, 2, 2),
                       "column_max_backward: maxima_gradient has 1 elements but there are 2 maxima.",
                       std::invalid_argument);
  std::vector<G> other(9);
  CHECK_THROWS_AS(kernels::column_max_backward<T>(window, maxima, gradient, other, 1, 2, 2), std::invalid_argument);
  if constexpr (std::is_same_v<T, G>)  // the gradient written over the window it reads
    CHECK_THROWS_AS(kernels::column_max_backward<T>(window, maxima, gradient, window, 1, 2, 2), std::invalid_argument);
  // No maxima given: the columns are maxima_gradient's.
  CHECK_THROWS_WITH_AS(kernels::column_max_backward<T>(window, {}, gradient, window_gradient, 1, 3, 3),
                       "column_max_backward: rows of 3 elements do not hold whole rows of the 2 maxima.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::column_max_backward<T>(window, {}, {}, window_gradient, 1, 2, 2),
                       "column_max_backward: rows of 2 elements do not hold whole rows of the 0 maxima.",
                       std::invalid_argument);
  for (const G g : window_gradient) CHECK(g == G(3));  // no rejected call wrote anything
  call(2, 4, 6);  // exactly fits: rows at 0 and 6, the last ending at 10
}

template <class X>
concept has_amax = requires { kernels::amax(std::declval<X>()); };
template <class A, class B>
concept has_dot = requires { kernels::dot(std::declval<A>(), std::declval<B>()); };
template <class G>
concept unscales = requires { kernels::unscale_and_check_finite(std::declval<G>(), 1.0f); };
template <class X>
concept has_column_max = requires { kernels::column_max(std::declval<X>(), std::declval<X>()); };
template <class X, class S>
concept has_column_sum = requires { kernels::column_sum(std::declval<X>(), std::declval<S>(), 1); };

TEST_CASE("the reductions deduce the dtype from spans and containers") {
  const std::vector<bfloat16> x{bfloat16(-3.0f), bfloat16(0.5f), bfloat16(2.0f)};
  CHECK(kernels::amax(x) == 3.0f);
  CHECK(kernels::amax<bfloat16>(x) == 3.0f);  // naming the dtype still compiles
  CHECK(kernels::amax(std::span<const bfloat16>(x)) == 3.0f);
  CHECK(kernels::sum(x) == -0.5f);
  CHECK(kernels::dot(x, x) == 13.25f);
  CHECK(kernels::all_finite(std::array<float, 2>{1.0f, 2.0f}));
  std::vector<float> g{2.0f, 4.0f};
  CHECK(kernels::unscale_and_check_finite(g, 0.5f));
  CHECK(g == std::vector<float>{1.0f, 2.0f});
  CHECK(kernels::unscale_and_check_finite(std::span<float>(g), 0.5f));  // a span of non-const elements
  CHECK(g == std::vector<float>{0.5f, 1.0f});
  std::vector<float> maxima{0.0f, -9.0f};
  kernels::column_max(std::vector<float>{1.0f, -2.0f, -1.0f, -3.0f}, maxima);
  CHECK(maxima == std::vector<float>{1.0f, -2.0f});
  std::vector<float> sums(2);
  kernels::column_sum(std::vector<float16>{float16(1.0f), float16(2.0f), float16(3.0f), float16(4.0f)}, sums, 2);
  CHECK(sums == std::vector<float>{4.0f, 6.0f});
  std::vector<double> double_sums(1);
  kernels::column_sum(std::vector<double>{1.0, 2.0}, double_sums, 1);
  CHECK(double_sums == std::vector<double>{3.0});

  // Dtypes without a kernel, mixed dtypes and outputs that would be lost do not resolve.
  static_assert(has_amax<std::vector<float16>&> && !has_amax<std::vector<std::int32_t>&>);
  static_assert(has_dot<std::vector<float>&, std::vector<float>&> && !has_dot<std::vector<float>&, std::vector<double>&>);
  static_assert(unscales<std::vector<float>&> && unscales<std::span<float>>);
  static_assert(!unscales<std::vector<float>> && !unscales<const std::vector<float>&>);
  static_assert(has_column_max<std::vector<double>&> && has_column_max<std::vector<bfloat16>&> &&
                !has_column_max<std::vector<std::int32_t>&>);
  static_assert(has_column_sum<std::vector<bfloat16>&, std::vector<float>&>);
  static_assert(!has_column_sum<std::vector<double>&, std::vector<float>&>);
}

// The names of the previous release still work (and warn: the project itself must not use them).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST_CASE("the deprecated mixprec:: reductions forward to kernels::") {
  const std::vector<float> x{-3.0f, 0.5f, 2.0f};
  const std::span<const float> s(x);
  CHECK(mixprec::amax<float>(x) == kernels::amax(x));
  CHECK(mixprec::sum(s) == kernels::sum(x));
  CHECK(mixprec::dot(s, s) == kernels::dot(x, x));
  CHECK(mixprec::all_finite(s));
  std::vector<float> g{2.0f};
  CHECK(mixprec::unscale_and_check_finite<float>(g, 0.5f));
  CHECK(g[0] == 1.0f);
  std::vector<float> maxima{0.0f};
  mixprec::column_max<float>(x, maxima);
  CHECK(maxima[0] == 2.0f);
  std::vector<float> gradient(3);
  mixprec::column_max_backward<float>(x, maxima, std::vector<float>{5.0f}, gradient, 3, 1, 1);
  CHECK(gradient == std::vector<float>{0.0f, 0.0f, 5.0f});
  std::vector<float> sums(1);
  mixprec::column_sum<float>(x, sums, 1);
  CHECK(sums[0] == -0.5f);
  std::vector<double> double_sums(1);
  mixprec::column_sum(std::vector<double>{1.0, 2.0}, double_sums, 1);
  CHECK(double_sums[0] == 3.0);
}
#pragma GCC diagnostic pop
