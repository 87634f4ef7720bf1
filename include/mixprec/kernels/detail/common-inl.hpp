// Per-target helpers shared by the kernel families. Toggle-guarded: compiled once per target.
#if defined(MIXPREC_KERNELS_COMMON_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef MIXPREC_KERNELS_COMMON_INL_HPP_
#undef MIXPREC_KERNELS_COMMON_INL_HPP_
#else
#define MIXPREC_KERNELS_COMMON_INL_HPP_
#endif

#include <cstddef>
#include <cstring>

#include <hwy/highway.h>
#include <mixprec/kernels/detail/kernel_macros.hpp>

MIXPREC_KERNELS_BEGIN
namespace hn = hwy::HWY_NAMESPACE;

/// Runs `block(in, out)` over `n` elements in steps of `lanes`. The last partial step runs the
/// same code on zero-padded copies, so a ragged tail is computed exactly as a full block would be.
template <std::size_t MaxLanes, class In, class Out, class Block>
HWY_INLINE void for_each_block(const In* in, Out* out, std::size_t n, std::size_t lanes, Block&& block) {
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) block(in + i, out + i);
  if (i == n) return;
  In in_tail[MaxLanes] = {};
  Out out_tail[MaxLanes];
  std::memcpy(in_tail, in + i, (n - i) * sizeof(In));
  block(in_tail, out_tail);
  std::memcpy(out + i, out_tail, (n - i) * sizeof(Out));
}

/// Round to nearest integer, ties to even, for |x| < 2^22 (adding 1.5 * 2^23 leaves no
/// fraction bits, so the FPU's default rounding does the work on every target alike).
template <class D>
HWY_INLINE hn::Vec<D> round_half_even_small(D d, hn::Vec<D> x) {
  const auto magic = hn::Set(d, 12582912.0f);  // 1.5 * 2^23
  return hn::Sub(hn::Add(x, magic), magic);
}

MIXPREC_KERNELS_END

#endif  // toggle guard
