// Elementwise dispatch tables and entry point definitions (included once, by implementation.hpp).
#pragma once

#include <hwy/highway.h>
#include <mixprec/kernels/detail/elementwise_entry_points.hpp>

namespace mixprec::kernels {

HWY_EXPORT(ActivateF32);
HWY_EXPORT(ActivateBF16);
HWY_EXPORT(ActivateF16);
HWY_EXPORT(ActivationBackwardF32);
HWY_EXPORT(ActivationBackwardBF16);
HWY_EXPORT(ActivationBackwardF16);
HWY_EXPORT(BiasAddF32);
HWY_EXPORT(BiasAddBF16);
HWY_EXPORT(BiasAddF16);
HWY_EXPORT(SoftmaxRowsF32);
HWY_EXPORT(SoftmaxRowsBF16);
HWY_EXPORT(SoftmaxRowsF16);
HWY_EXPORT(SoftmaxRowsBackwardF32);
HWY_EXPORT(SoftmaxRowsBackwardBF16);
HWY_EXPORT(SoftmaxRowsBackwardF16);
HWY_EXPORT(AddRowsF32);
HWY_EXPORT(BiasActivationF32);
HWY_EXPORT(BiasActivationBF16);
HWY_EXPORT(BiasActivationF16);

namespace detail {

MIXPREC_KERNEL_API void activate_f32(activation a, const float* x, float* y, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(ActivateF32)(a, x, y, n);
}
MIXPREC_KERNEL_API void activate_bf16(activation a, const bfloat16* x, bfloat16* y, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(ActivateBF16)(a, x, y, n);
}
MIXPREC_KERNEL_API void activate_f16(activation a, const float16* x, float16* y, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(ActivateF16)(a, x, y, n);
}
MIXPREC_KERNEL_API void activation_backward_f32(activation a, const float* x, const float* dy, float* dx, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(ActivationBackwardF32)(a, x, dy, dx, n);
}
MIXPREC_KERNEL_API void activation_backward_bf16(activation a, const bfloat16* x, const bfloat16* dy, bfloat16* dx,
    std::size_t n) {
  HWY_DYNAMIC_DISPATCH(ActivationBackwardBF16)(a, x, dy, dx, n);
}
MIXPREC_KERNEL_API void activation_backward_f16(activation a, const float16* x, const float16* dy, float16* dx,
    std::size_t n) {
  HWY_DYNAMIC_DISPATCH(ActivationBackwardF16)(a, x, dy, dx, n);
}
MIXPREC_KERNEL_API void add_rows_f32(const float* from, std::size_t from_stride, float* to, std::size_t to_stride,
                                     std::size_t rows, std::size_t row_length) {
  HWY_DYNAMIC_DISPATCH(AddRowsF32)(from, from_stride, to, to_stride, rows, row_length);
}
MIXPREC_KERNEL_API void bias_add_f32(float* rows, std::size_t n, const float* bias, std::size_t cols) {
  HWY_DYNAMIC_DISPATCH(BiasAddF32)(rows, n, bias, cols);
}
MIXPREC_KERNEL_API void bias_add_bf16(bfloat16* rows, std::size_t n, const bfloat16* bias, std::size_t cols) {
  HWY_DYNAMIC_DISPATCH(BiasAddBF16)(rows, n, bias, cols);
}
MIXPREC_KERNEL_API void bias_add_f16(float16* rows, std::size_t n, const float16* bias, std::size_t cols) {
  HWY_DYNAMIC_DISPATCH(BiasAddF16)(rows, n, bias, cols);
}
MIXPREC_KERNEL_API void softmax_rows_f32(const float* x, float* y, std::size_t n, std::size_t cols) {
  HWY_DYNAMIC_DISPATCH(SoftmaxRowsF32)(x, y, n, cols);
}
MIXPREC_KERNEL_API void softmax_rows_bf16(const bfloat16* x, bfloat16* y, std::size_t n, std::size_t cols) {
  HWY_DYNAMIC_DISPATCH(SoftmaxRowsBF16)(x, y, n, cols);
}
MIXPREC_KERNEL_API void softmax_rows_f16(const float16* x, float16* y, std::size_t n, std::size_t cols) {
  HWY_DYNAMIC_DISPATCH(SoftmaxRowsF16)(x, y, n, cols);
}
MIXPREC_KERNEL_API void softmax_rows_backward_f32(const float* y, const float* dy, float* dx, std::size_t n,
    std::size_t cols) {
  HWY_DYNAMIC_DISPATCH(SoftmaxRowsBackwardF32)(y, dy, dx, n, cols);
}
MIXPREC_KERNEL_API void softmax_rows_backward_bf16(const bfloat16* y, const bfloat16* dy, bfloat16* dx, std::size_t n,
    std::size_t cols) {
  HWY_DYNAMIC_DISPATCH(SoftmaxRowsBackwardBF16)(y, dy, dx, n, cols);
}
MIXPREC_KERNEL_API void softmax_rows_backward_f16(const float16* y, const float16* dy, float16* dx, std::size_t n,
    std::size_t cols) {
  HWY_DYNAMIC_DISPATCH(SoftmaxRowsBackwardF16)(y, dy, dx, n, cols);
}
MIXPREC_KERNEL_API void bias_activation_f32(const float* acc, const float* bias, activation a, float* y, std::size_t n,
    std::size_t cols) {
  HWY_DYNAMIC_DISPATCH(BiasActivationF32)(acc, bias, a, y, n, cols);
}
MIXPREC_KERNEL_API void bias_activation_bf16(const float* acc, const bfloat16* bias, activation a, bfloat16* y, std::size_t n,
    std::size_t cols) {
  HWY_DYNAMIC_DISPATCH(BiasActivationBF16)(acc, bias, a, y, n, cols);
}
MIXPREC_KERNEL_API void bias_activation_f16(const float* acc, const float16* bias, activation a, float16* y, std::size_t n,
    std::size_t cols) {
  HWY_DYNAMIC_DISPATCH(BiasActivationF16)(acc, bias, a, y, n, cols);
}

}  // namespace detail
}  // namespace mixprec::kernels
