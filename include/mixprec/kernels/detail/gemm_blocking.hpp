// Target-independent pieces of the GEMM: cache blocking (for the native bfloat16 kernel, from the
// L2 size this CPU reports), the split of C across threads, each thread's packing workspace, and
// how a finished tile updates its destination.
#pragma once

#include <algorithm>
#include <cstddef>
#include <new>

#if __has_include(<unistd.h>)
#include <unistd.h>  // sysconf
#endif

namespace mixprec::kernels::detail {

// Cache blocking: the Goto/BLIS loop nest (columns by nc, depth by kc, rows by mc, then
// micro-tiles). The summation order of every C element: the depth blocks start at 0 and are kc
// long whatever the thread count; each block's sum starts from zero and adds its products in
// depth order (one multiply-add each); then D = alpha * sum_0 (+ beta * D for a float C), and
// D += alpha * sum_b for b = 1, 2, ... in block order (one multiply-add each), D being C (float)
// or the float accumulator a 16-bit C is rounded from once at the end. Neither the split of C
// across threads, nor a split of the depth blocks across threads (gemm_depth_split, whose block
// sums are added up afterwards in that same order), nor the register tile changes any of it:
// results are bit-identical for any number of threads (on one machine: the native bfloat16
// kernel's kc depends on its cache sizes).
struct gemm_blocks {
  std::size_t kc;  // depth
  std::size_t mc;  // rows of op(A) packed at once
  std::size_t nc;  // columns of op(B) packed at once
};

// The Highway kernels' blocks, chosen on an AMD Zen 3 (32 KiB L1d, 512 KiB L2 per core, 32 MiB
// L3) and kept everywhere, so float results do not depend on the machine:
//  - kc = 256: a packed B micro-panel (kc x nr: 16 KiB of floats for the 6 x 16 AVX2 tile)
//    stays in L1 while every A micro-panel of the block streams past it;
//  - mc = 144 (24 six-row panels, or 12 of AVX-512's twelve rows): the packed A block, mc x kc
//    floats = 144 KiB, stays in L2 while the B micro-panels go by;
//  - nc = 1024: the packed B panel, kc x nc floats = 1 MiB, stays in L3; A is packed once per
//    nc columns, which is negligible next to the 2 * nc flops done per packed element.
inline constexpr gemm_blocks highway_gemm_blocks{256, 144, 1024};

// A 16-bit C is rounded once, at the end: its sums build up in a float buffer of at most this
// many rows by nc columns (2.25 MiB). B is packed again for every such row chunk, which costs
// about 1 / (2 * 576) of the flops.
inline constexpr std::size_t gemm_accumulator_rows = 576;

/// The per-core L2 cache size in bytes the C library reports (glibc reads CPUID); a size
/// outside [64 KiB, 64 MiB] (unknown, or nonsense from a hypervisor) is replaced by 512 KiB.
inline std::size_t detect_l2_cache_size() {
  long reported = 0;
#ifdef _SC_LEVEL2_CACHE_SIZE
  reported = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
  constexpr long low = 64 << 10, high = 64 << 20;
  return reported >= low && reported <= high ? static_cast<std::size_t>(reported) : std::size_t{512} << 10;
}

/// This machine's detect_l2_cache_size(), computed once.
inline std::size_t l2_cache_size() {
  static const std::size_t bytes = detect_l2_cache_size();
  return bytes;
}

/// The native bfloat16 kernel's blocks for a core with `l2_bytes` of L2. Its micro-kernel streams its
/// B micro-panel and A panel at 176 bytes per 24 vdpbf16ps, which L2 feeds at full speed on every
/// AVX-512 BF16 core (measured on Zen 5: kc 256 -> 1024 is +4% at 1024^3, though a 1024-deep B
/// micro-panel is 64 KiB, more than L1): what a depth block costs is reading and writing its C
/// tiles, so kc is as deep as lets the packed A block (mc x kc bfloat16, mc = 144) take half of
/// L2, in whole 32-element steps, at least 256 and at most 1024 (the C traffic is then < 1% of
/// the work). 1 MiB of L2 (Zen 4/5, Cooper Lake, Sapphire Rapids) gives 1024; the fallback's
/// 512 KiB gives 896. mc and nc are the Highway kernels' (measured: mc 48-252 and nc 512-1024
/// within 1% here).
inline gemm_blocks native_bf16_gemm_blocks(std::size_t l2_bytes) {
  constexpr gemm_blocks base = highway_gemm_blocks;
  const std::size_t fitting = l2_bytes / 2 / (base.mc * 2) / 32 * 32;
  return {std::clamp<std::size_t>(fitting, 256, 1024), base.mc, base.nc};
}

/// This machine's native bfloat16 blocks, computed once.
inline const gemm_blocks& native_bf16_gemm_blocks() {
  static const gemm_blocks blocks = native_bf16_gemm_blocks(l2_cache_size());
  return blocks;
}

/// What a finished tile of sums does to its destination D (C, or the float accumulators of a
/// 16-bit C): D += alpha * sums when `accumulate` (every depth block after the first), else
/// D = alpha * sums + beta * D, where beta == 0 means D is not read (BLAS semantics).
struct gemm_tile_update {
  float alpha;
  float beta;
  bool accumulate;
};

struct index_range {
  std::size_t begin;
  std::size_t end;
  std::size_t size() const { return end - begin; }
};

inline std::size_t ceil_div(std::size_t x, std::size_t y) { return (x + y - 1) / y; }
inline std::size_t round_up(std::size_t x, std::size_t multiple) { return ceil_div(x, multiple) * multiple; }

/// C (m x n) cut into a grid of row_tiles x column_tiles rectangles, one task each. Rectangles
/// are whole micro-tiles (tile_rows x tile_columns) except at the right and bottom edges.
class gemm_split {
 public:
  /// The grid for `threads` threads: no more threads than the work is worth (each gets at
  /// least ~2 Mflop, as waking a thread costs tens of microseconds), and among the grids that
  /// use them, the one whose largest rectangle costs least: its multiply-adds plus the packing of
  /// its rows of A and columns of B, weighted by 8 (one packed element, converted and stored,
  /// costs about as much as 8 multiply-adds of the micro-kernel).
  gemm_split(std::size_t m, std::size_t n, std::size_t k, std::size_t tile_rows, std::size_t tile_columns,
             std::size_t threads)
      : m_(m), n_(n) {
    threads = threads_worth(m, n, k, threads);
    const std::size_t row_units = ceil_div(m, tile_rows);
    const std::size_t column_units = ceil_div(n, tile_columns);
    double best_cost = -1;
    for (std::size_t column_tiles = 1; column_tiles <= std::min(threads, column_units); ++column_tiles) {
      const std::size_t row_tiles = std::min(threads / column_tiles, row_units);
      const std::size_t rows = ceil_div(row_units, row_tiles) * tile_rows;
      const std::size_t columns = ceil_div(column_units, column_tiles) * tile_columns;
      // The largest rectangle is at most C: a split into one whole-tile-rounded part (256 rows
      // in one 264-row part) costs its real size, so that it does not lose to a split that
      // leaves the threads unequal parts (132 and 124 rows).
      const double largest_rows = static_cast<double>(std::min(rows, m));
      const double largest_columns = static_cast<double>(std::min(columns, n));
      const double cost =
          (largest_rows * largest_columns + 8.0 * (largest_rows + largest_columns)) * static_cast<double>(k);
      if (best_cost < 0 || cost < best_cost) {
        best_cost = cost;
        rows_per_tile_ = rows;
        columns_per_tile_ = columns;
      }
    }
  }

