// int8 and float8 entry points: plain pointers and sizes, no Highway types. Each call dispatches to the best
// compiled target for this CPU (or the one forced with kernels::target_scope). The typed public
// API, which checks the arguments, is kernels/quantize.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/config.hpp>

namespace mixprec::kernels::detail {

/// C = op(A) op(B), int8 x int8 -> int32, row-major, C overwritten; op(X) is X, or X transposed
/// when trans_x. The leading dimensions and the depth are already checked.
struct gemm_int8_problem {
  bool trans_a;
  bool trans_b;
  std::size_t m;
  std::size_t n;
  std::size_t k;
  const std::int8_t* a;
  std::size_t lda;
  const std::int8_t* b;
  std::size_t ldb;
  std::int32_t* c;
  std::size_t ldc;
};

/// The largest depth whose every sum fits in int32: k products of at most (-128)^2 = 2^14 each
/// sum to at most k 2^14, which is at most INT32_MAX = 2^31 - 1 for k <= 2^17 - 1 (k = 2^17
/// could reach 2^31 itself).
inline constexpr std::size_t gemm_int8_max_depth = (std::size_t{1} << 17) - 1;

MIXPREC_KERNEL_ENTRY void gemm_int8(const gemm_int8_problem& problem);

// The quantization entry points are templates over their dtypes in both modes: header-only mode
// compiles a dtype's kernel where it is called; in single-TU mode the kernels' translation unit
// instantiates them for each dtype (dispatch_quantize.hpp) and every other one sees these
// declarations.

/// The dtypes of quantize_rows and dequantize_rows: float, bfloat16, double.
template <class T>
inline constexpr bool has_int8_rows_kernel =
    std::is_same_v<T, float> || std::is_same_v<T, bfloat16> || std::is_same_v<T, double>;
/// Keras' per-row abs-max quantization (see kernels/quantize.hpp); sizes already checked.
template <class T>
void quantize_rows(const T* x, std::size_t rows, std::size_t cols, std::int8_t* q, float* scales);
/// The int8 Dense epilogue (see kernels/quantize.hpp); `bias` may be null (no bias term).
template <class T>
void dequantize_rows(const std::int32_t* acc, std::size_t rows, std::size_t cols, const float* row_scales,
                     const float* col_scales, const T* bias, T* out);

/// The dtypes of the float8 quantize-dequantize kernel: float, bfloat16, float16 (F is
/// float8_e4m3fn or float8_e5m2).
template <class T>
inline constexpr bool has_float8_rows_kernel =
    std::is_same_v<T, float> || std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>;
/// float8 quantize-dequantize with a scale (see kernels/quantize.hpp); returns max |x|.
template <class F, class T>
float quantize_dequantize(const T* x, std::size_t n, float scale, T* y);

// The native int8 GEMM kernels (detail/gemm_native_int8.hpp): tdpbssd on CPUs with AMX-INT8 and
// vpdpbusd on CPUs with AVX-512 VNNI (both from the AVX3 target or better), or AVX-VNNI (from the
// AVX2 target or better), when enabled (the default). Tests turn them off to compare them with
// the Highway kernel of the same target, and AMX off to compare it with AVX-512 VNNI.

/// The int8 GEMM micro-kernels.
enum class int8_gemm_kernel {
  highway,      // Highway on every target: int8 widened to int16 pairs, multiply-added into int32
                // (pmaddwd on x86; 4 x 2 vectors, 8 x 2 on AVX3), or widened to int32 on SCALAR
  avx_vnni,     // 256-bit vpdpbusd (AVX-VNNI), 6 x 16 tile
  avx512_vnni,  // 512-bit vpdpbusd (AVX-512 VNNI), 12 x 32 tile
  amx_int8,     // AMX tdpbssd, 32 x 32 tile (four 16 x 16 tile registers)
};

/// "highway", "avx_vnni", "avx512_vnni", "amx_int8".
MIXPREC_KERNEL_API const char* int8_gemm_kernel_name(int8_gemm_kernel kernel);
/// This CPU (and compiler, and OS) can run the AMX-INT8 kernel; the AVX-512 VNNI kernel; the
/// AVX-VNNI kernel; any of them.
MIXPREC_KERNEL_API bool amx_int8_supported();
MIXPREC_KERNEL_API bool avx512_vnni_supported();
MIXPREC_KERNEL_API bool avx_vnni_supported();
MIXPREC_KERNEL_API bool native_int8_supported();
/// Allows (the default) or forbids the native int8 kernels, process-wide: forbidden, every
/// target runs its Highway kernel.
MIXPREC_KERNEL_API void set_native_int8_enabled(bool enabled);
MIXPREC_KERNEL_API bool native_int8_enabled();
/// Allows (the default) or forbids the AMX kernel, process-wide: forbidden, a CPU with AMX runs
/// its AVX-512 VNNI kernel (while the native kernels are allowed).
MIXPREC_KERNEL_API void set_amx_int8_enabled(bool enabled);
MIXPREC_KERNEL_API bool amx_int8_enabled();
/// The kernel an int8 GEMM called now runs (it depends on the active target).
MIXPREC_KERNEL_ENTRY int8_gemm_kernel gemm_int8_kernel();

}  // namespace mixprec::kernels::detail
