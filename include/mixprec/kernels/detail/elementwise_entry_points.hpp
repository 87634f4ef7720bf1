// Elementwise entry points: plain pointers and sizes, no Highway types. Each call dispatches to
// the best compiled target for this CPU (or the one forced with kernels::target_scope).
// The typed public API, and what each function computes, is elementwise.hpp. Sizes are checked
// there: here n is a multiple of cols, cols > 0, and every activation is_elementwise.
#pragma once

#include <cstddef>

#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/activation.hpp>
#include <mixprec/kernels/config.hpp>

namespace mixprec::kernels {

namespace detail {

MIXPREC_KERNEL_ENTRY void activate_f32(activation a, const float* x, float* y, std::size_t n);
MIXPREC_KERNEL_ENTRY void activate_bf16(activation a, const bfloat16* x, bfloat16* y, std::size_t n);
MIXPREC_KERNEL_ENTRY void activate_f16(activation a, const float16* x, float16* y, std::size_t n);
MIXPREC_KERNEL_ENTRY void activation_backward_f32(activation a, const float* x, const float* dy, float* dx, std::size_t n);
MIXPREC_KERNEL_ENTRY void activation_backward_bf16(activation a, const bfloat16* x, const bfloat16* dy, bfloat16* dx,
                                                 std::size_t n);
MIXPREC_KERNEL_ENTRY void activation_backward_f16(activation a, const float16* x, const float16* dy, float16* dx,
                                                std::size_t n);
/// to[r * to_stride + i] += from[r * from_stride + i] for r < rows, i < row_length, rows in order.
MIXPREC_KERNEL_ENTRY void add_rows_f32(const float* from, std::size_t from_stride, float* to, std::size_t to_stride,
                                     std::size_t rows, std::size_t row_length);
MIXPREC_KERNEL_ENTRY void bias_add_f32(float* rows, std::size_t n, const float* bias, std::size_t cols);
MIXPREC_KERNEL_ENTRY void bias_add_bf16(bfloat16* rows, std::size_t n, const bfloat16* bias, std::size_t cols);
MIXPREC_KERNEL_ENTRY void bias_add_f16(float16* rows, std::size_t n, const float16* bias, std::size_t cols);
MIXPREC_KERNEL_ENTRY void softmax_rows_f32(const float* x, float* y, std::size_t n, std::size_t cols);
MIXPREC_KERNEL_ENTRY void softmax_rows_bf16(const bfloat16* x, bfloat16* y, std::size_t n, std::size_t cols);
MIXPREC_KERNEL_ENTRY void softmax_rows_f16(const float16* x, float16* y, std::size_t n, std::size_t cols);
MIXPREC_KERNEL_ENTRY void softmax_rows_backward_f32(const float* y, const float* dy, float* dx, std::size_t n,
                                                  std::size_t cols);
MIXPREC_KERNEL_ENTRY void softmax_rows_backward_bf16(const bfloat16* y, const bfloat16* dy, bfloat16* dx, std::size_t n,
                                                   std::size_t cols);
MIXPREC_KERNEL_ENTRY void softmax_rows_backward_f16(const float16* y, const float16* dy, float16* dx, std::size_t n,
                                                  std::size_t cols);
/// bias == nullptr: no bias.
MIXPREC_KERNEL_ENTRY void bias_activation_f32(const float* acc, const float* bias, activation a, float* y, std::size_t n,
                                            std::size_t cols);
MIXPREC_KERNEL_ENTRY void bias_activation_bf16(const float* acc, const bfloat16* bias, activation a, bfloat16* y,
                                             std::size_t n, std::size_t cols);
MIXPREC_KERNEL_ENTRY void bias_activation_f16(const float* acc, const float16* bias, activation a, float16* y,
                                            std::size_t n, std::size_t cols);

}  // namespace detail
}  // namespace mixprec::kernels
