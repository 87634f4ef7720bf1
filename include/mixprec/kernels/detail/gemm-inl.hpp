// Per-target GEMM: packing (op(A) into panels of tile_rows rows, op(B) into panels of
// tile_columns columns, 16-bit operands widened to float on the way), a register-tiled
// micro-kernel of multiply-adds run over packed blocks, and the roundings of a 16-bit C; the
// blocked loop nest around them (gemm_driver.hpp) is compiled once, not per target. On AVX3
// targets, bfloat16 x bfloat16 GEMMs use the hand-written AMX-BF16 or vdpbf16ps micro-kernel of
// gemm_native_bf16.hpp when the CPU has it. Toggle-guarded: compiled once per target.
#if defined(MIXPREC_KERNELS_GEMM_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef MIXPREC_KERNELS_GEMM_INL_HPP_
#undef MIXPREC_KERNELS_GEMM_INL_HPP_
#else
#define MIXPREC_KERNELS_GEMM_INL_HPP_
#endif

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

#include <hwy/highway.h>
#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/detail/common-inl.hpp>
#include <mixprec/kernels/detail/convert-inl.hpp>
#include <mixprec/kernels/detail/gemm_blocking.hpp>
#include <mixprec/kernels/detail/gemm_driver.hpp>
#include <mixprec/kernels/detail/gemm_entry_points.hpp>
#include <mixprec/kernels/detail/gemm_native_bf16.hpp>
#include <mixprec/kernels/detail/kernel_macros.hpp>
#include <mixprec/kernels/thread_pool.hpp>

// The native kernel is compiled into the AVX3 (and better) code only: forcing a lower target
// must never run it.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3 && defined(MIXPREC_KERNELS_HAVE_NATIVE_BF16)
#define MIXPREC_KERNELS_GEMM_NATIVE_BF16 1
#else
#define MIXPREC_KERNELS_GEMM_NATIVE_BF16 0
#endif

MIXPREC_KERNELS_BEGIN
namespace gemm_kernels {
namespace hn = hwy::HWY_NAMESPACE;
namespace kd = mixprec::kernels::detail;

using D = hn::ScalableTag<float>;
constexpr std::size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);

/// Lanes(D()) elements of T read as As, the dtype the product takes them in, widened to float:
/// exactly when T is As; a float rounded to a 16-bit As (nearest even, as cast<As>), when a
/// float32 operand is multiplied as the other operand's 16-bit dtype (a weight under a mixed
/// policy, packed without a 16-bit copy).
template <class As, class T>
HWY_INLINE hn::Vec<D> load_as(const T* p) {
  if constexpr (std::is_same_v<T, As>) {
    return load_as_f32(p);
  } else {
    static_assert(std::is_same_v<T, float>, "only a float operand is read as another dtype");
    HWY_ALIGN As narrow[kMaxLanes];
    store_as(hn::LoadU(D(), p), narrow);
    return load_as_f32(narrow);
  }
}

/// dst[i] = src[i] read as As (load_as) for i < count; then zeros up to `width`.
template <class As, class T>
void widen_padded(const T* src, std::size_t count, std::size_t width, float* dst) {
  for_each_block<kMaxLanes>(src, dst, count, hn::Lanes(D()),
                            [](const T* in, float* out) { hn::StoreU(load_as<As>(in), D(), out); });
  std::fill(dst + count, dst + width, 0.0f);
}

