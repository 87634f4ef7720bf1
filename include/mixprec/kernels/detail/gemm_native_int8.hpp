// The native int8 GEMM micro-kernels, written with intrinsics (Highway 1.0.3 cannot emit these
// instructions) in functions compiled for the instruction set they need:
//  - AMX-INT8 (Sapphire Rapids and later Xeons): tdpbssd on tile registers, a 32 x 32 tile;
//  - AVX-512 VNNI (Ice Lake and later Xeons, Zen 4/5): 512-bit vpdpbusd, a 12 x 32 tile;
//  - AVX-VNNI (Alder Lake and later cores, Zen 5): the VEX-encoded 256-bit vpdpbusd, a 6 x 16 tile.
// gemm_int8-inl.hpp calls them only after checking the CPU (cpu_supports_*()), and only from the
// Highway target that has their register width (AVX3 or better for AMX and the 512-bit kernel,
// AVX2 or better for the 256-bit one), so forcing a lower target never runs them.
//
// vpdpbusd multiplies groups of 4 unsigned bytes by 4 signed bytes and adds the 4 products to a
// 32-bit lane, wrapping around (no saturation). mixprec's operands are both signed, so op(A) is
// packed with 128 added to every element (a ^ 0x80 read as unsigned: a + 128 in 0..255) and the
// kernel starts each depth block's sums at -128 times the column sums of that block of op(B):
//     sum_p (a_ip + 128) b_pj - 128 sum_p b_pj = sum_p a_ip b_pj,
// exact in wrapping 32-bit arithmetic whenever the true result fits in int32, which
// gemm_int8_max_depth guarantees. Both operands are packed in 32-bit units of 4 consecutive depth
// elements (gemm_int8-inl.hpp): unit u of lane l holds depth elements 4u .. 4u + 3 in its bytes,
// the depth padded with zeros (a zero in op(B) cancels whatever op(A) holds).
#pragma once

#include <cstddef>
#include <cstdint>

#include <mixprec/core/detail/x86_intrinsics.hpp>
#include <mixprec/kernels/detail/amx.hpp>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define MIXPREC_KERNELS_HAVE_NATIVE_INT8 1
#include <cpuid.h>
#include <immintrin.h>

#define MIXPREC_KERNELS_AVX512_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define MIXPREC_KERNELS_AVX_VNNI_TARGET __attribute__((target("avx,avx2,avxvnni")))
#ifdef MIXPREC_KERNELS_HAVE_AMX
#define MIXPREC_KERNELS_AMX_INT8_TARGET __attribute__((target("amx-tile,amx-int8")))
#endif

namespace mixprec::kernels::detail::native_int8 {

/// The CPU has AVX-512 F/BW/VL and VNNI. (Highway's AVX3 target, which the caller also
/// requires, checks that the OS saves the AVX-512 registers.)
inline bool cpu_supports_avx512_vnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}

/// The CPU has AVX2 and AVX-VNNI (the caller's AVX2 target checks the OS's YMM support).
/// AVX-VNNI is read from CPUID (leaf 7, sub-leaf 1, EAX bit 4): clang 14's
/// __builtin_cpu_supports does not know "avxvnni".
inline bool cpu_supports_avx_vnni() {
  __builtin_cpu_init();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __builtin_cpu_supports("avx2") && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 &&
         (eax & (1u << 4)) != 0;
}

#ifdef MIXPREC_KERNELS_HAVE_AMX
/// The CPU has AMX-INT8 and the OS lets this process use it (amx.hpp).
inline bool cpu_supports_amx_int8() { return amx::cpu_supports(amx::int8_feature); }

/// AMX-INT8: tdpbssd multiplies a 16 x 64 tile of signed bytes (16 rows of op(A), 16 units of 4
/// depth elements each) by a 16 x 64 tile of signed bytes (16 units of op(B), 4 depth elements of
/// 16 columns each) into 16 x 16 int32 sums, wrapping like vpdpbusd; both operands signed, so no
/// offset. A 32 x 32 tile of C is four tiles (tmm0-3) fed by two of op(A) (tmm4-5) and two of op(B)
/// (tmm6-7), each loaded once per step of 16 units and used twice (amx.hpp's configuration).
///
/// One 32 x 32 tile: the products of `steps` steps of 16 units of op(A) rows (a: row r's units at
/// a + r * a_units, the 16 of step s at s * 16; units beyond a row's meet op(B)'s zero units) and
/// of an op(B) panel (b: steps * 16 units of 32 columns, zero-padded); stored to dst (row stride
/// ldd), or added to it when `accumulate`.
MIXPREC_KERNELS_AMX_INT8_TARGET inline void amx_multiply_tile(std::size_t steps, const std::uint32_t* a,
                                                              std::size_t a_units, const std::uint32_t* b,
                                                              std::int32_t* dst, std::size_t ldd, bool accumulate) {
  if (accumulate) amx::load_sums(dst, ldd);
  else amx::zero_sums();
  MIXPREC_KERNELS_AMX_STEPS(_tile_dpbssd, steps, a, a_units, b);
  amx::store_sums(dst, ldd);
}
#endif

