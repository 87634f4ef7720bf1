// int8 dispatch tables and entry point definitions, and the native int8 switch (included once,
// by int8_implementation.hpp).
#pragma once

#include <atomic>

#include <hwy/highway.h>
#include <mixprec/kernels/detail/export.hpp>
#include <mixprec/kernels/detail/gemm_native_int8.hpp>
#include <mixprec/kernels/detail/int8_entry_points.hpp>

namespace mixprec::kernels {

MIXPREC_KERNELS_EXPORT(GemmInt8);
MIXPREC_KERNELS_EXPORT(GemmInt8Kernel);
MIXPREC_KERNELS_EXPORT(QuantizeRowsF32);
MIXPREC_KERNELS_EXPORT(QuantizeRowsBF16);
MIXPREC_KERNELS_EXPORT(QuantizeRowsF64);
MIXPREC_KERNELS_EXPORT(DequantizeRowsF32);
MIXPREC_KERNELS_EXPORT(DequantizeRowsBF16);
MIXPREC_KERNELS_EXPORT(DequantizeRowsF64);
MIXPREC_KERNELS_EXPORT(QuantizeDequantizeE4M3F32);
MIXPREC_KERNELS_EXPORT(QuantizeDequantizeE4M3BF16);
MIXPREC_KERNELS_EXPORT(QuantizeDequantizeE4M3F16);
MIXPREC_KERNELS_EXPORT(QuantizeDequantizeE5M2F32);
MIXPREC_KERNELS_EXPORT(QuantizeDequantizeE5M2BF16);
MIXPREC_KERNELS_EXPORT(QuantizeDequantizeE5M2F16);

namespace detail {

MIXPREC_KERNEL_ENTRY_DEFINITION void gemm_int8(const gemm_int8_problem& problem) { MIXPREC_KERNELS_DISPATCH(GemmInt8)(problem); }

MIXPREC_KERNEL_ENTRY_DEFINITION void quantize_rows_f32(const float* x, std::size_t rows, std::size_t cols, std::int8_t* q,
                                          float* scales) {
  MIXPREC_KERNELS_DISPATCH(QuantizeRowsF32)(x, rows, cols, q, scales);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void quantize_rows_bf16(const bfloat16* x, std::size_t rows, std::size_t cols, std::int8_t* q,
                                           float* scales) {
  MIXPREC_KERNELS_DISPATCH(QuantizeRowsBF16)(x, rows, cols, q, scales);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void quantize_rows_f64(const double* x, std::size_t rows, std::size_t cols, std::int8_t* q,
                                          float* scales) {
  MIXPREC_KERNELS_DISPATCH(QuantizeRowsF64)(x, rows, cols, q, scales);
}

MIXPREC_KERNEL_ENTRY_DEFINITION void dequantize_rows_f32(const std::int32_t* acc, std::size_t rows, std::size_t cols,
                                            const float* row_scales, const float* col_scales, const float* bias,
                                            float* out) {
  MIXPREC_KERNELS_DISPATCH(DequantizeRowsF32)(acc, rows, cols, row_scales, col_scales, bias, out);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void dequantize_rows_bf16(const std::int32_t* acc, std::size_t rows, std::size_t cols,
                                             const float* row_scales, const float* col_scales, const bfloat16* bias,
                                             bfloat16* out) {
  MIXPREC_KERNELS_DISPATCH(DequantizeRowsBF16)(acc, rows, cols, row_scales, col_scales, bias, out);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void dequantize_rows_f64(const std::int32_t* acc, std::size_t rows, std::size_t cols,
                                            const float* row_scales, const float* col_scales, const double* bias,
                                            double* out) {
  MIXPREC_KERNELS_DISPATCH(DequantizeRowsF64)(acc, rows, cols, row_scales, col_scales, bias, out);
}

MIXPREC_KERNEL_ENTRY_DEFINITION float quantize_dequantize_e4m3(const float* x, std::size_t n, float scale, float* y) {
  return MIXPREC_KERNELS_DISPATCH(QuantizeDequantizeE4M3F32)(x, n, scale, y);
}
MIXPREC_KERNEL_ENTRY_DEFINITION float quantize_dequantize_e4m3(const bfloat16* x, std::size_t n, float scale, bfloat16* y) {
  return MIXPREC_KERNELS_DISPATCH(QuantizeDequantizeE4M3BF16)(x, n, scale, y);
}
MIXPREC_KERNEL_ENTRY_DEFINITION float quantize_dequantize_e4m3(const float16* x, std::size_t n, float scale, float16* y) {
  return MIXPREC_KERNELS_DISPATCH(QuantizeDequantizeE4M3F16)(x, n, scale, y);
}
MIXPREC_KERNEL_ENTRY_DEFINITION float quantize_dequantize_e5m2(const float* x, std::size_t n, float scale, float* y) {
  return MIXPREC_KERNELS_DISPATCH(QuantizeDequantizeE5M2F32)(x, n, scale, y);
}
MIXPREC_KERNEL_ENTRY_DEFINITION float quantize_dequantize_e5m2(const bfloat16* x, std::size_t n, float scale, bfloat16* y) {
  return MIXPREC_KERNELS_DISPATCH(QuantizeDequantizeE5M2BF16)(x, n, scale, y);
}
MIXPREC_KERNEL_ENTRY_DEFINITION float quantize_dequantize_e5m2(const float16* x, std::size_t n, float scale, float16* y) {
  return MIXPREC_KERNELS_DISPATCH(QuantizeDequantizeE5M2F16)(x, n, scale, y);
}

MIXPREC_KERNEL_API const char* int8_gemm_kernel_name(int8_gemm_kernel kernel) {
  switch (kernel) {
    case int8_gemm_kernel::highway: return "highway";
    case int8_gemm_kernel::avx_vnni: return "avx_vnni";
    case int8_gemm_kernel::avx512_vnni: return "avx512_vnni";
  }
  return "unknown";
}

MIXPREC_KERNEL_API bool avx512_vnni_supported() {
#ifdef MIXPREC_KERNELS_HAVE_NATIVE_INT8
  static const bool supported = native_int8::cpu_supports_avx512_vnni();
  return supported;
#else
  return false;
#endif
}

MIXPREC_KERNEL_API bool avx_vnni_supported() {
#ifdef MIXPREC_KERNELS_HAVE_NATIVE_INT8
  static const bool supported = native_int8::cpu_supports_avx_vnni();
  return supported;
#else
  return false;
#endif
}

MIXPREC_KERNEL_API bool native_int8_supported() { return avx512_vnni_supported() || avx_vnni_supported(); }

inline std::atomic<bool>& native_int8_switch() {
  static std::atomic<bool> enabled{true};
  return enabled;
}

MIXPREC_KERNEL_API void set_native_int8_enabled(bool enabled) { native_int8_switch().store(enabled); }
MIXPREC_KERNEL_API bool native_int8_enabled() { return native_int8_switch().load(); }
MIXPREC_KERNEL_ENTRY_DEFINITION int8_gemm_kernel gemm_int8_kernel() { return MIXPREC_KERNELS_DISPATCH(GemmInt8Kernel)(); }

}  // namespace detail
}  // namespace mixprec::kernels