/// Packs `lanes` lanes of `depth` elements into panels of `width` lanes, as floats, zero-padded:
/// dst[(panel * depth + p) * width + l] = element (panel * width + l, p), which is at
/// src[lane * lane_stride + p * depth_stride], read as As (load_as). One of the strides is 1 (the
/// other is the leading dimension). Panels are written in order, row by row; `staging` holds
/// width * depth floats.
template <class As, class T>
HWY_INLINE void pack_panels(const T* src, std::size_t lane_stride, std::size_t depth_stride, std::size_t lanes,
                            std::size_t depth, std::size_t width, float* dst, float* staging) {
  for (std::size_t first = 0; first < lanes; first += width, dst += depth * width) {
    const T* panel = src + first * lane_stride;
    const std::size_t count = std::min(width, lanes - first);
    if (depth_stride != 1) {  // a depth element's lanes are contiguous: widen them row by row
      for (std::size_t p = 0; p < depth; ++p)
        widen_padded<As>(panel + p * depth_stride, count, width, dst + p * width);
      continue;
    }
    // Each lane is contiguous: read the panel's lanes side by side (a stream each; one lane after
    // the other would touch a new page per lane when the leading dimension is large). float and
    // bfloat16 (a shift) are read in place; float16, and a float read as a 16-bit dtype, are
    // widened into `staging` first.
    const auto interleave = [&](const auto* lines, std::size_t line_stride, auto widen) {
      for (std::size_t p = 0; p < depth; ++p) {
        float* row = dst + p * width;
        for (std::size_t l = 0; l < count; ++l) row[l] = widen(lines[l * line_stride + p]);
        std::fill(row + count, row + width, 0.0f);
      }
    };
    if constexpr (std::is_same_v<T, float16> || !std::is_same_v<T, As>) {
      for (std::size_t l = 0; l < count; ++l)
        widen_padded<As>(panel + l * lane_stride, depth, depth, staging + l * depth);
      interleave(staging, depth, [](float x) { return x; });
    } else {
      interleave(panel, lane_stride, [](T x) {
        if constexpr (std::is_same_v<T, bfloat16>) {
          return std::bit_cast<float>(static_cast<std::uint32_t>(x.to_bits()) << 16);
        } else {
          return x;
        }
      });
    }
  }
}

/// Depth rows of a 16-bit operand that pack_narrow_panels widens at once: at most this many
/// floats of staging (16 KiB, in L1).
constexpr std::size_t narrow_staging_floats = 4096;

/// pack_panels for a panel as narrow as a register tile's rows (kWidth, a compile-time constant),
/// where a depth element's lanes are contiguous (op(A) transposed: A is k x m). Depth row by depth
/// row across every panel, so the source is read in order, and each panel takes a fixed-size
/// copy of kWidth floats (a few moves). A 16-bit source is first widened into `staging` at full
/// vector width: row by row, or, when the rows are contiguous (depth_stride == lanes: conv1's
/// 9-element rows), many rows at once, since a row shorter than a vector would each go through
/// a zero-padded partial vector. Nothing outside the elements is read. `staging` holds
/// narrow_staging_floats + lanes floats.
template <std::size_t kWidth, class T>
void pack_narrow_panels(const T* src, std::size_t depth_stride, std::size_t lanes, std::size_t depth, float* dst,
                        float* staging) {
  const std::size_t full_panels = lanes / kWidth;
  const std::size_t rest = lanes - full_panels * kWidth;
  const std::size_t group = depth_stride == lanes ? std::max<std::size_t>(1, narrow_staging_floats / lanes) : 1;
  for (std::size_t first = 0; first < depth; first += group) {
    const std::size_t rows = std::min(group, depth - first);
    const float* span = nullptr;
    if constexpr (std::is_same_v<T, float>) {
      span = src + first * depth_stride;
    } else {
      const std::size_t span_length = (rows - 1) * depth_stride + lanes;
      widen_padded<T>(src + first * depth_stride, span_length, span_length, staging);
      span = staging;
    }
    for (std::size_t r = 0; r < rows; ++r) {
      const float* row = span + r * depth_stride;
      float* out = dst + (first + r) * kWidth;
      for (std::size_t panel = 0; panel < full_panels; ++panel, row += kWidth, out += depth * kWidth)
        std::memcpy(out, row, kWidth * sizeof(float));
      if (rest == 0) continue;
      std::memcpy(out, row, rest * sizeof(float));
      std::fill(out + rest, out + kWidth, 0.0f);
    }
  }
}

HWY_INLINE void update_vector(D d, float* out, hn::Vec<D> sums, const kd::gemm_tile_update& update) {
  const auto alpha = hn::Set(d, update.alpha);
  if (update.accumulate) {
    hn::StoreU(hn::MulAdd(alpha, sums, hn::LoadU(d, out)), d, out);
  } else if (update.beta == 0.0f) {
    hn::StoreU(hn::Mul(alpha, sums), d, out);
  } else {
    hn::StoreU(hn::MulAdd(hn::Set(d, update.beta), hn::LoadU(d, out), hn::Mul(alpha, sums)), d, out);
  }
}

