// mixprec::float16 (IEEE binary16) and mixprec::bfloat16 (brain float).
//
// Both are 2-byte, trivially copyable and bit-compatible with Eigen::half and
// Eigen::bfloat16 (std::bit_cast between them is exact). Conversions from float and
// double round to nearest even; NaN stays a quiet NaN; overflow gives infinity.
#pragma once

#include <cstdint>

#include <mixprec/core/detail/narrow_float.hpp>

namespace mixprec {

struct float16 : detail::narrow_float<float16, detail::binary16_format, std::uint16_t> {
  using narrow_float::narrow_float;
};

struct bfloat16 : detail::narrow_float<bfloat16, detail::bfloat16_format, std::uint16_t> {
  using narrow_float::narrow_float;
};

static_assert(sizeof(float16) == 2 && std::is_trivially_copyable_v<float16>);
static_assert(sizeof(bfloat16) == 2 && std::is_trivially_copyable_v<bfloat16>);

}  // namespace mixprec
