// Per-target int8 GEMM, C (int32) = op(A) op(B) for int8 A and B, exact. The float GEMM's loop
// nest (gemm_blocking.hpp: B blocks of nc columns and kc depth packed once, A blocks of mc rows
// packed for each, micro-tiles held in registers, ragged edge tiles computed in a full-size copy)
// on 32-bit units of packed depth:
//  - the Highway kernel (every target; the only one below AVX2): units of 2 depth elements
//    sign-extended to int16, multiplied and pair-summed into int32 by ReorderWidenMulAccumulate
//    (pmaddwd on x86: exact for the whole int8 range, as (-128)(-128) + (-128)(-128) = 2^15 fits
//    a 32-bit lane), a 4 x (2 vectors) tile (8 x (2 vectors) on AVX3); SCALAR widens the pairs to
//    int32 and multiply-adds;
//  - the native kernels of gemm_native_int8.hpp (units of 4 depth elements): vpdpbusd from the
//    AVX2 target (AVX-VNNI) or the AVX3 target (AVX-512 VNNI), and AMX's tdpbssd from the AVX3
//    target, when the CPU has them.
// Integer sums are exact, so every kernel, target, blocking and thread count gives the same C.
//
// Toggle-guarded on MIXPREC_KERNELS_INT8_TOGGLE: int8_implementation.hpp compiles it once per
// target, after the other kernels.
#if defined(MIXPREC_KERNELS_GEMM_INT8_INL_HPP_) == defined(MIXPREC_KERNELS_INT8_TOGGLE)
#ifdef MIXPREC_KERNELS_GEMM_INT8_INL_HPP_
#undef MIXPREC_KERNELS_GEMM_INT8_INL_HPP_
#else
#define MIXPREC_KERNELS_GEMM_INT8_INL_HPP_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include <hwy/highway.h>
#include <mixprec/kernels/detail/gemm_blocking.hpp>
#include <mixprec/kernels/detail/gemm_entry_points.hpp>
#include <mixprec/kernels/detail/gemm_native_int8.hpp>
#include <mixprec/kernels/detail/int8_entry_points.hpp>
#include <mixprec/kernels/detail/kernel_macros.hpp>
#include <mixprec/kernels/detail/quantize_rule.hpp>
#include <mixprec/kernels/thread_pool.hpp>

// The native kernels are compiled into the code of the targets with their register width only:
// forcing a lower target must never run them.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3 && defined(MIXPREC_KERNELS_HAVE_NATIVE_INT8)
#define MIXPREC_KERNELS_INT8_AVX512_VNNI 1
#else
#define MIXPREC_KERNELS_INT8_AVX512_VNNI 0
#endif
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && defined(MIXPREC_KERNELS_HAVE_NATIVE_INT8)
#define MIXPREC_KERNELS_INT8_AVX_VNNI 1
#else
#define MIXPREC_KERNELS_INT8_AVX_VNNI 0
#endif
// pmaddwd through ReorderWidenMulAccumulate, which on x86 returns the pair sums in sum0 alone.
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
#define MIXPREC_KERNELS_INT8_PMADDWD 1
#else
#define MIXPREC_KERNELS_INT8_PMADDWD 0
#endif