  /// At most `threads`, at least 1, and no more than give each ~2 Mflop.
  static std::size_t threads_worth(std::size_t m, std::size_t n, std::size_t k, std::size_t threads) {
    constexpr double min_flops_per_thread = 2.0 * 1024 * 1024;
    const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    const std::size_t worth = static_cast<std::size_t>(std::max(1.0, flops / min_flops_per_thread));
    return std::max<std::size_t>(1, std::min(threads, worth));
  }

  std::size_t row_tiles() const { return ceil_div(m_, rows_per_tile_); }
  std::size_t column_tiles() const { return ceil_div(n_, columns_per_tile_); }
  std::size_t tasks() const { return row_tiles() * column_tiles(); }
  index_range rows(std::size_t task) const { return cut(task / column_tiles(), rows_per_tile_, m_); }
  index_range columns(std::size_t task) const { return cut(task % column_tiles(), columns_per_tile_, n_); }

 private:
  static index_range cut(std::size_t index, std::size_t length, std::size_t total) {
    return {index * length, std::min(total, (index + 1) * length)};
  }

  std::size_t m_;
  std::size_t n_;
  std::size_t rows_per_tile_ = 1;
  std::size_t columns_per_tile_ = 1;
};

/// A row of a depth split's block buffer: whole vectors of `lanes` floats, for the sum.
inline std::size_t depth_split_row_floats(std::size_t n, std::size_t lanes) { return round_up(n, lanes); }

/// Whether to compute a GEMM's depth blocks in parallel instead of splitting C: each block's sum
/// (alpha 1, beta 0: exact, as the micro-kernel holds it) into its own m x n buffer, on whichever
/// thread takes it, then the sums added up in block order as the documented order says (see
/// above), which is the same arithmetic whoever computed them. It pays when C is too small to
/// give every thread a fair part and k is long: conv1's weight gradient, 9 x 32 x 43264, is one
/// tile of the native bfloat16 kernel and of the Highway one on AVX-512 (one full and one 3-row
/// tile on AVX2), each thread packing the whole of B). Costs counted as gemm_split counts them, per thread, with
/// every tile a whole tile (a ragged tile costs a full one): the largest rectangle of the C
/// split against ceil(blocks / threads) blocks of all of C plus the single-threaded sum of the
/// buffers, which must be at least 20% cheaper (the buffers' traffic is not counted; the MLP's
/// 256 x 10 x 1024 forward GEMM costs the same either way and keeps the C split). Never for one
/// block, one thread, or buffers over 16 MiB (rows of depth_split_row_floats(n, lanes) floats).
inline bool gemm_depth_split(std::size_t m, std::size_t n, std::size_t k, std::size_t tile_rows,
                             std::size_t tile_columns, std::size_t kc, std::size_t lanes, std::size_t threads) {
  constexpr std::size_t max_buffer_bytes = std::size_t{16} << 20;
  const std::size_t blocks = ceil_div(k, kc);
  if (blocks < 2 || threads < 2 || m * depth_split_row_floats(n, lanes) > max_buffer_bytes / sizeof(float) / blocks)
    return false;
  const gemm_split c_split(m, n, k, tile_rows, tile_columns, threads);
  const double rows = static_cast<double>(c_split.rows(0).size());
  const double columns = static_cast<double>(c_split.columns(0).size());
  const double c_split_cost = (static_cast<double>(round_up(c_split.rows(0).size(), tile_rows)) *
                                   static_cast<double>(round_up(c_split.columns(0).size(), tile_columns)) +
                               8.0 * (rows + columns)) *
                              static_cast<double>(k);
  const double whole_c = static_cast<double>(round_up(m, tile_rows)) * static_cast<double>(round_up(n, tile_columns));
  const double block_cost = (whole_c + 8.0 * static_cast<double>(m + n)) * static_cast<double>(kc);
  const double sum_cost = 2.0 * static_cast<double>(m * n * blocks);
  const double depth_split_cost =
      static_cast<double>(ceil_div(blocks, gemm_split::threads_worth(m, n, k, threads))) * block_cost + sum_cost;
  return depth_split_cost < 0.8 * c_split_cost;
}

/// A growable, 64-byte aligned scratch buffer that keeps its memory between calls (fresh pages
/// would cost more than a small GEMM).
class gemm_scratch {
 public:
  gemm_scratch() = default;
  gemm_scratch(const gemm_scratch&) = delete;
  gemm_scratch& operator=(const gemm_scratch&) = delete;
  ~gemm_scratch() { release(); }

