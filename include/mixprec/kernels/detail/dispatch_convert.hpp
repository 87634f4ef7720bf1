// Conversion dispatch tables and entry point definitions (included once, by implementation.hpp).
#pragma once

#include <hwy/highway.h>
#include <mixprec/kernels/detail/convert_entry_points.hpp>

namespace mixprec::kernels {

HWY_EXPORT(ConvertF32ToBF16);
HWY_EXPORT(ConvertBF16ToF32);
HWY_EXPORT(ConvertF32ToF16);
HWY_EXPORT(ConvertF16ToF32);
HWY_EXPORT(ConvertF64ToF32);
HWY_EXPORT(ConvertBF16ToF16);
HWY_EXPORT(ConvertF16ToBF16);
HWY_EXPORT(ConvertF32ToE4M3);
HWY_EXPORT(ConvertE4M3ToF32);
HWY_EXPORT(ConvertF32ToE5M2);
HWY_EXPORT(ConvertE5M2ToF32);
HWY_EXPORT(QuantizeF32ToI8);
HWY_EXPORT(ConvertUsesNativeBF16);

namespace detail {

MIXPREC_KERNEL_API void convert_f32_to_bf16(const float* from, bfloat16* to, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(ConvertF32ToBF16)(from, to, n);
}
MIXPREC_KERNEL_API void convert_bf16_to_f32(const bfloat16* from, float* to, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(ConvertBF16ToF32)(from, to, n);
}
MIXPREC_KERNEL_API void convert_f32_to_f16(const float* from, float16* to, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(ConvertF32ToF16)(from, to, n);
}
MIXPREC_KERNEL_API void convert_f16_to_f32(const float16* from, float* to, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(ConvertF16ToF32)(from, to, n);
}
MIXPREC_KERNEL_API void convert_f64_to_f32(const double* from, float* to, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(ConvertF64ToF32)(from, to, n);
}
MIXPREC_KERNEL_API void convert_bf16_to_f16(const bfloat16* from, float16* to, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(ConvertBF16ToF16)(from, to, n);
}
MIXPREC_KERNEL_API void convert_f16_to_bf16(const float16* from, bfloat16* to, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(ConvertF16ToBF16)(from, to, n);
}
MIXPREC_KERNEL_API void convert_f32_to_e4m3(const float* from, float8_e4m3fn* to, std::size_t n, bool saturate) {
  HWY_DYNAMIC_DISPATCH(ConvertF32ToE4M3)(from, to, n, saturate);
}
MIXPREC_KERNEL_API void convert_e4m3_to_f32(const float8_e4m3fn* from, float* to, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(ConvertE4M3ToF32)(from, to, n);
}
MIXPREC_KERNEL_API void convert_f32_to_e5m2(const float* from, float8_e5m2* to, std::size_t n, bool saturate) {
  HWY_DYNAMIC_DISPATCH(ConvertF32ToE5M2)(from, to, n, saturate);
}
MIXPREC_KERNEL_API void convert_e5m2_to_f32(const float8_e5m2* from, float* to, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(ConvertE5M2ToF32)(from, to, n);
}
MIXPREC_KERNEL_API void quantize_f32_to_i8(const float* from, float scale, std::int8_t* to, std::size_t n) {
  HWY_DYNAMIC_DISPATCH(QuantizeF32ToI8)(from, scale, to, n);
}
MIXPREC_KERNEL_API bool convert_uses_native_bf16() { return HWY_DYNAMIC_DISPATCH(ConvertUsesNativeBF16)(); }

}  // namespace detail
}  // namespace mixprec::kernels