MIXPREC_KERNELS_BEGIN
namespace int8_gemm {
namespace hn = hwy::HWY_NAMESPACE;
namespace kd = mixprec::kernels::detail;

using D32 = hn::ScalableTag<std::int32_t>;

/// How a packed 32-bit unit holds its depth elements (element t of the unit is depth 4u + t, or
/// 2u + t for pairs; missing depth elements are zero).
enum class unit_format {
  quads,         // 4 bytes, as they are (vpdpbusd's signed operand)
  offset_quads,  // 4 bytes, each + 128 (a ^ 0x80: vpdpbusd's unsigned operand)
  int16_pairs,   // 2 int16, sign-extended (pmaddwd's operands)
};

template <unit_format F>
constexpr std::size_t unit_depth = F == unit_format::int16_pairs ? 2 : 4;

/// The unit of `count` (<= unit_depth<F>) depth elements at p, p + stride, ... .
template <unit_format F>
HWY_INLINE std::uint32_t make_unit(const std::int8_t* p, std::size_t stride, std::size_t count) {
  std::uint32_t unit = 0;
  for (std::size_t t = 0; t < count; ++t) {
    const std::int8_t x = p[t * stride];
    if constexpr (F == unit_format::int16_pairs) {
      unit |= static_cast<std::uint32_t>(static_cast<std::uint16_t>(static_cast<std::int16_t>(x))) << (16 * t);
    } else {
      const std::uint32_t byte = static_cast<std::uint8_t>(x);
      unit |= (F == unit_format::offset_quads ? byte ^ 0x80u : byte) << (8 * t);
    }
  }
  return unit;
}

#if HWY_TARGET != HWY_SCALAR
using D8x16 = hn::Full128<std::uint8_t>;
using D16x8 = hn::Full128<std::int16_t>;
using D32x4 = hn::Full128<std::uint32_t>;
using D64x2 = hn::Full128<std::uint64_t>;
using V32x4 = hn::Vec<D32x4>;

/// 16 bytes: 16 int8 elements as unit bytes (quads), or 8 sign-extended to int16 (pairs).
template <unit_format F>
HWY_INLINE V32x4 load_unit_bytes(const std::int8_t* p) {
  if constexpr (F == unit_format::int16_pairs) {
    return hn::BitCast(D32x4(), hn::PromoteTo(D16x8(), hn::LoadU(hn::Full64<std::int8_t>(), p)));
  } else {
    auto bytes = hn::LoadU(D8x16(), reinterpret_cast<const std::uint8_t*>(p));
    if constexpr (F == unit_format::offset_quads) bytes = hn::Xor(bytes, hn::Set(D8x16(), std::uint8_t{0x80}));
    return hn::BitCast(D32x4(), bytes);
  }
}

/// Transposes a 4 x 4 block of 32-bit units: r_i[j] becomes r_j[i].
HWY_INLINE void transpose4(V32x4& r0, V32x4& r1, V32x4& r2, V32x4& r3) {
  const D32x4 d;
  const D64x2 d64;
  const auto t0 = hn::BitCast(d64, hn::InterleaveLower(d, r0, r1));  // r0[0] r1[0] r0[1] r1[1]
  const auto t1 = hn::BitCast(d64, hn::InterleaveLower(d, r2, r3));  // r2[0] r3[0] r2[1] r3[1]
  const auto t2 = hn::BitCast(d64, hn::InterleaveUpper(d, r0, r1));  // r0[2] r1[2] r0[3] r1[3]
  const auto t3 = hn::BitCast(d64, hn::InterleaveUpper(d, r2, r3));
  r0 = hn::BitCast(d, hn::InterleaveLower(d64, t0, t1));
  r1 = hn::BitCast(d, hn::InterleaveUpper(d64, t0, t1));
  r2 = hn::BitCast(d, hn::InterleaveLower(d64, t2, t3));
  r3 = hn::BitCast(d, hn::InterleaveUpper(d64, t2, t3));
}
#endif

/// Where a lane's units go in the packed layout: `lanes` lanes (rows of op(A) or columns of
/// op(B)) in panels of `width` lanes, panel after panel, each `units` rows of `width` units.
/// Walks the lanes in order without dividing: `column` is the lane's place in its panel.
struct lane_cursor {
  std::uint32_t* panel;
  std::size_t column;
  std::size_t width;
  std::size_t panel_size;  // units * width

