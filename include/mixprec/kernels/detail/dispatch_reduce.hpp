// Reduction dispatch tables and entry point definitions (included once, by implementation.hpp).
#pragma once

#include <hwy/highway.h>
#include <mixprec/kernels/detail/export.hpp>
#include <mixprec/kernels/detail/reduce_entry_points.hpp>

namespace mixprec::kernels {

MIXPREC_KERNELS_EXPORT(AllFinite);
MIXPREC_KERNELS_EXPORT(Amax);
MIXPREC_KERNELS_EXPORT(Sum);
MIXPREC_KERNELS_EXPORT(Dot);
MIXPREC_KERNELS_EXPORT(UnscaleAndCheckFinite);
MIXPREC_KERNELS_EXPORT(ColumnSum);
MIXPREC_KERNELS_EXPORT(ColumnMax);
MIXPREC_KERNELS_EXPORT(ColumnMaxBackward);
MIXPREC_KERNELS_EXPORT(BatchNormMomentsF32);
MIXPREC_KERNELS_EXPORT(ScaleShiftColumnsF32);
MIXPREC_KERNELS_EXPORT(BatchNormBackwardSumsF32);
MIXPREC_KERNELS_EXPORT(BatchNormInputGradientF32);

namespace detail {

template <class T>
bool all_finite(const T* x, std::size_t n) {
  return MIXPREC_KERNELS_DISPATCH_FOR(AllFinite, T)(x, n);
}
template <class T>
float amax(const T* x, std::size_t n) {
  return MIXPREC_KERNELS_DISPATCH_FOR(Amax, T)(x, n);
}
template <class T>
float sum(const T* x, std::size_t n) {
  return MIXPREC_KERNELS_DISPATCH_FOR(Sum, T)(x, n);
}
template <class T>
float dot(const T* a, const T* b, std::size_t n) {
  return MIXPREC_KERNELS_DISPATCH_FOR(Dot, T)(a, b, n);
}
template <class T>
bool unscale_and_check_finite(T* g, std::size_t n, float inv_scale) {
  return MIXPREC_KERNELS_DISPATCH_FOR(UnscaleAndCheckFinite, T)(g, n, inv_scale);
}
template <class T>
void column_sum(const T* x, std::size_t n, float* sums, std::size_t cols, bool accumulate) {
  MIXPREC_KERNELS_DISPATCH_FOR(ColumnSum, T)(x, n, sums, cols, accumulate);
}

template <class T>
void column_max(const T* rows, std::size_t n, T* maxima, std::size_t cols) {
  MIXPREC_KERNELS_DISPATCH_FOR(ColumnMax, T)(rows, n, maxima, cols);
}
template <class T>
void column_max_backward(const T* x, const T* maxima, const T* dmaxima, float* dx, std::size_t cols, std::size_t rows,
                         std::size_t row_length, std::size_t row_stride) {
  MIXPREC_KERNELS_DISPATCH_FOR(ColumnMaxBackward, T)(x, maxima, dmaxima, dx, cols, rows, row_length, row_stride);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void batch_norm_moments_f32(const float* x, std::size_t n, std::size_t cols, double* mean,
                                               double* variance) {
  MIXPREC_KERNELS_DISPATCH(BatchNormMomentsF32)(x, n, cols, mean, variance);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void scale_shift_columns_f32(const float* x, std::size_t n, std::size_t cols, const float* scale,
                                                const float* shift, float* y) {
  MIXPREC_KERNELS_DISPATCH(ScaleShiftColumnsF32)(x, n, cols, scale, shift, y);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void batch_norm_backward_sums_f32(const float* x, const float* dy, std::size_t n, std::size_t cols,
                                                     const float* mean, const float* inverse_deviation, double* sum_dy,
                                                     double* sum_dy_x_hat) {
  MIXPREC_KERNELS_DISPATCH(BatchNormBackwardSumsF32)(x, dy, n, cols, mean, inverse_deviation, sum_dy, sum_dy_x_hat);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void batch_norm_input_gradient_f32(const float* x, const float* dy, std::size_t n, std::size_t cols,
                                                      const float* mean, const float* inverse_deviation,
                                                      const float* factor, const float* mean_dy,
                                                      const float* mean_dy_x_hat, float* dx) {
  MIXPREC_KERNELS_DISPATCH(BatchNormInputGradientF32)(x, dy, n, cols, mean, inverse_deviation, factor, mean_dy,
                                                  mean_dy_x_hat, dx);
}
#ifdef MIXPREC_SEPARATE_KERNELS
// Single-TU mode: the entry points of every dtype of has_reduce_kernel.
#define MIXPREC_KERNELS_INSTANTIATE_REDUCE(T)                     \
  template bool all_finite(const T*, std::size_t);                \
  template float amax(const T*, std::size_t);                     \
  template float sum(const T*, std::size_t);                      \
  template float dot(const T*, const T*, std::size_t);            \
  template bool unscale_and_check_finite(T*, std::size_t, float); \
  template void column_sum(const T*, std::size_t, float*, std::size_t, bool);  \
  template void column_max(const T*, std::size_t, T*, std::size_t);            \
  template void column_max_backward(const T*, const T*, const T*, float*, std::size_t, std::size_t, std::size_t, std::size_t);
MIXPREC_KERNELS_INSTANTIATE_REDUCE(float)
MIXPREC_KERNELS_INSTANTIATE_REDUCE(bfloat16)
MIXPREC_KERNELS_INSTANTIATE_REDUCE(float16)
#undef MIXPREC_KERNELS_INSTANTIATE_REDUCE
#endif

}  // namespace detail
}  // namespace mixprec::kernels
