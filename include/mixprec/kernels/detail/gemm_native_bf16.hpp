// The native bfloat16 GEMM pieces for CPUs with AVX-512 BF16 (Zen 4/5, Cooper Lake, Sapphire
// Rapids): Highway 1.0.3 has no target that emits vdpbf16ps, so this micro-kernel is written with
// intrinsics in functions compiled for AVX-512 BF16 alone. gemm-inl.hpp calls it only from its
// AVX3 (or better) code and only after checking the CPU (cpu_supports()), so forcing a lower
// target never runs it.
//
// The pair packing is vectorized too (AVX-512BW permutes and 16 x 16 transposes), so the whole
// native path needs the CPU check.
//
// vdpbf16ps multiplies pairs of bfloat16 exactly and adds both products to a float accumulator
// (each addition rounded to nearest even; denormal inputs and outputs are flushed to zero). So A
// and B are packed as pairs of consecutive depth elements in one 32-bit lane: lane l of pair q
// holds element 2q in its low half and 2q + 1 in its high half; an odd depth ends with a zero.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <mixprec/core/detail/x86_intrinsics.hpp>
#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/detail/amx.hpp>
#include <mixprec/kernels/detail/gemm_blocking.hpp>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define MIXPREC_KERNELS_HAVE_NATIVE_BF16 1
#include <immintrin.h>

// AVX-512 DQ for vfpclassps (the exact rounding below); every caller runs AVX3 code, whose CPU
// check includes it.
#define MIXPREC_KERNELS_NATIVE_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))
#ifdef MIXPREC_KERNELS_HAVE_AMX
#define MIXPREC_KERNELS_AMX_BF16_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,amx-tile,amx-bf16")))
#endif

namespace mixprec::kernels::detail::native_bf16 {

inline constexpr std::size_t tile_rows = 12;     // 12 x 2 accumulators of 16 floats: 24 of 32 zmm
inline constexpr std::size_t tile_columns = 32;

inline std::size_t pairs_of(std::size_t depth) { return (depth + 1) / 2; }

/// The bfloat16 encodings of 16 finite floats, rounded to nearest even on the integer bits: the top
/// half of bits + 0x7FFF + (the top half's lowest bit).
MIXPREC_KERNELS_NATIVE_BF16_TARGET inline __m256i round_top_halves(__m512 v) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i biased = _mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7FFF)), odd);
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(biased, 16));
}

/// 32 floats (low: elements 0..15, high: 16..31) -> 32 bfloat16 encodings, as cast<bfloat16>.
/// vcvtne2ps2bf16 rounds to nearest even whatever MXCSR says and turns a NaN into a quiet NaN with
/// its sign and the payload's top bits, as cast<bfloat16> does; but it flushes float32 subnormal
/// inputs to zero: those lanes are redone with the integer rounding of the scalar cast.
MIXPREC_KERNELS_NATIVE_BF16_TARGET inline __m512i round_32(__m512 low, __m512 high) {
  const __m512i converted = (__m512i)_mm512_cvtne2ps_pbh(high, low);  // high goes to the upper half
  constexpr int subnormal = 0x20;                                       // vfpclassps category
  const __mmask16 low_subnormal = _mm512_fpclass_ps_mask(low, subnormal);
  const __mmask16 high_subnormal = _mm512_fpclass_ps_mask(high, subnormal);
  if (__builtin_expect(_kortestz_mask16_u8(low_subnormal, high_subnormal), 1)) return converted;
  const __m512i exact = _mm512_inserti64x4(_mm512_castsi256_si512(round_top_halves(low)), round_top_halves(high), 1);
  return _mm512_mask_mov_epi16(converted, _mm512_kunpackw(high_subnormal, low_subnormal), exact);
}

/// The first min(count, 32) 16-bit elements at p, zeros after them (nothing past them is read).
MIXPREC_KERNELS_NATIVE_BF16_TARGET inline __m512i load_halves(const bfloat16* p, std::size_t count) {
  const __mmask32 mask = count >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((std::uint32_t{1} << count) - 1);
  return _mm512_maskz_loadu_epi16(mask, p);
}
/// The same from floats, each rounded to bfloat16 as cast<bfloat16> rounds it: a float32 operand
/// read as bfloat16 (a weight under a mixed policy), packed without a bfloat16 copy.
MIXPREC_KERNELS_NATIVE_BF16_TARGET inline __m512i load_halves(const float* p, std::size_t count) {
  const std::uint32_t lanes = count >= 32 ? ~std::uint32_t{0} : (std::uint32_t{1} << count) - 1;
  const __m512 low = _mm512_maskz_loadu_ps(_cvtu32_mask16(lanes & 0xFFFF), p);
  const __m512 high = _mm512_maskz_loadu_ps(_cvtu32_mask16(lanes >> 16), p + 16);
  return round_32(low, high);
}