  std::uint32_t& unit(std::size_t u) const { return panel[u * width + column]; }
  void advance(std::size_t count) {
    column += count;
    while (column >= width) {
      column -= width;
      panel += panel_size;
    }
  }
#if HWY_TARGET != HWY_SCALAR
  /// Unit u of the cursor's lane and the three after it.
  HWY_INLINE void store4(V32x4 v, std::size_t u) const {
    if (column + 4 <= width) {
      hn::StoreU(v, D32x4(), panel + u * width + column);
      return;
    }
    std::uint32_t units4[4];  // the four lanes straddle two panels
    hn::StoreU(v, D32x4(), units4);
    lane_cursor lane = *this;
    for (std::size_t t = 0; t < 4; ++t, lane.advance(1)) lane.unit(u) = units4[t];
  }
#endif
};

/// Packs `lanes` lanes of `depth` int8 elements into panels of `width` lanes of F units,
/// zero-padded to whole panels and to `padded_units` units per lane (at least the depth's):
/// element (lane, p) is src[lane * lane_stride + p * depth_stride], one of the strides being 1
/// (the other is the leading dimension).
template <unit_format F>
void pack(const std::int8_t* src, std::size_t lane_stride, std::size_t depth_stride, std::size_t lanes,
          std::size_t depth, std::size_t width, std::size_t padded_units, std::uint32_t* dst) {
  constexpr std::size_t ud = unit_depth<F>;
  const std::size_t units = kd::ceil_div(depth, ud);
  const lane_cursor first_lane{dst, 0, width, padded_units * width};
  const auto unit_count = [&](std::size_t u) { return std::min(ud, depth - u * ud); };
  const std::size_t panels = kd::ceil_div(lanes, width);
  for (std::size_t panel = 0; panel < panels; ++panel) {
    std::uint32_t* start = dst + panel * padded_units * width;
    std::fill(start + units * width, start + padded_units * width, 0u);
  }
  if constexpr (F == unit_format::quads) {
    if (width == 1 && depth_stride == 1) {
      // Lane by lane, each lane's units contiguous: the quads are the lane's bytes as they are.
      for (std::size_t lane = 0; lane < lanes; ++lane) {
        auto* out = reinterpret_cast<unsigned char*>(dst + lane * padded_units);
        std::memcpy(out, src + lane * lane_stride, depth);
        std::memset(out + depth, 0, units * ud - depth);
      }
      return;
    }
  }
  if (depth_stride == 1) {
    // Each lane's depth elements are contiguous: four lanes' 16 bytes, transposed, are four units
    // of four lanes.
    std::size_t lane = 0;
    lane_cursor out = first_lane;
#if HWY_TARGET != HWY_SCALAR
    const std::size_t full_units = depth / ud;
    for (; lane + 4 <= lanes; lane += 4, out.advance(4)) {
      const std::int8_t* p = src + lane * lane_stride;
      std::size_t u = 0;
      for (; u + 4 <= full_units; u += 4) {
        auto r0 = load_unit_bytes<F>(p + u * ud);
        auto r1 = load_unit_bytes<F>(p + lane_stride + u * ud);
        auto r2 = load_unit_bytes<F>(p + 2 * lane_stride + u * ud);
        auto r3 = load_unit_bytes<F>(p + 3 * lane_stride + u * ud);
        transpose4(r0, r1, r2, r3);
        out.store4(r0, u);
        out.store4(r1, u + 1);
        out.store4(r2, u + 2);
        out.store4(r3, u + 3);
      }
      for (; u < units; ++u) {
        lane_cursor four = out;
        for (std::size_t t = 0; t < 4; ++t, four.advance(1))
          four.unit(u) = make_unit<F>(p + t * lane_stride + u * ud, 1, unit_count(u));
      }
    }
#endif
    for (; lane < lanes; ++lane, out.advance(1)) {
      for (std::size_t u = 0; u < units; ++u)
        out.unit(u) = make_unit<F>(src + lane * lane_stride + u * ud, 1, unit_count(u));
    }
  } else {
    // The lanes of one depth element are contiguous: interleave the unit's rows.
    for (std::size_t u = 0; u < units; ++u) {
      const std::int8_t* row = src + u * ud * depth_stride;
      std::size_t lane = 0;
      lane_cursor out = first_lane;
#if HWY_TARGET != HWY_SCALAR
      if (unit_count(u) == ud) {
        if constexpr (F == unit_format::int16_pairs) {
          const D16x8 d16;
          for (; lane + 8 <= lanes; lane += 8) {
            const auto r0 = hn::BitCast(d16, load_unit_bytes<F>(row + lane));
            const auto r1 = hn::BitCast(d16, load_unit_bytes<F>(row + depth_stride + lane));
            out.store4(hn::BitCast(D32x4(), hn::InterleaveLower(d16, r0, r1)), u);
            out.advance(4);
            out.store4(hn::BitCast(D32x4(), hn::InterleaveUpper(d16, r0, r1)), u);
            out.advance(4);
          }
        } else {
          const D8x16 d8;
          const hn::Full128<std::uint16_t> d16;
          for (; lane + 16 <= lanes; lane += 16) {
            const auto r0 = hn::BitCast(d8, load_unit_bytes<F>(row + lane));
            const auto r1 = hn::BitCast(d8, load_unit_bytes<F>(row + depth_stride + lane));
            const auto r2 = hn::BitCast(d8, load_unit_bytes<F>(row + 2 * depth_stride + lane));
            const auto r3 = hn::BitCast(d8, load_unit_bytes<F>(row + 3 * depth_stride + lane));
            const auto r01_lower = hn::BitCast(d16, hn::InterleaveLower(d8, r0, r1));  // lanes 0..7, depth 0 1
            const auto r01_upper = hn::BitCast(d16, hn::InterleaveUpper(d8, r0, r1));  // lanes 8..15
            const auto r23_lower = hn::BitCast(d16, hn::InterleaveLower(d8, r2, r3));
            const auto r23_upper = hn::BitCast(d16, hn::InterleaveUpper(d8, r2, r3));
            out.store4(hn::BitCast(D32x4(), hn::InterleaveLower(d16, r01_lower, r23_lower)), u);
            out.advance(4);
            out.store4(hn::BitCast(D32x4(), hn::InterleaveUpper(d16, r01_lower, r23_lower)), u);
            out.advance(4);
            out.store4(hn::BitCast(D32x4(), hn::InterleaveLower(d16, r01_upper, r23_upper)), u);
            out.advance(4);
            out.store4(hn::BitCast(D32x4(), hn::InterleaveUpper(d16, r01_upper, r23_upper)), u);
            out.advance(4);
          }
        }
      }
#endif
      for (; lane < lanes; ++lane, out.advance(1)) out.unit(u) = make_unit<F>(row + lane, depth_stride, unit_count(u));
    }
  }
  const std::size_t filled = lanes % width;  // the last panel's zero lanes
  if (filled != 0) {
    std::uint32_t* last_panel = dst + (lanes / width) * padded_units * width;
    for (std::size_t u = 0; u < units; ++u)
      std::fill(last_panel + u * width + filled, last_panel + (u + 1) * width, 0u);
  }
}

/// The Highway micro-kernel: a tile of (tile_rows) x (2 vectors) int32 sums of int16 pair
/// products. pmaddwd needs a register for its products before they are added, so a tile takes
/// 2 tile_rows accumulators + 2 of op(B) + 1 of op(A) + 1. With 16 registers that allows 4 rows
/// (6 would need all 16, and GCC 12 then keeps accumulators in memory); with AVX-512's 32, 8 rows
/// (at 10 or 12 GCC 12 again stores accumulators in the loop: 8 ran 15-20% faster here).
struct highway_kernel {
  static constexpr unit_format a_format = unit_format::int16_pairs;
  static constexpr unit_format b_format = unit_format::int16_pairs;
  static constexpr bool has_init = false;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  static constexpr std::size_t tile_rows = 8;
#else
  static constexpr std::size_t tile_rows = 4;
#endif
  static constexpr std::size_t a_panel_rows = tile_rows;
  static constexpr std::size_t depth_block = kd::gemm_int8_depth_block;
  static std::size_t packed_units(std::size_t depth) { return kd::ceil_div(depth, 2); }
  static constexpr std::size_t max_tile_columns = 2 * HWY_MAX_BYTES / sizeof(std::int32_t);
  static std::size_t tile_columns() { return 2 * hn::Lanes(D32()); }

