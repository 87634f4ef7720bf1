// Conversion dispatch tables and entry point definitions (included once, by implementation.hpp).
#pragma once

#include <hwy/highway.h>
#include <mixprec/kernels/detail/export.hpp>
#include <mixprec/kernels/detail/convert_entry_points.hpp>

namespace mixprec::kernels {

MIXPREC_KERNELS_EXPORT(ConvertF32ToBF16);
MIXPREC_KERNELS_EXPORT(ConvertBF16ToF32);
MIXPREC_KERNELS_EXPORT(ConvertF32ToF16);
MIXPREC_KERNELS_EXPORT(ConvertF16ToF32);
MIXPREC_KERNELS_EXPORT(ConvertF64ToF32);
MIXPREC_KERNELS_EXPORT(ConvertBF16ToF16);
MIXPREC_KERNELS_EXPORT(ConvertF16ToBF16);
MIXPREC_KERNELS_EXPORT(ConvertF32ToE4M3);
MIXPREC_KERNELS_EXPORT(ConvertE4M3ToF32);
MIXPREC_KERNELS_EXPORT(ConvertF32ToE5M2);
MIXPREC_KERNELS_EXPORT(ConvertE5M2ToF32);
MIXPREC_KERNELS_EXPORT(QuantizeF32ToI8);
MIXPREC_KERNELS_EXPORT(ConvertUsesNativeBF16);

namespace detail {

MIXPREC_KERNEL_ENTRY_DEFINITION void convert_f32_to_bf16(const float* from, bfloat16* to, std::size_t n) {
  MIXPREC_KERNELS_DISPATCH(ConvertF32ToBF16)(from, to, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void convert_bf16_to_f32(const bfloat16* from, float* to, std::size_t n) {
  MIXPREC_KERNELS_DISPATCH(ConvertBF16ToF32)(from, to, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void convert_f32_to_f16(const float* from, float16* to, std::size_t n) {
  MIXPREC_KERNELS_DISPATCH(ConvertF32ToF16)(from, to, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void convert_f16_to_f32(const float16* from, float* to, std::size_t n) {
  MIXPREC_KERNELS_DISPATCH(ConvertF16ToF32)(from, to, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void convert_f64_to_f32(const double* from, float* to, std::size_t n) {
  MIXPREC_KERNELS_DISPATCH(ConvertF64ToF32)(from, to, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void convert_bf16_to_f16(const bfloat16* from, float16* to, std::size_t n) {
  MIXPREC_KERNELS_DISPATCH(ConvertBF16ToF16)(from, to, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void convert_f16_to_bf16(const float16* from, bfloat16* to, std::size_t n) {
  MIXPREC_KERNELS_DISPATCH(ConvertF16ToBF16)(from, to, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void convert_f32_to_e4m3(const float* from, float8_e4m3fn* to, std::size_t n, bool saturate) {
  MIXPREC_KERNELS_DISPATCH(ConvertF32ToE4M3)(from, to, n, saturate);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void convert_e4m3_to_f32(const float8_e4m3fn* from, float* to, std::size_t n) {
  MIXPREC_KERNELS_DISPATCH(ConvertE4M3ToF32)(from, to, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void convert_f32_to_e5m2(const float* from, float8_e5m2* to, std::size_t n, bool saturate) {
  MIXPREC_KERNELS_DISPATCH(ConvertF32ToE5M2)(from, to, n, saturate);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void convert_e5m2_to_f32(const float8_e5m2* from, float* to, std::size_t n) {
  MIXPREC_KERNELS_DISPATCH(ConvertE5M2ToF32)(from, to, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void quantize_f32_to_i8(const float* from, float scale, std::int8_t* to, std::size_t n) {
  MIXPREC_KERNELS_DISPATCH(QuantizeF32ToI8)(from, scale, to, n);
}
MIXPREC_KERNEL_ENTRY_DEFINITION bool convert_uses_native_bf16() { return MIXPREC_KERNELS_DISPATCH(ConvertUsesNativeBF16)(); }

}  // namespace detail
}  // namespace mixprec::kernels
