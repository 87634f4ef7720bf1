// Elementwise entry points: plain pointers and sizes, no Highway types. Each call dispatches to
// the best compiled target for this CPU (or the one forced with kernels::target_scope).
// The typed public API, and what each function computes, is elementwise.hpp. Sizes are checked
// there: here n is a multiple of cols, cols > 0, and every activation is_elementwise.
#pragma once

#include <cstddef>
#include <type_traits>

#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/activation.hpp>
#include <mixprec/kernels/config.hpp>

namespace mixprec::kernels {

namespace detail {

/// The dtypes the elementwise kernels take (elementwise.hpp runs scalar loops for double). The
/// entry points below, add_rows_f32 (float only) aside, are templates over them in both modes:
/// header-only mode compiles a dtype's kernel where it is called; in single-TU mode the kernels'
/// translation unit instantiates them for each of these dtypes (dispatch_elementwise.hpp) and
/// every other one sees these declarations.
template <class T>
inline constexpr bool has_elementwise_kernel =
    std::is_same_v<T, float> || std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>;

template <class T>
void activate(activation a, const T* x, T* y, std::size_t n);
template <class T>
void activation_backward(activation a, const T* x, const T* dy, T* dx, std::size_t n);
template <class T>
void bias_add(T* rows, std::size_t n, const T* bias, std::size_t cols);
template <class T>
void softmax_rows(const T* x, T* y, std::size_t n, std::size_t cols);
template <class T>
void softmax_rows_backward(const T* y, const T* dy, T* dx, std::size_t n, std::size_t cols);
/// bias == nullptr: no bias.
template <class T>
void bias_activation(const float* acc, const T* bias, activation a, T* y, std::size_t n, std::size_t cols);

/// to[r * to_stride + i] += from[r * from_stride + i] for r < rows, i < row_length, rows in order.
MIXPREC_KERNEL_ENTRY void add_rows_f32(const float* from, std::size_t from_stride, float* to, std::size_t to_stride,
                                     std::size_t rows, std::size_t row_length);

}  // namespace detail
}  // namespace mixprec::kernels