/// What the Highway kernels share: operands packed as float panels (16-bit ones widened), and
/// the same blocks on every machine.
template <std::size_t TileRows>
struct highway_packing {
  using packed_type = float;
  static constexpr std::size_t tile_rows = TileRows;
  static std::size_t packed_depth(std::size_t depth) { return depth; }
  static kd::gemm_blocks blocks() { return kd::highway_gemm_blocks; }
  /// B is packed whole before A's blocks (measured on Zen 5: packing it as multiply_packing_b does
  /// is 1% slower for float).
  static bool packs_b_before_use(std::size_t /*packed_b_bytes*/) { return false; }

  /// op(A) into panels of tile_rows rows. Inlined where it is called, so that the panel width is
  /// a constant there (the interleaving loop of pack_panels is 15% of a float forward GEMM's time
  /// when it is not: conv2's).
  template <class T>
  HWY_INLINE static void pack_a(const T* src, std::size_t lane_stride, std::size_t depth_stride, std::size_t lanes,
                                std::size_t depth, float* dst, kd::gemm_workspace& workspace) {
    if (depth_stride != 1) {  // op(A) transposed: a depth element's rows are contiguous
      float* staging = workspace.staging.get<float>(narrow_staging_floats + lanes);
      return pack_narrow_panels<tile_rows>(src, depth_stride, lanes, depth, dst, staging);
    }
    pack_b<T>(src, lane_stride, depth_stride, lanes, depth, tile_rows, dst, workspace);  // B's general packing
  }

  /// op(B) into panels of `width` (tile_columns()) columns, read as As (load_as).
  template <class As, class T>
  HWY_INLINE static void pack_b(const T* src, std::size_t lane_stride, std::size_t depth_stride, std::size_t lanes,
                                std::size_t depth, std::size_t width, float* dst, kd::gemm_workspace& workspace) {
    float* staging = workspace.staging.get<float>(width * depth);
    pack_panels<As>(src, lane_stride, depth_stride, lanes, depth, width, dst, staging);
  }
};

/// Rows of the Highway micro-kernel's tile: 12 where the target has 32 vector registers
/// (AVX-512: 24 sums, two vectors of B and a broadcast), 6 elsewhere (12 sums of AVX2's 16).
#if HWY_TARGET <= HWY_AVX3
inline constexpr std::size_t highway_tile_rows = 12;
#else
inline constexpr std::size_t highway_tile_rows = 6;
#endif

/// The Highway micro-kernel: a highway_tile_rows x (2 vectors) tile (6 x 16 floats on AVX2, 12 x
/// 32 on AVX3) held in accumulators; each depth step loads two vectors of B, broadcasts a column
/// of A and does two multiply-adds (fused where the target has FMA) per row. Each element of C
/// sees the same operations whatever the tile's shape, so targets that fuse alike (AVX3 and
/// AVX2; SSE4 and SCALAR) agree to the bit.
struct highway_kernel : highway_packing<highway_tile_rows> {
  static constexpr kd::gemm_kernel_kind kind = kd::gemm_kernel_kind::highway;
  static constexpr std::size_t max_tile_columns = 2 * kMaxLanes;
  static std::size_t tile_columns() { return 2 * hn::Lanes(D()); }

  /// The whole tile, also for a ragged edge (rows x columns of it are wanted).
  static void multiply_tile(std::size_t depth, const float* HWY_RESTRICT a, const float* HWY_RESTRICT b,
                            float* HWY_RESTRICT dst, std::size_t ldd, kd::gemm_tile_update update,
                            std::size_t /*rows*/, std::size_t /*columns*/) {
    const D d;
    const std::size_t lanes = hn::Lanes(d);
    hn::Vec<D> sums[tile_rows][2];
#pragma GCC unroll 12
    for (std::size_t r = 0; r < tile_rows; ++r) sums[r][0] = sums[r][1] = hn::Zero(d);
    for (std::size_t p = 0; p < depth; ++p, a += tile_rows, b += 2 * lanes) {
      const auto b0 = hn::Load(d, b);
      const auto b1 = hn::Load(d, b + lanes);
#pragma GCC unroll 12
      for (std::size_t r = 0; r < tile_rows; ++r) {
        const auto a_element = hn::Set(d, a[r]);
        sums[r][0] = hn::MulAdd(a_element, b0, sums[r][0]);
        sums[r][1] = hn::MulAdd(a_element, b1, sums[r][1]);
      }
    }
#pragma GCC unroll 12
    for (std::size_t r = 0; r < tile_rows; ++r) {
      update_vector(d, dst + r * ldd, sums[r][0], update);
      update_vector(d, dst + r * ldd + lanes, sums[r][1], update);
    }
  }
};

