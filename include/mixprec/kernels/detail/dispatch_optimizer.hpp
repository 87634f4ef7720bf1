// Optimizer dispatch tables and entry point definitions (included once, by implementation.hpp).
#pragma once

#include <hwy/highway.h>
#include <mixprec/kernels/detail/export.hpp>
#include <mixprec/kernels/detail/optimizer_entry_points.hpp>

namespace mixprec::kernels {

MIXPREC_KERNELS_EXPORT(SgdUpdate);
MIXPREC_KERNELS_EXPORT(AdamUpdate);
MIXPREC_KERNELS_EXPORT(ClipByValue);
MIXPREC_KERNELS_EXPORT(Scale);

namespace detail {

template <class V>
void sgd_update(V* w, const V* g, V* velocity, std::size_t n, const sgd_step& step) {
  MIXPREC_KERNELS_DISPATCH_FOR(SgdUpdate, V)(w, g, velocity, n, step);
}
template <class V>
void adam_update(V* w, const V* g, V* m, V* v, V* v_hat, std::size_t n, const adam_scalars& step) {
  MIXPREC_KERNELS_DISPATCH_FOR(AdamUpdate, V)(w, g, m, v, v_hat, n, step);
}
template <class V>
void clip_by_value(V* g, std::size_t n, float clip) {
  MIXPREC_KERNELS_DISPATCH_FOR(ClipByValue, V)(g, n, clip);
}
template <class V>
void scale(V* g, std::size_t n, float multiplier, float divisor) {
  MIXPREC_KERNELS_DISPATCH_FOR(Scale, V)(g, n, multiplier, divisor);
}

#ifdef MIXPREC_SEPARATE_KERNELS
// Single-TU mode: the entry points of every dtype of has_optimizer_kernel.
#define MIXPREC_KERNELS_INSTANTIATE_OPTIMIZER(V)                                              \
  template void sgd_update(V*, const V*, V*, std::size_t, const sgd_step&);                   \
  template void adam_update(V*, const V*, V*, V*, V*, std::size_t, const adam_scalars&);      \
  template void clip_by_value(V*, std::size_t, float);                                        \
  template void scale(V*, std::size_t, float, float);
MIXPREC_KERNELS_INSTANTIATE_OPTIMIZER(float)
MIXPREC_KERNELS_INSTANTIATE_OPTIMIZER(bfloat16)
MIXPREC_KERNELS_INSTANTIATE_OPTIMIZER(float16)
#undef MIXPREC_KERNELS_INSTANTIATE_OPTIMIZER
#endif

}  // namespace detail
}  // namespace mixprec::kernels