  /// Room for `count` objects of T (trivial types); the contents are unspecified.
  template <class T>
  T* get(std::size_t count) {
    const std::size_t bytes = std::max<std::size_t>(count * sizeof(T), alignment);
    if (bytes > capacity_) {
      release();
      data_ = ::operator new(bytes, std::align_val_t{alignment});
      capacity_ = bytes;
    }
    return static_cast<T*>(data_);
  }

 private:
  static constexpr std::size_t alignment = 64;
  void release() {
    if (data_ != nullptr) ::operator delete(data_, std::align_val_t{alignment});
    data_ = nullptr;
    capacity_ = 0;
  }
  void* data_ = nullptr;
  std::size_t capacity_ = 0;
};

/// What one thread's part of a GEMM works in.
struct gemm_workspace {
  gemm_scratch packed_a;      // one mc x kc block of op(A), in panels of tile_rows rows
  gemm_scratch packed_b;      // one kc x nc block of op(B), in panels of tile_columns columns
  gemm_scratch accumulators;  // the float sums of a 16-bit C
  gemm_scratch staging;       // a row of a 16-bit operand widened to float while packing
  gemm_scratch block_sums;    // a depth split's sums, one m x n buffer per depth block (caller's)
};

/// The calling thread's workspace (the pool's threads are persistent, so it is reused).
inline gemm_workspace& thread_gemm_workspace() {
  thread_local gemm_workspace workspace;
  return workspace;
}

}  // namespace mixprec::kernels::detail
