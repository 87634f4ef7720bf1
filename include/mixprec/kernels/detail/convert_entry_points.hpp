// Conversion entry points: plain pointers and sizes, no Highway types. Each call dispatches to
// the best compiled target for this CPU (or the one forced with kernels::target_scope).
// The typed public API is convert.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include <mixprec/core/float16.hpp>
#include <mixprec/core/float8.hpp>
#include <mixprec/kernels/config.hpp>

namespace mixprec::kernels::detail {

// Conversions. Rounding is to nearest even; NaN stays a quiet NaN with its sign; overflow gives
// inf (float8_e4m3fn: NaN, or the largest finite value when `saturate`).
MIXPREC_KERNEL_ENTRY void convert_f32_to_bf16(const float* from, bfloat16* to, std::size_t n);
MIXPREC_KERNEL_ENTRY void convert_bf16_to_f32(const bfloat16* from, float* to, std::size_t n);
MIXPREC_KERNEL_ENTRY void convert_f32_to_f16(const float* from, float16* to, std::size_t n);
MIXPREC_KERNEL_ENTRY void convert_f16_to_f32(const float16* from, float* to, std::size_t n);
MIXPREC_KERNEL_ENTRY void convert_f64_to_f32(const double* from, float* to, std::size_t n);
MIXPREC_KERNEL_ENTRY void convert_bf16_to_f16(const bfloat16* from, float16* to, std::size_t n);
MIXPREC_KERNEL_ENTRY void convert_f16_to_bf16(const float16* from, bfloat16* to, std::size_t n);
MIXPREC_KERNEL_ENTRY void convert_f32_to_e4m3(const float* from, float8_e4m3fn* to, std::size_t n, bool saturate);
MIXPREC_KERNEL_ENTRY void convert_e4m3_to_f32(const float8_e4m3fn* from, float* to, std::size_t n);
MIXPREC_KERNEL_ENTRY void convert_f32_to_e5m2(const float* from, float8_e5m2* to, std::size_t n, bool saturate);
MIXPREC_KERNEL_ENTRY void convert_e5m2_to_f32(const float8_e5m2* from, float* to, std::size_t n);
/// to[i] = clamp(round_half_even(from[i] * scale), -127, 127); NaN gives 0.
MIXPREC_KERNEL_ENTRY void quantize_f32_to_i8(const float* from, float scale, std::int8_t* to, std::size_t n);

/// Whether convert_f32_to_bf16 called now runs the native AVX-512 BF16 kernel (vcvtne2ps2bf16). It
/// does under the native bfloat16 GEMM's conditions, and its switch turns both off
/// (gemm_entry_points.hpp: set_native_bf16_enabled).
MIXPREC_KERNEL_ENTRY bool convert_uses_native_bf16();

}  // namespace mixprec::kernels::detail
