// Reduction dispatch tables and entry point definitions (included once, by implementation.hpp).
#pragma once

#include <hwy/highway.h>
#include <mixprec/kernels/detail/export.hpp>
#include <mixprec/kernels/detail/reduce_entry_points.hpp>

namespace mixprec::kernels {

MIXPREC_KERNELS_EXPORT(AllFiniteF32);
MIXPREC_KERNELS_EXPORT(AllFiniteBF16);
MIXPREC_KERNELS_EXPORT(AllFiniteF16);
MIXPREC_KERNELS_EXPORT(AmaxF32);
MIXPREC_KERNELS_EXPORT(AmaxBF16);
MIXPREC_KERNELS_EXPORT(AmaxF16);
MIXPREC_KERNELS_EXPORT(SumF32);
MIXPREC_KERNELS_EXPORT(SumBF16);
MIXPREC_KERNELS_EXPORT(SumF16);
MIXPREC_KERNELS_EXPORT(DotF32);
MIXPREC_KERNELS_EXPORT(DotBF16);
MIXPREC_KERNELS_EXPORT(DotF16);
MIXPREC_KERNELS_EXPORT(UnscaleAndCheckFiniteF32);
MIXPREC_KERNELS_EXPORT(UnscaleAndCheckFiniteBF16);
MIXPREC_KERNELS_EXPORT(UnscaleAndCheckFiniteF16);
MIXPREC_KERNELS_EXPORT(ColumnMaxF32);
MIXPREC_KERNELS_EXPORT(ColumnMaxBackwardF32);
MIXPREC_KERNELS_EXPORT(BatchNormMomentsF32);
MIXPREC_KERNELS_EXPORT(ScaleShiftColumnsF32);
MIXPREC_KERNELS_EXPORT(BatchNormBackwardSumsF32);
MIXPREC_KERNELS_EXPORT(BatchNormInputGradientF32);
MIXPREC_KERNELS_EXPORT(ColumnSumF32);
MIXPREC_KERNELS_EXPORT(ColumnSumBF16);
MIXPREC_KERNELS_EXPORT(ColumnSumF16);

namespace detail {

MIXPREC_KERNEL_ENTRY_DEFINITION bool all_finite_f32(const float* x, std::size_t n) {
  return MIXPREC_KERNELS_DISPATCH(AllFiniteF32)(x, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION bool all_finite_bf16(const bfloat16* x, std::size_t n) {
  return MIXPREC_KERNELS_DISPATCH(AllFiniteBF16)(x, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION bool all_finite_f16(const float16* x, std::size_t n) {
  return MIXPREC_KERNELS_DISPATCH(AllFiniteF16)(x, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION float amax_f32(const float* x, std::size_t n) {
  return MIXPREC_KERNELS_DISPATCH(AmaxF32)(x, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION float amax_bf16(const bfloat16* x, std::size_t n) {
  return MIXPREC_KERNELS_DISPATCH(AmaxBF16)(x, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION float amax_f16(const float16* x, std::size_t n) {
  return MIXPREC_KERNELS_DISPATCH(AmaxF16)(x, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION float sum_f32(const float* x, std::size_t n) {
  return MIXPREC_KERNELS_DISPATCH(SumF32)(x, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION float sum_bf16(const bfloat16* x, std::size_t n) {
  return MIXPREC_KERNELS_DISPATCH(SumBF16)(x, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION float sum_f16(const float16* x, std::size_t n) {
  return MIXPREC_KERNELS_DISPATCH(SumF16)(x, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION float dot_f32(const float* a, const float* b, std::size_t n) {
  return MIXPREC_KERNELS_DISPATCH(DotF32)(a, b, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION float dot_bf16(const bfloat16* a, const bfloat16* b, std::size_t n) {
  return MIXPREC_KERNELS_DISPATCH(DotBF16)(a, b, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION float dot_f16(const float16* a, const float16* b, std::size_t n) {
  return MIXPREC_KERNELS_DISPATCH(DotF16)(a, b, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION bool unscale_and_check_finite_f32(float* g, std::size_t n, float inv_scale) {
  return MIXPREC_KERNELS_DISPATCH(UnscaleAndCheckFiniteF32)(g, n, inv_scale);
}
MIXPREC_KERNEL_ENTRY_DEFINITION bool unscale_and_check_finite_bf16(bfloat16* g, std::size_t n, float inv_scale) {
  return MIXPREC_KERNELS_DISPATCH(UnscaleAndCheckFiniteBF16)(g, n, inv_scale);
}
MIXPREC_KERNEL_ENTRY_DEFINITION bool unscale_and_check_finite_f16(float16* g, std::size_t n, float inv_scale) {
  return MIXPREC_KERNELS_DISPATCH(UnscaleAndCheckFiniteF16)(g, n, inv_scale);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void column_max_f32(const float* rows, std::size_t n, float* maxima, std::size_t cols) {
  MIXPREC_KERNELS_DISPATCH(ColumnMaxF32)(rows, n, maxima, cols);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void column_max_backward_f32(const float* x, const float* maxima, const float* dmaxima, float* dx,
                                                std::size_t cols, std::size_t rows, std::size_t row_length,
                                                std::size_t row_stride) {
  MIXPREC_KERNELS_DISPATCH(ColumnMaxBackwardF32)(x, maxima, dmaxima, dx, cols, rows, row_length, row_stride);
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
MIXPREC_KERNEL_ENTRY_DEFINITION void column_sum_f32(const float* x, std::size_t n, float* sums, std::size_t cols, bool accumulate) {
  MIXPREC_KERNELS_DISPATCH(ColumnSumF32)(x, n, sums, cols, accumulate);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void column_sum_bf16(const bfloat16* x, std::size_t n, float* sums, std::size_t cols,
                                        bool accumulate) {
  MIXPREC_KERNELS_DISPATCH(ColumnSumBF16)(x, n, sums, cols, accumulate);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void column_sum_f16(const float16* x, std::size_t n, float* sums, std::size_t cols,
                                       bool accumulate) {
  MIXPREC_KERNELS_DISPATCH(ColumnSumF16)(x, n, sums, cols, accumulate);
}

}  // namespace detail
}  // namespace mixprec::kernels
