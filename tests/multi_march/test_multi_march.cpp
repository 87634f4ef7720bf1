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