/// The Highway micro-kernel for C at most one vector wide (n <= 16 on AVX3, 8 on AVX2: a
/// classifier's 10 columns), where the two-vector tile would compute mostly padding: 12 rows x
/// 1 vector in 12 accumulators, 12 multiply-adds per depth step. Each element of C sees the same
/// operations as in highway_kernel, so which of the two runs does not change a bit.
struct highway_narrow_kernel : highway_packing<12> {
  static constexpr kd::gemm_kernel_kind kind = kd::gemm_kernel_kind::highway_narrow;
  static constexpr std::size_t max_tile_columns = kMaxLanes;
  static std::size_t tile_columns() { return hn::Lanes(D()); }

  static void multiply_tile(std::size_t depth, const float* HWY_RESTRICT a, const float* HWY_RESTRICT b,
                            float* HWY_RESTRICT dst, std::size_t ldd, kd::gemm_tile_update update,
                            std::size_t /*rows*/, std::size_t /*columns*/) {
    const D d;
    hn::Vec<D> sums[tile_rows];
    unroll<tile_rows>([&](auto r) { sums[r] = hn::Zero(d); });
    for (std::size_t p = 0; p < depth; ++p, a += tile_rows, b += hn::Lanes(d)) {
      const auto b_vector = hn::Load(d, b);
      unroll<tile_rows>([&](auto r) { sums[r] = hn::MulAdd(hn::Set(d, a[r]), b_vector, sums[r]); });
    }
    unroll<tile_rows>([&](auto r) { update_vector(d, dst + r * ldd, sums[r], update); });
  }
};

#if MIXPREC_KERNELS_GEMM_NATIVE_BF16
/// The vdpbf16ps micro-kernel (12 x 32) and its pair packing, for bfloat16 operands only; its
/// blocking comes from this machine's L2 size.
struct native_bf16_kernel {
  static constexpr kd::gemm_kernel_kind kind = kd::gemm_kernel_kind::native_bf16;
  using packed_type = std::uint32_t;
  static constexpr std::size_t tile_rows = kd::native_bf16::tile_rows;
  static constexpr std::size_t max_tile_columns = kd::native_bf16::tile_columns;
  static std::size_t tile_columns() { return kd::native_bf16::tile_columns; }
  static std::size_t packed_depth(std::size_t depth) { return kd::native_bf16::pairs_of(depth); }
  static kd::gemm_blocks blocks() { return kd::native_bf16_gemm_blocks(); }
  /// A packed B block larger than half of L2 is packed as multiply_packing_b goes (measured on Zen
  /// 5, 1 MiB L2, one thread: 256 x 1024 x 1024, a 2 MiB block, +2-3%); a smaller one stays in L2
  /// whole, and packing it before A's block keeps the latter in L2 (784 x 1024 x 256, 512 KiB:
  /// 1-3% slower packed as it goes).
  static bool packs_b_before_use(std::size_t packed_b_bytes) { return packed_b_bytes > kd::l2_cache_size() / 2; }

  static void pack_a(const bfloat16* src, std::size_t lane_stride, std::size_t depth_stride, std::size_t lanes,
                     std::size_t depth, std::uint32_t* dst, kd::gemm_workspace&) {
    kd::native_bf16::pack_pairs(src, lane_stride, depth_stride, lanes, depth, tile_rows,
                                kd::native_bf16::pairs_of(depth), dst);
  }
  /// op(B) in bfloat16, or in float rounded to bfloat16 as it is packed.
  template <class As, class T>
  static void pack_b(const T* src, std::size_t lane_stride, std::size_t depth_stride, std::size_t lanes,
                     std::size_t depth, std::size_t width, std::uint32_t* dst, kd::gemm_workspace&) {
    static_assert(std::is_same_v<As, bfloat16>);
    kd::native_bf16::pack_pairs(src, lane_stride, depth_stride, lanes, depth, width, kd::native_bf16::pairs_of(depth),
                                dst);
  }