  static void prepare(std::size_t, const std::uint32_t*, std::size_t, std::int32_t*) {}

  /// Both int16 of each unit, multiplied and summed into a 32-bit lane.
  static HWY_INLINE hn::Vec<D32> pair_products(hn::Vec<D32> a, hn::Vec<D32> b, hn::Vec<D32> sum) {
#if MIXPREC_KERNELS_INT8_PMADDWD
    const hn::Repartition<std::int16_t, D32> d16;
    hn::Vec<D32> unused = hn::Zero(D32());  // x86 returns everything in sum0
    return hn::ReorderWidenMulAccumulate(D32(), hn::BitCast(d16, a), hn::BitCast(d16, b), sum, unused);
#else
    const auto low = [](hn::Vec<D32> v) { return hn::ShiftRight<16>(hn::ShiftLeft<16>(v)); };
    return hn::Add(sum, hn::Add(hn::Mul(low(a), low(b)), hn::Mul(hn::ShiftRight<16>(a), hn::ShiftRight<16>(b))));
#endif
  }

  static void multiply_tile(std::size_t units, const std::uint32_t* HWY_RESTRICT a, const std::uint32_t* HWY_RESTRICT b,
                            const std::int32_t*, std::int32_t* HWY_RESTRICT dst, std::size_t ldd, bool accumulate) {
    const D32 d;
    const std::size_t lanes = hn::Lanes(d);
    const auto* b_lanes = reinterpret_cast<const std::int32_t*>(b);
    hn::Vec<D32> sums[tile_rows][2];
#pragma GCC unroll 12
    for (std::size_t r = 0; r < tile_rows; ++r) sums[r][0] = sums[r][1] = hn::Zero(d);
    for (std::size_t u = 0; u < units; ++u, a += tile_rows, b_lanes += 2 * lanes) {
      const auto b0 = hn::LoadU(d, b_lanes);
      const auto b1 = hn::LoadU(d, b_lanes + lanes);
#pragma GCC unroll 12
      for (std::size_t r = 0; r < tile_rows; ++r) {
        const auto a_unit = hn::Set(d, static_cast<std::int32_t>(a[r]));
        sums[r][0] = pair_products(a_unit, b0, sums[r][0]);
        sums[r][1] = pair_products(a_unit, b1, sums[r][1]);
      }
    }
#pragma GCC unroll 12
    for (std::size_t r = 0; r < tile_rows; ++r) {
      std::int32_t* out = dst + r * ldd;
      if (accumulate) {
        sums[r][0] = hn::Add(sums[r][0], hn::LoadU(d, out));
        sums[r][1] = hn::Add(sums[r][1], hn::LoadU(d, out + lanes));
      }
      hn::StoreU(sums[r][0], d, out);
      hn::StoreU(sums[r][1], d, out + lanes);
    }
  }
};

#if MIXPREC_KERNELS_INT8_AVX_VNNI
/// A vpdpbusd kernel of gemm_native_int8.hpp (Native: its avx or avx512 namespace, as a type).
template <class Native>
struct vnni_kernel {
  static constexpr unit_format a_format = unit_format::offset_quads;
  static constexpr unit_format b_format = unit_format::quads;
  static constexpr bool has_init = true;
  static constexpr std::size_t tile_rows = Native::tile_rows;
  static constexpr std::size_t a_panel_rows = tile_rows;
  static constexpr std::size_t depth_block = kd::gemm_int8_depth_block;
  static constexpr std::size_t max_tile_columns = Native::tile_columns;
  static std::size_t tile_columns() { return Native::tile_columns; }
  static std::size_t packed_units(std::size_t depth) { return kd::ceil_div(depth, 4); }

