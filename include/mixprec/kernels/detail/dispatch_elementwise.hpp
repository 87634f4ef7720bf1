// Elementwise dispatch tables and entry point definitions (included once, by implementation.hpp).
#pragma once

#include <hwy/highway.h>
#include <mixprec/kernels/detail/elementwise_entry_points.hpp>
#include <mixprec/kernels/detail/export.hpp>

namespace mixprec::kernels {

MIXPREC_KERNELS_EXPORT(ActivateF32);
MIXPREC_KERNELS_EXPORT(ActivateBF16);
MIXPREC_KERNELS_EXPORT(ActivateF16);
MIXPREC_KERNELS_EXPORT(ActivationBackwardF32);
MIXPREC_KERNELS_EXPORT(ActivationBackwardBF16);
MIXPREC_KERNELS_EXPORT(ActivationBackwardF16);
MIXPREC_KERNELS_EXPORT(BiasAddF32);
MIXPREC_KERNELS_EXPORT(BiasAddBF16);
MIXPREC_KERNELS_EXPORT(BiasAddF16);
MIXPREC_KERNELS_EXPORT(SoftmaxRowsF32);
MIXPREC_KERNELS_EXPORT(SoftmaxRowsBF16);
MIXPREC_KERNELS_EXPORT(SoftmaxRowsF16);
MIXPREC_KERNELS_EXPORT(SoftmaxRowsBackwardF32);
MIXPREC_KERNELS_EXPORT(SoftmaxRowsBackwardBF16);
MIXPREC_KERNELS_EXPORT(SoftmaxRowsBackwardF16);
MIXPREC_KERNELS_EXPORT(AddRowsF32);
MIXPREC_KERNELS_EXPORT(BiasActivationF32);
MIXPREC_KERNELS_EXPORT(BiasActivationBF16);
MIXPREC_KERNELS_EXPORT(BiasActivationF16);

namespace detail {

MIXPREC_KERNEL_ENTRY_DEFINITION void activate_f32(activation a, const float* x, float* y, std::size_t n) {
  MIXPREC_KERNELS_DISPATCH(ActivateF32)(a, x, y, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void activate_bf16(activation a, const bfloat16* x, bfloat16* y, std::size_t n) {
  MIXPREC_KERNELS_DISPATCH(ActivateBF16)(a, x, y, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void activate_f16(activation a, const float16* x, float16* y, std::size_t n) {
  MIXPREC_KERNELS_DISPATCH(ActivateF16)(a, x, y, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void activation_backward_f32(activation a, const float* x, const float* dy, float* dx, std::size_t n) {
  MIXPREC_KERNELS_DISPATCH(ActivationBackwardF32)(a, x, dy, dx, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void activation_backward_bf16(activation a, const bfloat16* x, const bfloat16* dy, bfloat16* dx,
    std::size_t n) {
  MIXPREC_KERNELS_DISPATCH(ActivationBackwardBF16)(a, x, dy, dx, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void activation_backward_f16(activation a, const float16* x, const float16* dy, float16* dx,
    std::size_t n) {
  MIXPREC_KERNELS_DISPATCH(ActivationBackwardF16)(a, x, dy, dx, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void add_rows_f32(const float* from, std::size_t from_stride, float* to, std::size_t to_stride,
                                     std::size_t rows, std::size_t row_length) {
  MIXPREC_KERNELS_DISPATCH(AddRowsF32)(from, from_stride, to, to_stride, rows, row_length);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void bias_add_f32(float* rows, std::size_t n, const float* bias, std::size_t cols) {
  MIXPREC_KERNELS_DISPATCH(BiasAddF32)(rows, n, bias, cols);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void bias_add_bf16(bfloat16* rows, std::size_t n, const bfloat16* bias, std::size_t cols) {
  MIXPREC_KERNELS_DISPATCH(BiasAddBF16)(rows, n, bias, cols);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void bias_add_f16(float16* rows, std::size_t n, const float16* bias, std::size_t cols) {
  MIXPREC_KERNELS_DISPATCH(BiasAddF16)(rows, n, bias, cols);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void softmax_rows_f32(const float* x, float* y, std::size_t n, std::size_t cols) {
  MIXPREC_KERNELS_DISPATCH(SoftmaxRowsF32)(x, y, n, cols);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void softmax_rows_bf16(const bfloat16* x, bfloat16* y, std::size_t n, std::size_t cols) {
  MIXPREC_KERNELS_DISPATCH(SoftmaxRowsBF16)(x, y, n, cols);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void softmax_rows_f16(const float16* x, float16* y, std::size_t n, std::size_t cols) {
  MIXPREC_KERNELS_DISPATCH(SoftmaxRowsF16)(x, y, n, cols);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void softmax_rows_backward_f32(const float* y, const float* dy, float* dx, std::size_t n,
    std::size_t cols) {
  MIXPREC_KERNELS_DISPATCH(SoftmaxRowsBackwardF32)(y, dy, dx, n, cols);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void softmax_rows_backward_bf16(const bfloat16* y, const bfloat16* dy, bfloat16* dx, std::size_t n,
    std::size_t cols) {
  MIXPREC_KERNELS_DISPATCH(SoftmaxRowsBackwardBF16)(y, dy, dx, n, cols);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void softmax_rows_backward_f16(const float16* y, const float16* dy, float16* dx, std::size_t n,
    std::size_t cols) {
  MIXPREC_KERNELS_DISPATCH(SoftmaxRowsBackwardF16)(y, dy, dx, n, cols);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void bias_activation_f32(const float* acc, const float* bias, activation a, float* y, std::size_t n,
    std::size_t cols) {
  MIXPREC_KERNELS_DISPATCH(BiasActivationF32)(acc, bias, a, y, n, cols);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void bias_activation_bf16(const float* acc, const bfloat16* bias, activation a, bfloat16* y, std::size_t n,
    std::size_t cols) {
  MIXPREC_KERNELS_DISPATCH(BiasActivationBF16)(acc, bias, a, y, n, cols);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void bias_activation_f16(const float* acc, const float16* bias, activation a, float16* y, std::size_t n,
    std::size_t cols) {
  MIXPREC_KERNELS_DISPATCH(BiasActivationF16)(acc, bias, a, y, n, cols);
}

}  // namespace detail
}  // namespace mixprec::kernels
