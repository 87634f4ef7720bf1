// Conversion dispatch tables and entry point definitions (included once, by implementation.hpp).
#pragma once

#include <hwy/highway.h>
#include <mixprec/kernels/detail/export.hpp>
#include <mixprec/kernels/detail/convert_entry_points.hpp>

namespace mixprec::kernels {

MIXPREC_KERNELS_EXPORT(Convert);
MIXPREC_KERNELS_EXPORT(ConvertToFloat8);
MIXPREC_KERNELS_EXPORT(QuantizeF32ToI8);
MIXPREC_KERNELS_EXPORT(ConvertUsesNativeBF16);

namespace detail {

template <class From, class To>
void convert(const From* from, To* to, std::size_t n) {
  MIXPREC_KERNELS_DISPATCH_FOR(Convert, From, To)(from, to, n);
}
template <class To>
void convert(const float* from, To* to, std::size_t n, bool saturate) {
  MIXPREC_KERNELS_DISPATCH_FOR(ConvertToFloat8, To)(from, to, n, saturate);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void quantize_f32_to_i8(const float* from, float scale, std::int8_t* to, std::size_t n) {
  MIXPREC_KERNELS_DISPATCH(QuantizeF32ToI8)(from, scale, to, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION bool convert_uses_native_bf16() { return MIXPREC_KERNELS_DISPATCH(ConvertUsesNativeBF16)(); }

#ifdef MIXPREC_SEPARATE_KERNELS
// Single-TU mode: the entry points of every pair of has_convert_kernel and has_saturating_convert_kernel.
template void convert(const float*, bfloat16*, std::size_t);
template void convert(const float*, float16*, std::size_t);
template void convert(const bfloat16*, float*, std::size_t);
template void convert(const float16*, float*, std::size_t);
template void convert(const float8_e4m3fn*, float*, std::size_t);
template void convert(const float8_e5m2*, float*, std::size_t);
template void convert(const double*, float*, std::size_t);
template void convert(const bfloat16*, float16*, std::size_t);
template void convert(const float16*, bfloat16*, std::size_t);
template void convert(const float*, float8_e4m3fn*, std::size_t, bool);
template void convert(const float*, float8_e5m2*, std::size_t, bool);
#endif

}  // namespace detail
}  // namespace mixprec::kernels