  /// At least rows x columns of the tile (edge tiles run a smaller block).
  static void multiply_tile(std::size_t pairs, const std::uint32_t* a, const std::uint32_t* b, float* dst,
                            std::size_t ldd, kd::gemm_tile_update update, std::size_t rows,
                            std::size_t columns) {
    kd::native_bf16::multiply_tile(pairs, a, b, dst, ldd, update, rows, columns);
  }
};

#ifdef MIXPREC_KERNELS_HAVE_AMX
/// The AMX-BF16 micro-kernel (32 x 32, gemm_native_bf16.hpp) on Sapphire Rapids and later: op(A)
/// packed as rows of pairs, op(B) as panels of 32 columns of pairs, both zero-padded to whole
/// steps of 16 pairs; the vdpbf16ps kernel's depth blocks (its results, too, depend on them), row
/// blocks of whole tiles (144 rows would end every block in a half-empty tile).
struct amx_bf16_kernel {
  static constexpr kd::gemm_kernel_kind kind = kd::gemm_kernel_kind::amx_bf16;
  using packed_type = std::uint32_t;
  static constexpr std::size_t tile_rows = kd::amx::tile_rows;
  static constexpr std::size_t max_tile_columns = kd::amx::tile_columns;
  static std::size_t tile_columns() { return kd::amx::tile_columns; }
  /// The pairs a packed lane takes: whole steps, and one step more that is never read, so that
  /// op(A)'s rows do not lie a power of two apart (at kc 1024, 2 KiB: the 32 rows a step loads
  /// fell into 2 of L1's 64 sets, 16 lines for its 12 ways).
  static std::size_t packed_depth(std::size_t depth) {
    return kd::round_up(kd::native_bf16::pairs_of(depth), kd::amx::step_units) + kd::amx::step_units;
  }
  static kd::gemm_blocks blocks() {
    const kd::gemm_blocks native = kd::native_bf16_gemm_blocks();
    return {native.kc, 4 * tile_rows, native.nc};
  }
  static bool packs_b_before_use(std::size_t packed_b_bytes) {
    return native_bf16_kernel::packs_b_before_use(packed_b_bytes);
  }
  /// The tile configuration is per thread: loaded before a rectangle's first tile, released after.
  static void begin() { kd::amx::begin(); }
  static void end() { kd::amx::end(); }

  static void pack_a(const bfloat16* src, std::size_t lane_stride, std::size_t depth_stride, std::size_t lanes,
                     std::size_t depth, std::uint32_t* dst, kd::gemm_workspace&) {
    const std::size_t pairs = packed_depth(depth);
    kd::native_bf16::pack_pair_rows(src, lane_stride, depth_stride, lanes, depth, pairs, dst);
    // A ragged tile's missing rows are read (and dropped): zeros.
    std::fill(dst + lanes * pairs, dst + kd::round_up(lanes, tile_rows) * pairs, 0u);
  }
  template <class As, class T>
  static void pack_b(const T* src, std::size_t lane_stride, std::size_t depth_stride, std::size_t lanes,
                     std::size_t depth, std::size_t /*width: 32*/, std::uint32_t* dst, kd::gemm_workspace&) {
    static_assert(std::is_same_v<As, bfloat16>);
    kd::native_bf16::pack_pairs(src, lane_stride, depth_stride, lanes, depth, tile_columns(), packed_depth(depth), dst);
  }

  static void multiply_tile(std::size_t pairs, const std::uint32_t* a, const std::uint32_t* b, float* dst,
                            std::size_t ldd, kd::gemm_tile_update update, std::size_t rows, std::size_t /*columns*/) {
    kd::native_bf16::amx_multiply_tile(pairs / kd::amx::step_units - 1, a, pairs, b, dst, ldd, update, rows);
  }
};
#endif  // AMX
#endif

