// Elementwise dispatch tables and entry point definitions (included once, by implementation.hpp).
#pragma once

#include <hwy/highway.h>
#include <mixprec/kernels/detail/elementwise_entry_points.hpp>
#include <mixprec/kernels/detail/export.hpp>

namespace mixprec::kernels {

MIXPREC_KERNELS_EXPORT(Activate);
MIXPREC_KERNELS_EXPORT(ActivationBackward);
MIXPREC_KERNELS_EXPORT(BiasAdd);
MIXPREC_KERNELS_EXPORT(SoftmaxRows);
MIXPREC_KERNELS_EXPORT(SoftmaxRowsBackward);
MIXPREC_KERNELS_EXPORT(BiasActivation);
MIXPREC_KERNELS_EXPORT(AddRowsF32);

namespace detail {

template <class T>
void activate(activation a, const T* x, T* y, std::size_t n) {
  MIXPREC_KERNELS_DISPATCH_FOR(Activate, T)(a, x, y, n);
}
template <class T>
void activation_backward(activation a, const T* x, const T* dy, T* dx, std::size_t n) {
  MIXPREC_KERNELS_DISPATCH_FOR(ActivationBackward, T)(a, x, dy, dx, n);
}
template <class T>
void bias_add(T* rows, std::size_t n, const T* bias, std::size_t cols) {
  MIXPREC_KERNELS_DISPATCH_FOR(BiasAdd, T)(rows, n, bias, cols);
}
template <class T>
void softmax_rows(const T* x, T* y, std::size_t n, std::size_t cols) {
  MIXPREC_KERNELS_DISPATCH_FOR(SoftmaxRows, T)(x, y, n, cols);
}
template <class T>
void softmax_rows_backward(const T* y, const T* dy, T* dx, std::size_t n, std::size_t cols) {
  MIXPREC_KERNELS_DISPATCH_FOR(SoftmaxRowsBackward, T)(y, dy, dx, n, cols);
}
template <class T>
void bias_activation(const float* acc, const T* bias, activation a, T* y, std::size_t n, std::size_t cols) {
  MIXPREC_KERNELS_DISPATCH_FOR(BiasActivation, T)(acc, bias, a, y, n, cols);
}

MIXPREC_KERNEL_ENTRY_DEFINITION void add_rows_f32(const float* from, std::size_t from_stride, float* to, std::size_t to_stride,
                                     std::size_t rows, std::size_t row_length) {
  MIXPREC_KERNELS_DISPATCH(AddRowsF32)(from, from_stride, to, to_stride, rows, row_length);
}
#ifdef MIXPREC_SEPARATE_KERNELS
// Single-TU mode: the entry points of every dtype of has_elementwise_kernel.
#define MIXPREC_KERNELS_INSTANTIATE_ELEMENTWISE(T)                                                \
  template void activate(activation, const T*, T*, std::size_t);                                  \
  template void activation_backward(activation, const T*, const T*, T*, std::size_t);             \
  template void bias_add(T*, std::size_t, const T*, std::size_t);                                 \
  template void softmax_rows(const T*, T*, std::size_t, std::size_t);                             \
  template void softmax_rows_backward(const T*, const T*, T*, std::size_t, std::size_t);          \
  template void bias_activation(const float*, const T*, activation, T*, std::size_t, std::size_t);
MIXPREC_KERNELS_INSTANTIATE_ELEMENTWISE(float)
MIXPREC_KERNELS_INSTANTIATE_ELEMENTWISE(bfloat16)
MIXPREC_KERNELS_INSTANTIATE_ELEMENTWISE(float16)
#undef MIXPREC_KERNELS_INSTANTIATE_ELEMENTWISE
#endif

}  // namespace detail
}  // namespace mixprec::kernels