  /// The start of every tile's sums: -128 times the column sums of the packed B block.
  static void prepare(std::size_t units, const std::uint32_t* packed_b, std::size_t columns, std::int32_t* init) {
    for (std::size_t j = 0; j < columns; j += Native::tile_columns)
      Native::column_corrections(units, packed_b + j * units, init + j);
  }

  static void multiply_tile(std::size_t units, const std::uint32_t* a, const std::uint32_t* b, const std::int32_t* init,
                            std::int32_t* dst, std::size_t ldd, bool accumulate) {
    Native::multiply_tile(units, a, b, init, dst, ldd, accumulate);
  }
};

struct avx_vnni {
  static constexpr std::size_t tile_rows = kd::native_int8::avx::tile_rows;
  static constexpr std::size_t tile_columns = kd::native_int8::avx::tile_columns;
  static void column_corrections(std::size_t units, const std::uint32_t* panel, std::int32_t* init) {
    kd::native_int8::avx::column_corrections(units, panel, init);
  }
  static void multiply_tile(std::size_t units, const std::uint32_t* a, const std::uint32_t* b, const std::int32_t* init,
                            std::int32_t* dst, std::size_t ldd, bool accumulate) {
    kd::native_int8::avx::multiply_tile(units, a, b, init, dst, ldd, accumulate);
  }
};
#endif

#if MIXPREC_KERNELS_INT8_AVX512_VNNI
#ifdef MIXPREC_KERNELS_HAVE_AMX
/// The AMX-INT8 kernel of gemm_native_int8.hpp. tdpbssd reads op(A) as rows of units (16 at a
/// time), so op(A) is packed row by row (panels of one row); op(B) as the vpdpbusd kernels have it
/// (panels of 32 columns, unit by unit), both signed; every lane's units zero-padded to whole
/// steps of 16, so that the tiles never take a partial step.
struct amx_kernel {
  static constexpr unit_format a_format = unit_format::quads;
  static constexpr unit_format b_format = unit_format::quads;
  static constexpr bool has_init = false;
  static constexpr std::size_t tile_rows = kd::amx::tile_rows;
  static constexpr std::size_t a_panel_rows = 1;
  static constexpr std::size_t depth_block = kd::gemm_int8_amx_depth_block;
  static constexpr std::size_t max_tile_columns = kd::amx::tile_columns;
  static std::size_t tile_columns() { return kd::amx::tile_columns; }
  static std::size_t packed_units(std::size_t depth) {
    return kd::round_up(kd::ceil_div(depth, 4), kd::amx::step_units);
  }
  /// The tile configuration is per thread: loaded before a rectangle's first tile, released after.
  static void begin() { kd::amx::begin(); }
  static void end() { kd::amx::end(); }