/// Multiplies a packed block of A (rows x depth) by a packed block of B (depth x columns) into
/// dst, tile by tile: B micro-panels in the outer loop, so each stays in L1 while the A panels of
/// the block (in L2) go by. A shallow block, whose packed B fits in L1 whole, goes by A panels
/// instead, writing dst row panel by row panel: down a B micro-panel's column strip each row of
/// dst is another cache line and often another page, which costs more than a shallow tile's
/// arithmetic (bf16 256 x 1024 x 10 on Zen 5: 3.7x faster). The order does not change any result.
template <class Kernel>
void multiply_packed(const typename Kernel::packed_type* a, const typename Kernel::packed_type* b, std::size_t rows,
                     std::size_t columns, std::size_t depth, float* dst, std::size_t ldd,
                     const kd::gemm_tile_update& update) {
  constexpr std::size_t tile_rows = Kernel::tile_rows;
  const std::size_t tile_columns = Kernel::tile_columns();
  const std::size_t packed_depth = Kernel::packed_depth(depth);
  const bool reads_dst = update.accumulate || update.beta != 0.0f;
  // Ragged edge tiles run the kernel on this full-size copy (the part of the tile they need), so
  // their elements see exactly the operations of a full tile.
  float edge[tile_rows * Kernel::max_tile_columns] = {};
  const auto multiply = [&](std::size_t i, std::size_t j) {
    const auto* a_panel = a + i * packed_depth;
    const auto* b_panel = b + j * packed_depth;
    float* out = dst + i * ldd + j;
    const std::size_t edge_rows = std::min(tile_rows, rows - i);
    const std::size_t edge_columns = std::min(tile_columns, columns - j);
    if (edge_rows == tile_rows && edge_columns == tile_columns) {
      Kernel::multiply_tile(packed_depth, a_panel, b_panel, out, ldd, update, tile_rows, tile_columns);
      return;
    }
    if (reads_dst) {
      for (std::size_t r = 0; r < edge_rows; ++r)
        std::memcpy(edge + r * tile_columns, out + r * ldd, edge_columns * sizeof(float));
    }
    Kernel::multiply_tile(packed_depth, a_panel, b_panel, edge, tile_columns, update, edge_rows, edge_columns);
    for (std::size_t r = 0; r < edge_rows; ++r)
      std::memcpy(out + r * ldd, edge + r * tile_columns, edge_columns * sizeof(float));
  };
  constexpr std::size_t l1_bytes = 32 * 1024;  // the smallest L1d of the CPUs these targets run on
  const bool shallow =
      packed_depth * kd::round_up(columns, tile_columns) * sizeof(typename Kernel::packed_type) <= l1_bytes;
  if (shallow) {
    for (std::size_t i = 0; i < rows; i += tile_rows)
      for (std::size_t j = 0; j < columns; j += tile_columns) multiply(i, j);
  } else {
    for (std::size_t j = 0; j < columns; j += tile_columns)
      for (std::size_t i = 0; i < rows; i += tile_rows) multiply(i, j);
  }
}

/// c = round(sums + beta * c) for a rows x columns block, rounding once to nearest even;
/// beta == 0 does not read c.
template <class TC>
void store_rounded(const float* sums, std::size_t lds, std::size_t rows, std::size_t columns, float beta, TC* c,
                   std::size_t ldc) {
  const D d;
  const std::size_t lanes = hn::Lanes(d);
  const auto round_vector = [&](const float* in, TC* out) {
    auto x = hn::LoadU(d, in);
    if (beta != 0.0f) x = hn::MulAdd(hn::Set(d, beta), load_as_f32(out), x);
    store_as(x, out);
  };
  for (std::size_t r = 0; r < rows; ++r, sums += lds, c += ldc) {
    std::size_t j = 0;
    for (; j + lanes <= columns; j += lanes) round_vector(sums + j, c + j);
    if (j == columns) continue;
    float sums_tail[kMaxLanes] = {};
    TC c_tail[kMaxLanes] = {};
    std::memcpy(sums_tail, sums + j, (columns - j) * sizeof(float));
    if (beta != 0.0f) std::memcpy(c_tail, c + j, (columns - j) * sizeof(TC));
    round_vector(sums_tail, c_tail);
    std::memcpy(c + j, c_tail, (columns - j) * sizeof(TC));
  }
}