/// Stores the first min(count, 16) 32-bit lanes of v at p.
MIXPREC_KERNELS_NATIVE_BF16_TARGET inline void store_pairs(std::uint32_t* p, __m512i v, std::size_t count) {
  if (count >= 16) return _mm512_storeu_si512(p, v);
  _mm512_mask_storeu_epi32(p, static_cast<__mmask16>((1u << count) - 1), v);
}

/// Transposes a 16 x 16 matrix of 32-bit elements held in 16 registers (row i in rows[i]).
MIXPREC_KERNELS_NATIVE_BF16_TARGET inline void transpose_16x16(__m512i rows[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {  // within each 128-bit lane: 32-bit elements of row pairs
    t[i] = _mm512_unpacklo_epi32(rows[i], rows[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(rows[i], rows[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // then 64-bit: rows[i + c] holds rows i..i+3 of columns 4L + c
    rows[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    rows[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    rows[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    rows[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int c = 0; c < 4; ++c) {  // then 128-bit lanes: column 4L + c gathers lane L of rows[c], [4 + c], ...
    const __m512i even_low = _mm512_shuffle_i32x4(rows[c], rows[4 + c], 0x88);
    const __m512i odd_low = _mm512_shuffle_i32x4(rows[c], rows[4 + c], 0xdd);
    const __m512i even_high = _mm512_shuffle_i32x4(rows[8 + c], rows[12 + c], 0x88);
    const __m512i odd_high = _mm512_shuffle_i32x4(rows[8 + c], rows[12 + c], 0xdd);
    t[c] = _mm512_shuffle_i32x4(even_low, even_high, 0x88);
    t[4 + c] = _mm512_shuffle_i32x4(odd_low, odd_high, 0x88);
    t[8 + c] = _mm512_shuffle_i32x4(even_low, even_high, 0xdd);
    t[12 + c] = _mm512_shuffle_i32x4(odd_low, odd_high, 0xdd);
  }
  for (int i = 0; i < 16; ++i) rows[i] = t[i];
}

/// pack_pairs where each lane's depth elements are contiguous (depth_stride == 1), so a pair is one
/// 32-bit element: panel by panel, 16 lanes x 16 pairs are loaded (16 streams), transposed in
/// registers and stored as 16 pair rows.
template <class T>
MIXPREC_KERNELS_NATIVE_BF16_TARGET inline void pack_pairs_transposing(const T* src, std::size_t lane_stride,
                                                                      std::size_t lanes, std::size_t depth,
                                                                      std::size_t width, std::size_t panel_pairs,
                                                                      std::uint32_t* dst) {
  const std::size_t pairs = pairs_of(depth);
  for (std::size_t first = 0; first < lanes; first += width, dst += panel_pairs * width) {
    const std::size_t count = std::min(width, lanes - first);
    const T* panel = src + first * lane_stride;
    for (std::size_t group = 0; group < width; group += 16) {
      const std::size_t group_lanes = count > group ? std::min<std::size_t>(16, count - group) : 0;
      for (std::size_t q0 = 0; q0 < pairs; q0 += 16) {
        __m512i block[16];
        for (std::size_t l = 0; l < 16; ++l) {
          block[l] = l < group_lanes ? load_halves(panel + (group + l) * lane_stride + 2 * q0, depth - 2 * q0)
                                     : _mm512_setzero_si512();
        }
        transpose_16x16(block);
        const std::size_t block_pairs = std::min<std::size_t>(16, pairs - q0);
        for (std::size_t q = 0; q < block_pairs; ++q)
          store_pairs(dst + (q0 + q) * width + group, block[q], width - group);
      }
    }
  }
}

/// vpermt2w indices that interleave two depth rows of 32 lanes (the low row in a, the high in b)
/// into pairs: lane l's pair in 32-bit lane l, its low row's element in the low half, lanes 0-15
/// by pair_interleave_low, lanes 16-31 by pair_interleave_high.
alignas(64) inline constexpr std::uint16_t pair_interleave_low[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                                                     37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                                                     11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
alignas(64) inline constexpr std::uint16_t pair_interleave_high[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21,
                                                                      53, 22, 54, 23, 55, 24, 56, 25, 57, 26, 58,
                                                                      27, 59, 28, 60, 29, 61, 30, 62, 31, 63};

/// pack_pairs where the lanes of one depth element are contiguous (lane_stride == 1): two depth
/// rows are interleaved by a permute, 32 lanes at a time. Row pair by row pair, across every
/// panel, so that the source is read in order (walking one panel down the depth would touch a
/// new cache line, often a new page, per row: with AMX's padded panels it did, and packing op(B)
/// took a third of a 256 x 1024 x 1024 product).
template <class T>
MIXPREC_KERNELS_NATIVE_BF16_TARGET inline void pack_pairs_interleaving(const T* src, std::size_t depth_stride,
                                                                       std::size_t lanes, std::size_t depth,
                                                                       std::size_t width, std::size_t panel_pairs,
                                                                       std::uint32_t* dst) {
  const __m512i low_index = _mm512_load_si512(pair_interleave_low);
  const __m512i high_index = _mm512_load_si512(pair_interleave_high);
  const std::size_t pairs = pairs_of(depth);
  const std::size_t panel_size = panel_pairs * width;
  for (std::size_t q = 0; q < pairs; ++q) {
    const T* low_row = src + 2 * q * depth_stride;
    const bool has_high = 2 * q + 1 < depth;  // an odd depth ends with a zero
    std::uint32_t* out_row = dst + q * width;
    for (std::size_t first = 0; first < lanes; first += width, out_row += panel_size) {
      const std::size_t count = std::min(width, lanes - first);
      for (std::size_t group = 0; group < width; group += 32) {
        const std::size_t group_lanes = count > group ? count - group : 0;
        const __m512i low = load_halves(low_row + first + group, group_lanes);
        const __m512i high =
            has_high ? load_halves(low_row + depth_stride + first + group, group_lanes) : _mm512_setzero_si512();
        std::uint32_t* out = out_row + group;
        store_pairs(out, _mm512_permutex2var_epi16(low, low_index, high), width - group);
        if (width - group > 16)
          store_pairs(out + 16, _mm512_permutex2var_epi16(low, high_index, high), width - group - 16);
      }
    }
  }
}

/// Packs `lanes` lanes of `depth` bfloat16 (or floats, each rounded to bfloat16) into panels of
/// `width` lanes, zero-padded, as pairs:
/// dst[(panel * panel_pairs + q) * width + l] holds elements (panel * width + l, 2q) and
/// (panel * width + l, 2q + 1); pairs from pairs_of(depth) to panel_pairs (AMX's whole steps) are
/// zeros. Element (lane, p) is at src[lane * lane_stride + p * depth_stride]; one of the strides is
/// 1 (the other is the leading dimension). Nothing outside the elements is read.
template <class T>
MIXPREC_KERNELS_NATIVE_BF16_TARGET inline void pack_pairs(const T* src, std::size_t lane_stride,
                                                          std::size_t depth_stride, std::size_t lanes,
                                                          std::size_t depth, std::size_t width,
                                                          std::size_t panel_pairs, std::uint32_t* dst) {
  const std::size_t pairs = pairs_of(depth);
  assert(panel_pairs >= pairs);
  if (depth_stride == 1) pack_pairs_transposing(src, lane_stride, lanes, depth, width, panel_pairs, dst);
  else pack_pairs_interleaving(src, depth_stride, lanes, depth, width, panel_pairs, dst);
  if (panel_pairs == pairs) return;
  for (std::size_t first = 0; first < lanes; first += width, dst += panel_pairs * width)
    std::memset(dst + pairs * width, 0, (panel_pairs - pairs) * width * sizeof(std::uint32_t));
}

/// The CPU has AVX-512 F/BW/DQ/VL and BF16. (Highway's AVX3 target, which the caller also requires,
/// checks that the OS saves the AVX-512 registers.)
inline bool cpu_supports() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bf16");
}

MIXPREC_KERNELS_NATIVE_BF16_TARGET inline void update_vector(float* out, __m512 sums, const gemm_tile_update& update) {
  const __m512 alpha = _mm512_set1_ps(update.alpha);
  if (update.accumulate) {
    _mm512_storeu_ps(out, _mm512_fmadd_ps(alpha, sums, _mm512_loadu_ps(out)));
  } else if (update.beta == 0.0f) {
    _mm512_storeu_ps(out, _mm512_mul_ps(alpha, sums));
  } else {
    const __m512 beta = _mm512_set1_ps(update.beta);
    _mm512_storeu_ps(out, _mm512_fmadd_ps(beta, _mm512_loadu_ps(out), _mm512_mul_ps(alpha, sums)));
  }
}

/// The first Rows x (16 * Vectors) of a 12 x 32 tile: sums over `pairs` packed pairs of an A panel
/// (12 lanes per pair) and a B panel (32 lanes per pair), then `update` of dst (row stride ldd).
/// Each sum sees the same operations whatever part of the tile is computed.
template <std::size_t Rows, std::size_t Vectors>
MIXPREC_KERNELS_NATIVE_BF16_TARGET inline void multiply_block(std::size_t pairs, const std::uint32_t* a,
                                                              const std::uint32_t* b, float* dst, std::size_t ldd,
                                                              const gemm_tile_update& update) {
  __m512 sums[Rows][Vectors];
#pragma GCC unroll 12
  for (std::size_t r = 0; r < Rows; ++r)
    for (std::size_t v = 0; v < Vectors; ++v) sums[r][v] = _mm512_setzero_ps();
  for (std::size_t q = 0; q < pairs; ++q, a += tile_rows, b += tile_columns) {
    __m512bh b_pairs[Vectors];  // columns 16v .. 16v + 15
    for (std::size_t v = 0; v < Vectors; ++v) b_pairs[v] = (__m512bh)_mm512_loadu_si512(b + 16 * v);
#pragma GCC unroll 12
    for (std::size_t r = 0; r < Rows; ++r) {
      const __m512bh a_pair = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[r]));
      for (std::size_t v = 0; v < Vectors; ++v) sums[r][v] = _mm512_dpbf16_ps(sums[r][v], a_pair, b_pairs[v]);
    }
  }
#pragma GCC unroll 12
  for (std::size_t r = 0; r < Rows; ++r)
    for (std::size_t v = 0; v < Vectors; ++v) update_vector(dst + r * ldd + 16 * v, sums[r][v], update);
}

/// At least the first `rows` x `columns` of a 12 x 32 tile (see multiply_block): a ragged edge
/// tile (the 4 rows left of a batch of 256, the 10 columns of a classifier) runs the smallest
/// block of 4, 8 or 12 rows and 16 or 32 columns that covers it.
MIXPREC_KERNELS_NATIVE_BF16_TARGET inline void multiply_tile(std::size_t pairs, const std::uint32_t* a,
                                                             const std::uint32_t* b, float* dst, std::size_t ldd,
                                                             gemm_tile_update update, std::size_t rows,
                                                             std::size_t columns) {
  const bool two_vectors = columns > 16;
  if (rows > 8) {
    two_vectors ? multiply_block<12, 2>(pairs, a, b, dst, ldd, update)
                : multiply_block<12, 1>(pairs, a, b, dst, ldd, update);
  } else if (rows > 4) {
    two_vectors ? multiply_block<8, 2>(pairs, a, b, dst, ldd, update)
                : multiply_block<8, 1>(pairs, a, b, dst, ldd, update);
  } else {
    two_vectors ? multiply_block<4, 2>(pairs, a, b, dst, ldd, update)
                : multiply_block<4, 1>(pairs, a, b, dst, ldd, update);
  }
}

// AMX-BF16 (Sapphire Rapids and later Xeons; there vdpbf16ps issues at half the rate of a float
// FMA, while tdpbf16ps does 16 x 16 x 32 products per instruction). tdpbf16ps multiplies a
// 16-row tile of op(A) (16 pairs per row) by a tile of 16 pairs of op(B) (16 columns) and adds
// the products to 16 x 16 floats: exactly, then rounded, as far as the results show, but in an
// order Intel does not document (no fixed float32 order reproduces it: tested on one Sapphire
// Rapids, where its error stayed below that of a float32 loop); denormals are flushed, as by
// vdpbf16ps. A 32 x 32 tile of C is four tiles fed by two of op(A) and two of op(B), as in the
// int8 kernel (amx.hpp); op(A) is packed row by row, op(B) as pack_pairs does, both with their
// pairs zero-padded to whole steps of 16.

#ifdef MIXPREC_KERNELS_HAVE_AMX
/// The CPU has AMX-BF16 (and AVX-512 BF16, for the rest of the native path) and the OS lets this
/// process use AMX (amx.hpp).
inline bool cpu_supports_amx() { return cpu_supports() && amx::cpu_supports(amx::bf16_feature); }
#endif

/// Packs `lanes` lanes of `depth` bfloat16 as rows of pairs: lane l's pair q (elements 2q and
/// 2q + 1) at dst[l * padded_pairs + q], zeros from pairs_of(depth) to padded_pairs (a multiple
/// of 16). Element (lane, p) is at src[lane * lane_stride + p * depth_stride]; one stride is 1.
MIXPREC_KERNELS_NATIVE_BF16_TARGET inline void pack_pair_rows(const bfloat16* src, std::size_t lane_stride,
                                                              std::size_t depth_stride, std::size_t lanes,
                                                              std::size_t depth, std::size_t padded_pairs,
                                                              std::uint32_t* dst) {
  if (depth_stride == 1) {  // a lane's pairs are its elements as they are
    for (std::size_t l = 0; l < lanes; ++l) {
      auto* row = reinterpret_cast<unsigned char*>(dst + l * padded_pairs);
      std::memcpy(row, src + l * lane_stride, depth * sizeof(bfloat16));
      std::memset(row + depth * sizeof(bfloat16), 0, padded_pairs * sizeof(std::uint32_t) - depth * sizeof(bfloat16));
    }
    return;
  }
  // The lanes of one depth element are contiguous: two depth rows interleaved (16 lanes' pairs in
  // a register, as pack_pairs_interleaving), 16 pairs of 16 lanes transposed into 16 rows.
  const __m512i low_index = _mm512_load_si512(pair_interleave_low);
  const std::size_t pairs = pairs_of(depth);
  for (std::size_t first = 0; first < lanes; first += 16) {
    const std::size_t group_lanes = std::min<std::size_t>(16, lanes - first);
    for (std::size_t q0 = 0; q0 < padded_pairs; q0 += 16) {
      __m512i block[16];
      for (std::size_t q = 0; q < 16; ++q) {
        const std::size_t pair = q0 + q;
        if (pair >= pairs) {
          block[q] = _mm512_setzero_si512();
          continue;
        }
        const bfloat16* low_row = src + 2 * pair * depth_stride + first;
        const __m512i low = load_halves(low_row, group_lanes);
        const __m512i high = 2 * pair + 1 < depth ? load_halves(low_row + depth_stride, group_lanes)
                                                  : _mm512_setzero_si512();
        block[q] = _mm512_permutex2var_epi16(low, low_index, high);
      }
      transpose_16x16(block);
      for (std::size_t l = 0; l < group_lanes; ++l)
        _mm512_storeu_si512(dst + (first + l) * padded_pairs + q0, block[l]);
    }
  }
}

#ifdef MIXPREC_KERNELS_HAVE_AMX
/// The first `rows` rows of a 32 x 32 tile: sums over `steps` steps of 16 pairs of op(A) rows
/// (row r's pairs at a + r * a_pairs) and an op(B) panel (16 pairs x 32 per step), then `update`
/// of dst (row stride ldd; all 32 columns: a ragged tile comes as a full-width copy).
MIXPREC_KERNELS_AMX_BF16_TARGET inline void amx_multiply_tile(std::size_t steps, const std::uint32_t* a,
                                                              std::size_t a_pairs, const std::uint32_t* b, float* dst,
                                                              std::size_t ldd, const gemm_tile_update& update,
                                                              std::size_t rows) {
  constexpr std::size_t columns = amx::tile_columns;
  amx::zero_sums();
  MIXPREC_KERNELS_AMX_STEPS(_tile_dpbf16ps, steps, a, a_pairs, b);
  // A whole tile whose update is a plain store (the first depth block, alpha 1, beta 0) is stored
  // from the tiles into dst, the same bits without a pass through a buffer. Later blocks add
  // their sums with update_vector, as the depth split (gemm-inl.hpp) adds its block sums: loading
  // C into the tiles would have tdpbf16ps round C + products in its own order.
  if (rows == amx::tile_rows && update.alpha == 1.0f && !update.accumulate && update.beta == 0.0f)
    return amx::store_sums(dst, ldd);
  alignas(64) float sums[amx::tile_rows * columns];
  amx::store_sums(sums, columns);
  for (std::size_t r = 0; r < rows; ++r) {
    update_vector(dst + r * ldd, _mm512_load_ps(sums + r * columns), update);
    update_vector(dst + r * ldd + 16, _mm512_load_ps(sums + r * columns + 16), update);
  }
}
#endif

}  // namespace mixprec::kernels::detail::native_bf16

#endif  // x86 with GCC or Clang
