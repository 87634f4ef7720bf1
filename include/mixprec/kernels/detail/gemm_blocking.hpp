// Target-independent pieces of the GEMM: cache blocking, the split of C across threads, each
// thread's packing workspace, and how a finished tile updates its destination.
#pragma once

#include <algorithm>
#include <cstddef>
#include <new>

namespace mixprec::kernels::detail {

// Cache blocking: the Goto/BLIS loop nest (columns by nc, depth by kc, rows by mc, then
// micro-tiles). Chosen for the development machine, an AMD Zen 3 with 32 KiB L1d and 512 KiB L2
// per core and a 32 MiB shared L3:
//  - kc = 256: a packed B micro-panel (kc x nr: 16 KiB of floats for the 6 x 16 AVX2 tile, and
//    16 KiB of bf16 pairs for the 12 x 32 native one) stays in L1 while every A micro-panel of
//    the block streams past it;
//  - mc = 144 (24 six-row or 12 twelve-row panels): the packed A block, mc x kc floats = 144 KiB,
//    stays in L2 while the B micro-panels go by;
//  - nc = 1024: the packed B panel, kc x nc floats = 1 MiB, stays in L3; A is packed once per
//    nc columns, which is negligible next to the 2 * nc flops done per packed element.
// The depth blocks of every GEMM start at 0 and are kc long whatever the thread count, so each C
// element is reduced in the same order however C is split: results are bit-identical for any
// number of threads.
inline constexpr std::size_t gemm_depth_block = 256;   // kc
inline constexpr std::size_t gemm_row_block = 144;     // mc
inline constexpr std::size_t gemm_column_block = 1024;  // nc
// A 16-bit C is rounded once, at the end: its sums build up in a float buffer of at most this
// many rows by nc columns (2.25 MiB). B is packed again for every such row chunk, which costs
// about 1 / (2 * 576) of the flops.
inline constexpr std::size_t gemm_accumulator_rows = 4 * gemm_row_block;

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
    constexpr double min_flops_per_thread = 2.0 * 1024 * 1024;
    const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    const std::size_t worth = static_cast<std::size_t>(std::max(1.0, flops / min_flops_per_thread));
    threads = std::max<std::size_t>(1, std::min(threads, worth));
    const std::size_t row_units = ceil_div(m, tile_rows);
    const std::size_t column_units = ceil_div(n, tile_columns);
    double best_cost = -1;
    for (std::size_t column_tiles = 1; column_tiles <= std::min(threads, column_units); ++column_tiles) {
      const std::size_t row_tiles = std::min(threads / column_tiles, row_units);
      const std::size_t rows = ceil_div(row_units, row_tiles) * tile_rows;
      const std::size_t columns = ceil_div(column_units, column_tiles) * tile_columns;
      const double cost = (static_cast<double>(rows) * static_cast<double>(columns) +
                           8.0 * static_cast<double>(rows + columns)) *
                          static_cast<double>(k);
      if (best_cost < 0 || cost < best_cost) {
        best_cost = cost;
        rows_per_tile_ = rows;
        columns_per_tile_ = columns;
      }
    }
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
};

/// The calling thread's workspace (the pool's threads are persistent, so it is reused).
inline gemm_workspace& thread_gemm_workspace() {
  thread_local gemm_workspace workspace;
  return workspace;
}

}  // namespace mixprec::kernels::detail