/// A depth split's end (kd::run_depth_split): D = alpha * sum_0 (+ beta * C for a float C), then
/// D += alpha * sum_b in block order, D overwriting sum_0; a 16-bit C is then rounded from D.
template <class TA, class TB, class TC>
void sum_depth_blocks(const kd::gemm_problem<TA, TB, TC>& problem, float* block_sums, std::size_t blocks,
                      std::size_t ld) {
  const D d;
  const std::size_t lanes = hn::Lanes(d);
  const std::size_t m = problem.m, n = problem.n, block_size = m * ld;
  constexpr bool float_c = std::is_same_v<TC, float>;
  const auto alpha = hn::Set(d, problem.alpha), beta = hn::Set(d, problem.beta);
  for (std::size_t i = 0; i < m; ++i) {
    float* total = block_sums + i * ld;
    TC* c_row = problem.c + i * problem.ldc;
    for (std::size_t j = 0; j < n; j += lanes) {
      // Only the n real columns are read (the blocks leave a row's padding unwritten): the last
      // vector of a row through a zero-padded copy.
      const std::size_t count = std::min(lanes, n - j);
      const auto load = [&](const float* from) {
        if (count == lanes) return hn::LoadU(d, from);
        float part[kMaxLanes] = {};
        std::memcpy(part, from, count * sizeof(float));
        return hn::LoadU(d, part);
      };
      auto sum = hn::Mul(alpha, load(total + j));
      if constexpr (float_c) {
        if (problem.beta != 0.0f) sum = hn::MulAdd(beta, load(c_row + j), sum);
      }
      for (std::size_t block = 1; block < blocks; ++block)
        sum = hn::MulAdd(alpha, load(total + block * block_size + j), sum);
      hn::Store(sum, d, total + j);
    }
    if constexpr (float_c) {
      std::memcpy(c_row, total, n * sizeof(float));
    } else {
      store_rounded(total, ld, 1, n, problem.beta, c_row, problem.ldc);
    }
  }
}

/// Kernel as this target compiled it for these operand dtypes: what kd::run_gemm's loop nest
/// and kd::pack_whole_b call.
template <class Kernel, class TA, class TB>
kd::gemm_micro_kernel<TA, TB> micro_kernel() {
  using packed_type = typename Kernel::packed_type;
  kd::gemm_micro_kernel<TA, TB> kernel{};
  kernel.choice = {HWY_TARGET, Kernel::kind};
  kernel.tile_rows = Kernel::tile_rows;
  kernel.tile_columns = Kernel::tile_columns();
  kernel.lanes = hn::Lanes(D());
  kernel.packed_size = sizeof(packed_type);
  kernel.blocks = Kernel::blocks();
  kernel.packed_depth = &Kernel::packed_depth;
  kernel.packs_b_before_use = &Kernel::packs_b_before_use;
  if constexpr (requires { Kernel::begin(); }) {
    kernel.begin = &Kernel::begin;
    kernel.end = &Kernel::end;
  }
  kernel.pack_a = [](const TA* src, std::size_t lane_stride, std::size_t depth_stride, std::size_t lanes,
                     std::size_t depth, void* dst, kd::gemm_workspace& workspace) {
    Kernel::pack_a(src, lane_stride, depth_stride, lanes, depth, static_cast<packed_type*>(dst), workspace);
  };
  kernel.pack_b = [](const TB* src, std::size_t lane_stride, std::size_t depth_stride, std::size_t lanes,
                     std::size_t depth, void* dst, kd::gemm_workspace& workspace) {
    Kernel::template pack_b<TA>(src, lane_stride, depth_stride, lanes, depth, Kernel::tile_columns(),
                                static_cast<packed_type*>(dst), workspace);
  };
  kernel.multiply_packed = [](const void* a, const void* b, std::size_t rows, std::size_t columns, std::size_t depth,
                              float* dst, std::size_t ldd, const kd::gemm_tile_update& update) {
    multiply_packed<Kernel>(static_cast<const packed_type*>(a), static_cast<const packed_type*>(b), rows, columns,
                            depth, dst, ldd, update);
  };
  return kernel;
}
/// The same, with this target's rounding of a C of dtype TC.
template <class Kernel, class TA, class TB, class TC>
kd::gemm_kernel_into<TA, TB, TC> kernel_into() {
  kd::gemm_kernel_into<TA, TB, TC> kernel{micro_kernel<Kernel, TA, TB>(), nullptr, &sum_depth_blocks<TA, TB, TC>};
  if constexpr (!std::is_same_v<TC, float>) kernel.store_rounded = &store_rounded<TC>;
  return kernel;
}

