// Two translation units compiled with different -march flags, both including the kernels
// (header-only mode), linked into one program: both must run and agree with the scalar codec.
#include <doctest/doctest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <vector>

#include <mixprec/core/float16.hpp>

std::vector<mixprec::bfloat16> to_bfloat16_default(const std::vector<float>& x);
std::vector<mixprec::bfloat16> to_bfloat16_native(const std::vector<float>& x);
std::vector<float> gemm_default(const std::vector<float>& a, const std::vector<float>& b, std::size_t m, std::size_t n,
                                std::size_t k);
std::vector<float> gemm_native(const std::vector<float>& a, const std::vector<float>& b, std::size_t m, std::size_t n,
                               std::size_t k);

TEST_CASE("kernels from translation units with different -march agree") {
  std::mt19937 rng(11);
  std::vector<float> x(100003);
  for (auto& v : x) v = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
  const auto a = to_bfloat16_default(x);
  const auto b = to_bfloat16_native(x);
  for (std::size_t i = 0; i < x.size(); ++i) {
    REQUIRE(a[i].to_bits() == mixprec::bfloat16(x[i]).to_bits());
    REQUIRE(b[i].to_bits() == a[i].to_bits());
  }
}

TEST_CASE("GEMMs from translation units with different -march agree") {
  // Both dispatch to the best target this CPU runs: the same bits, whichever TU's loop nest runs.
  constexpr std::size_t m = 37, n = 29, k = 300;
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> a(m * k), b(k * n);
  for (auto& v : a) v = value(rng);
  for (auto& v : b) v = value(rng);
  const auto c_default = gemm_default(a, b, m, n, k);
  const auto c_native = gemm_native(a, b, m, n, k);
  REQUIRE(c_default.size() == m * n);
  for (std::size_t i = 0; i < m * n; ++i)
    REQUIRE(std::bit_cast<std::uint32_t>(c_default[i]) == std::bit_cast<std::uint32_t>(c_native[i]));
  double reference = 0.0;  // one element against float64
  for (std::size_t p = 0; p < k; ++p) reference += static_cast<double>(a[p]) * static_cast<double>(b[p * n]);
  CHECK(static_cast<double>(c_default[0]) == doctest::Approx(reference).epsilon(1e-4));
}