  static void prepare(std::size_t, const std::uint32_t*, std::size_t, std::int32_t*) {}

  static void multiply_tile(std::size_t units, const std::uint32_t* a, const std::uint32_t* b, const std::int32_t*,
                            std::int32_t* dst, std::size_t ldd, bool accumulate) {
    kd::native_int8::amx_multiply_tile(units / kd::amx::step_units, a, units, b, dst, ldd, accumulate);
  }
};
#endif

struct avx512_vnni {
  static constexpr std::size_t tile_rows = kd::native_int8::avx512::tile_rows;
  static constexpr std::size_t tile_columns = kd::native_int8::avx512::tile_columns;
  static void column_corrections(std::size_t units, const std::uint32_t* panel, std::int32_t* init) {
    kd::native_int8::avx512::column_corrections(units, panel, init);
  }
  static void multiply_tile(std::size_t units, const std::uint32_t* a, const std::uint32_t* b, const std::int32_t* init,
                            std::int32_t* dst, std::size_t ldd, bool accumulate) {
    kd::native_int8::avx512::multiply_tile(units, a, b, init, dst, ldd, accumulate);
  }
};
#endif

/// A packed block of op(A) (rows x units) times a packed block of op(B) (units x columns) into
/// dst, stored (or added when `accumulate`), tile by tile: B micro-panels in the outer loop, so
/// each stays in L1 while the A panels of the block (in L2) go by.
template <class Kernel>
void multiply_packed(const std::uint32_t* a, const std::uint32_t* b, const std::int32_t* init, std::size_t rows,
                     std::size_t columns, std::size_t units, std::int32_t* dst, std::size_t ldd, bool accumulate) {
  constexpr std::size_t tile_rows = Kernel::tile_rows;
  const std::size_t tile_columns = Kernel::tile_columns();
  // Ragged edge tiles run the same kernel on this full-size copy.
  std::int32_t edge[tile_rows * Kernel::max_tile_columns] = {};
  for (std::size_t j = 0; j < columns; j += tile_columns) {
    const std::uint32_t* b_panel = b + j * units;
    const std::int32_t* tile_init = Kernel::has_init ? init + j : nullptr;
    const std::size_t edge_columns = std::min(tile_columns, columns - j);
    for (std::size_t i = 0; i < rows; i += tile_rows) {
      const std::uint32_t* a_panel = a + i * units;
      std::int32_t* out = dst + i * ldd + j;
      const std::size_t edge_rows = std::min(tile_rows, rows - i);
      if (edge_rows == tile_rows && edge_columns == tile_columns) {
        Kernel::multiply_tile(units, a_panel, b_panel, tile_init, out, ldd, accumulate);
        continue;
      }
      if (accumulate) {
        for (std::size_t r = 0; r < edge_rows; ++r)
          std::memcpy(edge + r * tile_columns, out + r * ldd, edge_columns * sizeof(std::int32_t));
      }
      Kernel::multiply_tile(units, a_panel, b_panel, tile_init, edge, tile_columns, accumulate);
      for (std::size_t r = 0; r < edge_rows; ++r)
        std::memcpy(out + r * ldd, edge + r * tile_columns, edge_columns * sizeof(std::int32_t));
    }
  }
}

/// One thread's rectangle of C: depth blocks of kc (the first stores, the others add), B packed
/// once per block of nc columns and kc depth, A once per block of mc rows within it.
template <class Kernel>
void multiply_rectangle(const kd::gemm_int8_problem& problem, kd::index_range rows, kd::index_range columns) {
  static_assert(unit_depth<Kernel::a_format> == unit_depth<Kernel::b_format>);
  const std::size_t tile_columns = Kernel::tile_columns();
  const std::size_t kc = std::min(Kernel::depth_block, problem.k);
  const std::size_t mc = std::min(kd::gemm_int8_row_block, rows.size());
  const std::size_t nc = std::min(kd::gemm_int8_column_block, columns.size());
  const std::size_t max_units = Kernel::packed_units(kc);

  kd::gemm_workspace& workspace = kd::thread_gemm_workspace();
  std::uint32_t* packed_a = workspace.packed_a.get<std::uint32_t>(max_units * kd::round_up(mc, Kernel::tile_rows));
  std::uint32_t* packed_b = workspace.packed_b.get<std::uint32_t>(max_units * kd::round_up(nc, tile_columns));
  std::int32_t* init = Kernel::has_init ? workspace.accumulators.get<std::int32_t>(kd::round_up(nc, tile_columns))
                                        : nullptr;

  if constexpr (requires { Kernel::begin(); }) Kernel::begin();
  for (std::size_t jc = columns.begin; jc < columns.end; jc += nc) {
    const std::size_t block_columns = std::min(nc, columns.end - jc);
    for (std::size_t pc = 0; pc < problem.k; pc += kc) {
      const std::size_t depth = std::min(kc, problem.k - pc);
      const std::size_t units = Kernel::packed_units(depth);
      // op(B)(p, j) is B[p][j], or B[j][p] when transposed.
      if (problem.trans_b) {
        pack<Kernel::b_format>(problem.b + jc * problem.ldb + pc, problem.ldb, 1, block_columns, depth, tile_columns,
                               units, packed_b);
      } else {
        pack<Kernel::b_format>(problem.b + pc * problem.ldb + jc, 1, problem.ldb, block_columns, depth, tile_columns,
                               units, packed_b);
      }
      Kernel::prepare(units, packed_b, kd::round_up(block_columns, tile_columns), init);
      for (std::size_t ic = rows.begin; ic < rows.end; ic += mc) {
        const std::size_t block_rows = std::min(mc, rows.end - ic);
        // op(A)(i, p) is A[i][p], or A[p][i] when transposed.
        constexpr std::size_t rows_per_panel = Kernel::a_panel_rows;
        if (problem.trans_a) {
          pack<Kernel::a_format>(problem.a + pc * problem.lda + ic, 1, problem.lda, block_rows, depth, rows_per_panel,
                                 units, packed_a);
        } else {
          pack<Kernel::a_format>(problem.a + ic * problem.lda + pc, problem.lda, 1, block_rows, depth, rows_per_panel,
                                 units, packed_a);
        }
        if constexpr (rows_per_panel == 1) {  // a ragged tile's missing rows are read (and dropped): zeros
          std::fill(packed_a + block_rows * units, packed_a + kd::round_up(block_rows, Kernel::tile_rows) * units, 0u);
        }
        multiply_packed<Kernel>(packed_a, packed_b, init, block_rows, block_columns, units,
                                problem.c + ic * problem.ldc + jc, problem.ldc, pc != 0);
      }
    }
  }
  if constexpr (requires { Kernel::end(); }) Kernel::end();
}

template <class Kernel>
void run_on_pool(const kd::gemm_int8_problem& problem) {
  const std::shared_ptr<thread_pool> pool = kd::gemm_thread_pool();
  // The float GEMM's split, minimum work per thread included: int8 multiply-adds are cheaper,
  // but small GEMMs run their tiles far below the kernel's peak (a 256 x 10 C fills a third of
  // each 32-column tile), and splitting 256 x 1024 x 10 across two threads halves its time.
  const kd::gemm_split split(problem.m, problem.n, problem.k, Kernel::tile_rows,
                             Kernel::tile_columns(), pool->available_threads());
  pool->run(split.tasks(), [&](std::size_t task) {
    multiply_rectangle<Kernel>(problem, split.rows(task), split.columns(task));
  });
}

inline kd::int8_gemm_kernel chosen_kernel() {
#if MIXPREC_KERNELS_INT8_AVX_VNNI
  if (kd::native_int8_enabled()) {
#if MIXPREC_KERNELS_INT8_AVX512_VNNI
#ifdef MIXPREC_KERNELS_HAVE_AMX
    if (kd::amx_int8_enabled() && kd::amx_int8_supported()) return kd::int8_gemm_kernel::amx_int8;
#endif
    if (kd::avx512_vnni_supported()) return kd::int8_gemm_kernel::avx512_vnni;
#endif
    if (kd::avx_vnni_supported()) return kd::int8_gemm_kernel::avx_vnni;
  }
#endif
  return kd::int8_gemm_kernel::highway;
}

// A template only so that a translation unit compiles the GEMM (every kernel, for this target)
// where GemmInt8 is instantiated, not wherever this file is included.
template <class = void>
void run_gemm(const kd::gemm_int8_problem& problem) {
  if (problem.m == 0 || problem.n == 0) return;
  if (problem.k == 0) {  // A and B are not read
    for (std::size_t i = 0; i < problem.m; ++i) std::fill_n(problem.c + i * problem.ldc, problem.n, 0);
    return;
  }
  switch (chosen_kernel()) {
#if MIXPREC_KERNELS_INT8_AVX512_VNNI
#ifdef MIXPREC_KERNELS_HAVE_AMX
    case kd::int8_gemm_kernel::amx_int8: return run_on_pool<amx_kernel>(problem);
#endif
    case kd::int8_gemm_kernel::avx512_vnni: return run_on_pool<vnni_kernel<avx512_vnni>>(problem);
#endif
#if MIXPREC_KERNELS_INT8_AVX_VNNI
    case kd::int8_gemm_kernel::avx_vnni: return run_on_pool<vnni_kernel<avx_vnni>>(problem);
#endif
    default: return run_on_pool<highway_kernel>(problem);
  }
}

}  // namespace int8_gemm

template <class = void>
void GemmInt8(const detail::gemm_int8_problem& problem) { int8_gemm::run_gemm<>(problem); }
template <class = void>
detail::int8_gemm_kernel GemmInt8Kernel() { return int8_gemm::chosen_kernel(); }

MIXPREC_KERNELS_END

#undef MIXPREC_KERNELS_INT8_AVX512_VNNI
#undef MIXPREC_KERNELS_INT8_AVX_VNNI
#undef MIXPREC_KERNELS_INT8_PMADDWD

#endif  // toggle guard