inline bool native_bf16_usable() {
#if MIXPREC_KERNELS_GEMM_NATIVE_BF16
  return kd::native_bf16_enabled() && kd::native_bf16_supported();
#else
  return false;
#endif
}

#ifdef MIXPREC_KERNELS_HAVE_AMX
inline bool amx_bf16_usable() {
  return native_bf16_usable() && kd::amx_bf16_enabled() && kd::amx_bf16_supported();
}
#endif

template <class Kernel>
struct kernel_tag {
  using type = Kernel;
};

/// Calls run(kernel_tag<Kernel>()) with the micro-kernel a GEMM with an A of dtype TA and n
/// columns runs on this target now: the one place that chooses it.
template <class TA, class Run>
decltype(auto) with_kernel(std::size_t n, Run&& run) {
#if MIXPREC_KERNELS_GEMM_NATIVE_BF16
  if constexpr (std::is_same_v<TA, bfloat16>) {  // B: bfloat16, or float rounded to it
#ifdef MIXPREC_KERNELS_HAVE_AMX
    if (amx_bf16_usable()) return run(kernel_tag<amx_bf16_kernel>());
#endif
    if (native_bf16_usable()) return run(kernel_tag<native_bf16_kernel>());
  }
#endif
#if HWY_TARGET <= HWY_AVX2
  // Not compiled for SSE4 and SCALAR, where "narrow" means n <= 4 or 1 (rare, and the two-vector
  // tile gives the same bits): it would cost every TU that calls a GEMM two more kernels.
  if (n <= hn::Lanes(D())) return run(kernel_tag<highway_narrow_kernel>());
#else
  (void)n;
#endif
  return run(kernel_tag<highway_kernel>());
}

template <class TA, class TB, class TC>
void run_gemm(const kd::gemm_problem<TA, TB, TC>& problem) {
  with_kernel<TA>(problem.n, [&](auto kernel) {
    kd::run_gemm(kernel_into<typename decltype(kernel)::type, TA, TB, TC>(), problem);
  });
}

/// op(B) packed whole for the kernel a GEMM with an A of dtype TA runs now.
template <class TA, class TB>
kd::packed_b_data pack_whole_b(const kd::pack_b_problem<TB>& problem) {
  return with_kernel<TA>(problem.n, [&](auto kernel) {
    return kd::pack_whole_b(micro_kernel<typename decltype(kernel)::type, TA, TB>(), problem);
  });
}

}  // namespace gemm_kernels

template <class = void>
void GemmF32(const detail::gemm_problem<float, float, float>& problem) { gemm_kernels::run_gemm(problem); }
template <class = void>
void GemmBF16ToF32(const detail::gemm_problem<bfloat16, bfloat16, float>& problem) { gemm_kernels::run_gemm(problem); }
template <class = void>
void GemmBF16ToBF16(const detail::gemm_problem<bfloat16, bfloat16, bfloat16>& problem) {
  gemm_kernels::run_gemm(problem);
}
template <class = void>
void GemmBF16F32ToF32(const detail::gemm_problem<bfloat16, float, float>& problem) { gemm_kernels::run_gemm(problem); }
template <class = void>
void GemmF16ToF32(const detail::gemm_problem<float16, float16, float>& problem) { gemm_kernels::run_gemm(problem); }
template <class = void>
void GemmF16ToF16(const detail::gemm_problem<float16, float16, float16>& problem) { gemm_kernels::run_gemm(problem); }
template <class = void>
void GemmF16F32ToF32(const detail::gemm_problem<float16, float, float>& problem) { gemm_kernels::run_gemm(problem); }
template <class = void>
bool GemmUsesNativeBF16() { return gemm_kernels::native_bf16_usable(); }
template <class TA, class TB>
detail::packed_b_data PackB(const detail::pack_b_problem<TB>& problem) {
  return gemm_kernels::pack_whole_b<TA>(problem);
}
template <class TA>
detail::gemm_kernel_choice GemmKernel(std::size_t n) {
  return gemm_kernels::with_kernel<TA>(n, [](auto kernel) {
    return detail::gemm_kernel_choice{HWY_TARGET, decltype(kernel)::type::kind};
  });
}

MIXPREC_KERNELS_END

#undef MIXPREC_KERNELS_GEMM_NATIVE_BF16

#endif  // toggle guard
