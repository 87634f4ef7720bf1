// int8 dispatch tables and entry point definitions, and the native int8 switch (included once,
// by int8_implementation.hpp).
#pragma once

#include <atomic>

#include <hwy/highway.h>
#include <mixprec/core/float8.hpp>
#include <mixprec/kernels/detail/export.hpp>
#include <mixprec/kernels/detail/gemm_native_int8.hpp>
#include <mixprec/kernels/detail/int8_entry_points.hpp>

namespace mixprec::kernels {

MIXPREC_KERNELS_EXPORT(GemmInt8);
MIXPREC_KERNELS_EXPORT(GemmInt8Kernel);
MIXPREC_KERNELS_EXPORT(QuantizeRows);
MIXPREC_KERNELS_EXPORT(DequantizeRows);
MIXPREC_KERNELS_EXPORT(QuantizeDequantize);

namespace detail {

MIXPREC_KERNEL_ENTRY_DEFINITION void gemm_int8(const gemm_int8_problem& problem) { MIXPREC_KERNELS_DISPATCH(GemmInt8)(problem); }

template <class T>
void quantize_rows(const T* x, std::size_t rows, std::size_t cols, std::int8_t* q, float* scales) {
  MIXPREC_KERNELS_DISPATCH_FOR(QuantizeRows, T)(x, rows, cols, q, scales);
}
template <class T>
void dequantize_rows(const std::int32_t* acc, std::size_t rows, std::size_t cols, const float* row_scales,
                     const float* col_scales, const T* bias, T* out) {
  MIXPREC_KERNELS_DISPATCH_FOR(DequantizeRows, T)(acc, rows, cols, row_scales, col_scales, bias, out);
}
template <class F, class T>
float quantize_dequantize(const T* x, std::size_t n, float scale, T* y) {
  return MIXPREC_KERNELS_DISPATCH_FOR(QuantizeDequantize, F, T)(x, n, scale, y);
}

#ifdef MIXPREC_SEPARATE_KERNELS
// Single-TU mode: the entry points of every dtype of has_int8_rows_kernel and has_float8_rows_kernel.
#define MIXPREC_KERNELS_INSTANTIATE_INT8_ROWS(T)                                                           \
  template void quantize_rows(const T*, std::size_t, std::size_t, std::int8_t*, float*);                   \
  template void dequantize_rows(const std::int32_t*, std::size_t, std::size_t, const float*, const float*, \
                                const T*, T*);
MIXPREC_KERNELS_INSTANTIATE_INT8_ROWS(float)
MIXPREC_KERNELS_INSTANTIATE_INT8_ROWS(bfloat16)
MIXPREC_KERNELS_INSTANTIATE_INT8_ROWS(double)
#undef MIXPREC_KERNELS_INSTANTIATE_INT8_ROWS
#define MIXPREC_KERNELS_INSTANTIATE_FLOAT8_ROWS(T)                                     \
  template float quantize_dequantize<float8_e4m3fn>(const T*, std::size_t, float, T*); \
  template float quantize_dequantize<float8_e5m2>(const T*, std::size_t, float, T*);
MIXPREC_KERNELS_INSTANTIATE_FLOAT8_ROWS(float)
MIXPREC_KERNELS_INSTANTIATE_FLOAT8_ROWS(bfloat16)
MIXPREC_KERNELS_INSTANTIATE_FLOAT8_ROWS(float16)
#undef MIXPREC_KERNELS_INSTANTIATE_FLOAT8_ROWS
#endif

MIXPREC_KERNEL_API const char* int8_gemm_kernel_name(int8_gemm_kernel kernel) {
  switch (kernel) {
    case int8_gemm_kernel::highway: return "highway";
    case int8_gemm_kernel::avx_vnni: return "avx_vnni";
    case int8_gemm_kernel::avx512_vnni: return "avx512_vnni";
    case int8_gemm_kernel::amx_int8: return "amx_int8";
  }
  return "unknown";
}

MIXPREC_KERNEL_API bool amx_int8_supported() {
#ifdef MIXPREC_KERNELS_HAVE_AMX
  static const bool supported = native_int8::cpu_supports_amx_int8();
  return supported;
#else
  return false;
#endif
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

MIXPREC_KERNEL_API bool native_int8_supported() {
  return amx_int8_supported() || avx512_vnni_supported() || avx_vnni_supported();
}

inline std::atomic<bool>& native_int8_switch() {
  static std::atomic<bool> enabled{true};
  return enabled;
}

MIXPREC_KERNEL_API void set_native_int8_enabled(bool enabled) { native_int8_switch().store(enabled); }
MIXPREC_KERNEL_API bool native_int8_enabled() { return native_int8_switch().load(); }

inline std::atomic<bool>& amx_int8_switch() {
  static std::atomic<bool> enabled{true};
  return enabled;
}

MIXPREC_KERNEL_API void set_amx_int8_enabled(bool enabled) { amx_int8_switch().store(enabled); }
MIXPREC_KERNEL_API bool amx_int8_enabled() { return amx_int8_switch().load(); }
MIXPREC_KERNEL_ENTRY_DEFINITION int8_gemm_kernel gemm_int8_kernel() { return MIXPREC_KERNELS_DISPATCH(GemmInt8Kernel)(); }

}  // namespace detail
}  // namespace mixprec::kernels