namespace avx512 {

inline constexpr std::size_t tile_rows = 12;  // 12 x 2 accumulators of 16 lanes: 24 of 32 zmm
inline constexpr std::size_t tile_columns = 32;

/// init[l] = -128 * (sum of the signed bytes of lane l over `units` units) for the 32 lanes of
/// a packed op(B) panel (units x 32), wrapping.
MIXPREC_KERNELS_AVX512_VNNI_TARGET inline void column_corrections(std::size_t units, const std::uint32_t* panel,
                                                                  std::int32_t* init) {
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i sum0 = _mm512_setzero_si512(), sum1 = _mm512_setzero_si512();
  for (std::size_t u = 0; u < units; ++u, panel += tile_columns) {
    sum0 = _mm512_dpbusd_epi32(sum0, ones, _mm512_loadu_si512(panel));
    sum1 = _mm512_dpbusd_epi32(sum1, ones, _mm512_loadu_si512(panel + 16));
  }
  const __m512i zero = _mm512_setzero_si512();
  _mm512_storeu_si512(init, _mm512_sub_epi32(zero, _mm512_slli_epi32(sum0, 7)));
  _mm512_storeu_si512(init + 16, _mm512_sub_epi32(zero, _mm512_slli_epi32(sum1, 7)));
}

/// One 12 x 32 tile: init + the products of `units` units of an op(A) panel (12 lanes per unit,
/// offset by 128) and an op(B) panel (32 lanes per unit); stored to dst (row stride ldd), or
/// added to it when `accumulate`.
MIXPREC_KERNELS_AVX512_VNNI_TARGET inline void multiply_tile(std::size_t units, const std::uint32_t* a,
                                                             const std::uint32_t* b, const std::int32_t* init,
                                                             std::int32_t* dst, std::size_t ldd, bool accumulate) {
  __m512i sums[tile_rows][2];
  const __m512i init0 = _mm512_loadu_si512(init), init1 = _mm512_loadu_si512(init + 16);
#pragma GCC unroll 12
  for (std::size_t r = 0; r < tile_rows; ++r) {
    sums[r][0] = init0;
    sums[r][1] = init1;
  }
  for (std::size_t u = 0; u < units; ++u, a += tile_rows, b += tile_columns) {
    const __m512i b0 = _mm512_loadu_si512(b);
    const __m512i b1 = _mm512_loadu_si512(b + 16);
#pragma GCC unroll 12
    for (std::size_t r = 0; r < tile_rows; ++r) {
      const __m512i a_unit = _mm512_set1_epi32(static_cast<int>(a[r]));
      sums[r][0] = _mm512_dpbusd_epi32(sums[r][0], a_unit, b0);
      sums[r][1] = _mm512_dpbusd_epi32(sums[r][1], a_unit, b1);
    }
  }
#pragma GCC unroll 12
  for (std::size_t r = 0; r < tile_rows; ++r) {
    std::int32_t* out = dst + r * ldd;
    if (accumulate) {
      sums[r][0] = _mm512_add_epi32(sums[r][0], _mm512_loadu_si512(out));
      sums[r][1] = _mm512_add_epi32(sums[r][1], _mm512_loadu_si512(out + 16));
    }
    _mm512_storeu_si512(out, sums[r][0]);
    _mm512_storeu_si512(out + 16, sums[r][1]);
  }
}

}  // namespace avx512

namespace avx {

inline constexpr std::size_t tile_rows = 6;  // 6 x 2 accumulators of 8 lanes, 2 of op(B), 1 of op(A): 15 of 16 ymm
inline constexpr std::size_t tile_columns = 16;

/// As avx512::column_corrections, for a 16-lane panel.
MIXPREC_KERNELS_AVX_VNNI_TARGET inline void column_corrections(std::size_t units, const std::uint32_t* panel,
                                                               std::int32_t* init) {
  const __m256i ones = _mm256_set1_epi8(1);
  __m256i sum0 = _mm256_setzero_si256(), sum1 = _mm256_setzero_si256();
  for (std::size_t u = 0; u < units; ++u, panel += tile_columns) {
    sum0 = _mm256_dpbusd_avx_epi32(sum0, ones, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel)));
    sum1 = _mm256_dpbusd_avx_epi32(sum1, ones, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + 8)));
  }
  const __m256i zero = _mm256_setzero_si256();
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(init), _mm256_sub_epi32(zero, _mm256_slli_epi32(sum0, 7)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(init + 8), _mm256_sub_epi32(zero, _mm256_slli_epi32(sum1, 7)));
}

/// As avx512::multiply_tile, for a 6 x 16 tile.
MIXPREC_KERNELS_AVX_VNNI_TARGET inline void multiply_tile(std::size_t units, const std::uint32_t* a,
                                                          const std::uint32_t* b, const std::int32_t* init,
                                                          std::int32_t* dst, std::size_t ldd, bool accumulate) {
  __m256i sums[tile_rows][2];
  const __m256i init0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(init));
  const __m256i init1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(init + 8));
#pragma GCC unroll 6
  for (std::size_t r = 0; r < tile_rows; ++r) {
    sums[r][0] = init0;
    sums[r][1] = init1;
  }
  for (std::size_t u = 0; u < units; ++u, a += tile_rows, b += tile_columns) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 8));
#pragma GCC unroll 6
    for (std::size_t r = 0; r < tile_rows; ++r) {
      const __m256i a_unit = _mm256_set1_epi32(static_cast<int>(a[r]));
      sums[r][0] = _mm256_dpbusd_avx_epi32(sums[r][0], a_unit, b0);
      sums[r][1] = _mm256_dpbusd_avx_epi32(sums[r][1], a_unit, b1);
    }
  }
#pragma GCC unroll 6
  for (std::size_t r = 0; r < tile_rows; ++r) {
    auto* out = reinterpret_cast<__m256i*>(dst + r * ldd);
    if (accumulate) {
      sums[r][0] = _mm256_add_epi32(sums[r][0], _mm256_loadu_si256(out));
      sums[r][1] = _mm256_add_epi32(sums[r][1], _mm256_loadu_si256(out + 1));
    }
    _mm256_storeu_si256(out, sums[r][0]);
    _mm256_storeu_si256(out + 1, sums[r][1]);
  }
}

}  // namespace avx

}  // namespace mixprec::kernels::detail::native_int8

#endif  // x86 with GCC or Clang
