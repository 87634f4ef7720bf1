// Conversion entry points: plain pointers and sizes, no Highway types. Each call dispatches to
// the best compiled target for this CPU (or the one forced with kernels::target_scope).
// The typed public API is convert.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <mixprec/core/float16.hpp>
#include <mixprec/core/float8.hpp>
#include <mixprec/kernels/config.hpp>

namespace mixprec::kernels::detail {

/// The conversions with a kernel: float <-> bfloat16, float16; bfloat16 <-> float16;
/// float8_e4m3fn, float8_e5m2 -> float; double -> float (convert.hpp runs cast loops for the
/// other pairs). The entry points are templates over them in both modes: header-only mode
/// compiles a pair's kernel where it is called; in single-TU mode the kernels' translation unit
/// instantiates them for each pair (dispatch_convert.hpp) and every other one sees these
/// declarations.
template <class From, class To>
inline constexpr bool has_convert_kernel =
    (std::is_same_v<From, float> && (std::is_same_v<To, bfloat16> || std::is_same_v<To, float16>)) ||
    (std::is_same_v<To, float> && (std::is_same_v<From, bfloat16> || std::is_same_v<From, float16> ||
                                   std::is_same_v<From, float8_e4m3fn> || std::is_same_v<From, float8_e5m2> ||
                                   std::is_same_v<From, double>)) ||
    (std::is_same_v<From, bfloat16> && std::is_same_v<To, float16>) ||
    (std::is_same_v<From, float16> && std::is_same_v<To, bfloat16>);
/// The conversions whose kernel also saturates (takes the overflow mode): float -> float8_e4m3fn,
/// float8_e5m2.
template <class From, class To>
inline constexpr bool has_saturating_convert_kernel =
    std::is_same_v<From, float> && (std::is_same_v<To, float8_e4m3fn> || std::is_same_v<To, float8_e5m2>);

/// to[i] = cast<To>(from[i]): rounding to nearest even; NaN stays a quiet NaN with its sign;
/// overflow gives inf.
template <class From, class To>
void convert(const From* from, To* to, std::size_t n);
/// The same for has_saturating_convert_kernel; overflow gives inf (float8_e4m3fn: NaN), or the
/// largest finite value when `saturate`.
template <class To>
void convert(const float* from, To* to, std::size_t n, bool saturate);
/// to[i] = clamp(round_half_even(from[i] * scale), -127, 127); NaN gives 0.
MIXPREC_KERNEL_ENTRY void quantize_f32_to_i8(const float* from, float scale, std::int8_t* to, std::size_t n);

/// Whether convert<float, bfloat16> called now runs the native AVX-512 BF16 kernel
/// (vcvtne2ps2bf16). It does under the native bfloat16 GEMM's conditions, and its switch turns
/// both off (gemm_entry_points.hpp: set_native_bf16_enabled).
MIXPREC_KERNEL_ENTRY bool convert_uses_native_bf16();

}  // namespace mixprec::kernels::detail
