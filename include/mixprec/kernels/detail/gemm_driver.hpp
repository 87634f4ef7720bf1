// The float GEMM's loop nest (gemm_blocking.hpp's blocks, the thread split, the depth split, a
// whole packed B), compiled once per operand dtypes instead of once per Highway target and
// micro-kernel: what is per target (gemm-inl.hpp) is the micro-kernel's loop over a packed block,
// the packing, and the roundings, which the loop nest reaches through a gemm_kernel_into. That
// costs an indirect call per packed block, not per tile, and halves the GEMM code a TU compiles.
// No vector types, and no floating-point adds (a TU's contraction flags cannot change a bit).
// In an unnamed namespace, as the per-target code is: a TU's per-target code calls the copy that
// TU compiled, with its flags, never one the linker kept from a TU with other -march flags.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>

#include <mixprec/kernels/detail/gemm_blocking.hpp>
#include <mixprec/kernels/detail/gemm_entry_points.hpp>
#include <mixprec/kernels/thread_pool.hpp>

namespace mixprec::kernels::detail {
namespace {

/// A micro-kernel as one target compiled it for these operand dtypes: its packing and its
/// multiplication, whatever C is. Packed operands are arrays of `packed_size`-byte elements,
/// `packed_depth(depth)` per lane.
template <class TA, class TB>
struct gemm_micro_kernel {
  gemm_kernel_choice choice;
  std::size_t tile_rows;
  std::size_t tile_columns;
  std::size_t lanes;  // floats in one of the target's vectors: a depth split's rows are whole ones
  std::size_t packed_size;
  gemm_blocks blocks;
  std::size_t (*packed_depth)(std::size_t depth);
  /// Whether a B block of this many packed bytes is packed as its first row block is multiplied
  /// (multiply_packing_b) rather than whole before it.
  bool (*packs_b_before_use)(std::size_t packed_b_bytes);
  /// Around a thread's rectangle (AMX's tile configuration); null for none.
  void (*begin)();
  void (*end)();
  /// op(A)'s `lanes` rows (of `depth` elements, the strides apart) into panels of tile_rows.
  void (*pack_a)(const TA* src, std::size_t lane_stride, std::size_t depth_stride, std::size_t lanes,
                 std::size_t depth, void* dst, gemm_workspace& workspace);
  /// op(B)'s `lanes` columns into panels of tile_columns, read in A's dtype.
  void (*pack_b)(const TB* src, std::size_t lane_stride, std::size_t depth_stride, std::size_t lanes,
                 std::size_t depth, void* dst, gemm_workspace& workspace);
  /// A packed block of A (rows x depth) times one of B (depth x columns) into dst, tile by tile.
  void (*multiply_packed)(const void* a, const void* b, std::size_t rows, std::size_t columns, std::size_t depth,
                          float* dst, std::size_t ldd, const gemm_tile_update& update);
};

/// The micro-kernel, and what its target does with the sums of a C of dtype TC.
template <class TA, class TB, class TC>
struct gemm_kernel_into : gemm_micro_kernel<TA, TB> {
  /// c = round(sums + beta * c) (a 16-bit C; null for a float one).
  void (*store_rounded)(const float* sums, std::size_t lds, std::size_t rows, std::size_t columns, float beta, TC* c,
                        std::size_t ldc);
  /// A depth split's end: C from the block sums (`blocks` buffers of m rows of `ld` floats, one
  /// after the other), added up in block order with a tile update's operations.
  void (*sum_depth_blocks)(const gemm_problem<TA, TB, TC>& problem, float* block_sums, std::size_t blocks,
                           std::size_t ld);
};

/// op(B) from element (p, j) on, as pack_b reads it: op(B)(p, j) is B[p][j], or B[j][p] when
/// transposed; a lane is a column of op(B), the depth its rows.
template <class TB>
struct op_b_block {
  const TB* first;
  std::size_t lane_stride;
  std::size_t depth_stride;
};
template <class TB>
op_b_block<TB> op_b_at(const TB* b, std::size_t ldb, bool trans_b, std::size_t p, std::size_t j) {
  if (trans_b) return {b + j * ldb + p, ldb, 1};
  return {b + p * ldb + j, 1, ldb};
}

/// `packed` advanced by `elements` packed elements of the kernel.
template <class Byte, class TA, class TB>
Byte* packed_at(Byte* packed, std::size_t elements, const gemm_micro_kernel<TA, TB>& kernel) {
  return packed + elements * kernel.packed_size;
}

/// multiply_packed, packing B's micro-panels here, b_packing_group at a time right before they are
/// used (pack_b_columns(first column, columns, destination) packs into `b`'s layout), so that the
/// kernel reads them from L2 rather than from the L3 to which packing a block larger than L2
/// whole spills them. The later row blocks then reuse them.
template <class TA, class TB, class PackB>
void multiply_packing_b(const gemm_micro_kernel<TA, TB>& kernel, const std::byte* a, std::byte* b,
                        std::size_t rows, std::size_t columns, std::size_t depth, float* dst, std::size_t ldd,
                        const gemm_tile_update& update, const PackB& pack_b_columns) {
  // 8 x 32 columns of the native kernel: a row-major B is read 512 bytes of a row at a time.
  constexpr std::size_t b_packing_group = 8;
  const std::size_t group_columns = b_packing_group * kernel.tile_columns;
  const std::size_t packed_depth = kernel.packed_depth(depth);
  for (std::size_t first = 0; first < columns; first += group_columns) {
    const std::size_t count = std::min(group_columns, columns - first);
    std::byte* group = packed_at(b, first * packed_depth, kernel);
    pack_b_columns(first, count, group);
    kernel.multiply_packed(a, group, rows, count, depth, dst + first, ldd, update);
  }
}

/// One thread's rectangle of C: the loop nest of gemm_blocking.hpp. A float C accumulates in
/// place; a 16-bit C accumulates in float, by row chunks, and is rounded once at the end.
template <class TA, class TB, class TC>
void multiply_rectangle(const gemm_kernel_into<TA, TB, TC>& kernel, const gemm_problem<TA, TB, TC>& problem,
                        index_range rows, index_range columns) {
  constexpr bool accumulate_in_c = std::is_same_v<TC, float>;
  const std::size_t tile_columns = kernel.tile_columns;
  const std::size_t kc = std::min(kernel.blocks.kc, problem.k);
  const std::size_t mc = std::min(kernel.blocks.mc, rows.size());
  const std::size_t nc = std::min(kernel.blocks.nc, columns.size());
  const std::size_t chunk = accumulate_in_c ? rows.size() : std::min(gemm_accumulator_rows, rows.size());

  gemm_workspace& workspace = thread_gemm_workspace();
  const std::size_t packed_depth = kernel.packed_depth(kc);
  std::byte* packed_a =
      workspace.packed_a.get<std::byte>(packed_depth * round_up(mc, kernel.tile_rows) * kernel.packed_size);
  const packed_b_data* prepacked = problem.packed_b;
  std::byte* packed_b =
      prepacked ? nullptr
                : workspace.packed_b.get<std::byte>(packed_depth * round_up(nc, tile_columns) * kernel.packed_size);
  float* sums = accumulate_in_c ? nullptr : workspace.accumulators.get<float>(chunk * nc);

  if (kernel.begin) kernel.begin();
  for (std::size_t jc = columns.begin; jc < columns.end; jc += nc) {
    const std::size_t block_columns = std::min(nc, columns.end - jc);
    for (std::size_t chunk_begin = rows.begin; chunk_begin < rows.end; chunk_begin += chunk) {
      const std::size_t chunk_end = std::min(chunk_begin + chunk, rows.end);
      float* dst = sums;
      std::size_t ldd = block_columns;
      if constexpr (accumulate_in_c) {
        dst = problem.c + chunk_begin * problem.ldc + jc;
        ldd = problem.ldc;
      }
      for (std::size_t pc = 0; pc < problem.k; pc += kc) {
        const std::size_t depth = std::min(kc, problem.k - pc);
        // Columns [first, first + count) of the block, read in A's dtype (a float B with a 16-bit
        // A is rounded to it).
        const auto pack_b_columns = [&](std::size_t first, std::size_t count, std::byte* to) {
          const op_b_block<TB> from = op_b_at(problem.b, problem.ldb, problem.trans_b, pc, jc + first);
          kernel.pack_b(from.first, from.lane_stride, from.depth_stride, count, depth, to, workspace);
        };
        // B is packed whole before A's first block, or as the first block's multiplication goes,
        // or was packed before the call: the block's panels of columns [jc, jc + nc), which start
        // on a panel (the thread split and nc are whole panels).
        const std::size_t packed_b_bytes =
            kernel.packed_depth(depth) * round_up(block_columns, tile_columns) * kernel.packed_size;
        const bool pack_b_before_use = !prepacked && kernel.packs_b_before_use(packed_b_bytes);
        const std::byte* b_block = packed_b;
        if (prepacked) {
          b_block = packed_at(static_cast<const std::byte*>(prepacked->storage.get()),
                              prepacked->block_offsets[problem.packed_b_first_block + pc / kc] +
                                  jc * kernel.packed_depth(depth),
                              kernel);
        } else if (!pack_b_before_use) {
          pack_b_columns(0, block_columns, packed_b);
        }
        const gemm_tile_update update{problem.alpha, accumulate_in_c ? problem.beta : 0.0f, pc != 0};
        for (std::size_t ic = chunk_begin; ic < chunk_end; ic += mc) {
          const std::size_t block_rows = std::min(mc, chunk_end - ic);
          // op(A)(i, p) is A[i][p], or A[p][i] when transposed.
          if (problem.trans_a) {
            kernel.pack_a(problem.a + pc * problem.lda + ic, 1, problem.lda, block_rows, depth, packed_a, workspace);
          } else {
            kernel.pack_a(problem.a + ic * problem.lda + pc, problem.lda, 1, block_rows, depth, packed_a, workspace);
          }
          float* block_dst = dst + (ic - chunk_begin) * ldd;
          if (pack_b_before_use && ic == chunk_begin) {
            multiply_packing_b(kernel, packed_a, packed_b, block_rows, block_columns, depth, block_dst, ldd, update,
                               pack_b_columns);
          } else {
            kernel.multiply_packed(packed_a, b_block, block_rows, block_columns, depth, block_dst, ldd, update);
          }
        }
      }
      if constexpr (!accumulate_in_c) {
        kernel.store_rounded(sums, ldd, chunk_end - chunk_begin, block_columns, problem.beta,
                             problem.c + chunk_begin * problem.ldc + jc, problem.ldc);
      }
    }
  }
  if (kernel.end) kernel.end();
}

/// The depth split (gemm_depth_split): one task per depth block computes that block's sums
/// (alpha 1, beta 0, so they are stored exactly) into its own buffer of `ld`-float rows; then
/// sum_depth_blocks adds them up in block order with the operations a tile update does (see
/// gemm_tile_update), so each C element gets the bits it gets without the split.
template <class TA, class TB, class TC>
void run_depth_split(const gemm_kernel_into<TA, TB, TC>& kernel, const gemm_problem<TA, TB, TC>& problem,
                     thread_pool& pool) {
  const std::size_t m = problem.m, n = problem.n, kc = kernel.blocks.kc;
  const std::size_t blocks = ceil_div(problem.k, kc);
  const std::size_t ld = depth_split_row_floats(n, kernel.lanes);
  const std::size_t block_size = m * ld;
  float* block_sums = thread_gemm_workspace().block_sums.get<float>(blocks * block_size);
  // The blocks' parts have a float C whatever C is: the same micro-kernel, nothing to round.
  const gemm_kernel_into<TA, TB, float> part_kernel{kernel, nullptr, nullptr};
  pool.run(blocks, [&](std::size_t block) {
    const std::size_t pc = block * kc;
    const gemm_problem<TA, TB, float> part{problem.trans_a,
                                           problem.trans_b,
                                           m,
                                           n,
                                           std::min(kc, problem.k - pc),
                                           1.0f,
                                           problem.a + (problem.trans_a ? pc * problem.lda : pc),
                                           problem.lda,
                                           problem.packed_b ? nullptr
                                                            : op_b_at(problem.b, problem.ldb, problem.trans_b, pc, 0).first,
                                           problem.ldb,
                                           0.0f,
                                           block_sums + block * block_size,
                                           ld,
                                           problem.packed_b,
                                           problem.packed_b_first_block + block};
    multiply_rectangle(part_kernel, part, {0, m}, {0, n});
  });
  kernel.sum_depth_blocks(problem, block_sums, blocks, ld);
}

/// C = beta * C, for k == 0 or alpha == 0 (A and B are not read, as in BLAS).
template <class TA, class TB, class TC>
void scale_c(const gemm_problem<TA, TB, TC>& problem) {
  for (std::size_t i = 0; i < problem.m; ++i) {
    TC* row = problem.c + i * problem.ldc;
    for (std::size_t j = 0; j < problem.n; ++j) {
      if constexpr (std::is_same_v<TC, float>) {
        row[j] = problem.beta == 0.0f ? 0.0f : problem.beta * row[j];
      } else {
        row[j] = TC(problem.beta == 0.0f ? 0.0f : problem.beta * static_cast<float>(row[j]));
      }
    }
  }
}

/// The GEMM on `kernel`: C split across the GEMM thread pool (or its depth blocks, when that is
/// cheaper).
template <class TA, class TB, class TC>
void run_gemm(const gemm_kernel_into<TA, TB, TC>& kernel, const gemm_problem<TA, TB, TC>& problem) {
  // A packed B must be laid out for this kernel and target (its panels, its kc).
  if (problem.packed_b && problem.packed_b->kernel != kernel.choice) throw_packed_b_error(problem.packed_b, kernel.choice);
  if (problem.m == 0 || problem.n == 0) return;
  if (problem.k == 0 || problem.alpha == 0.0f) return scale_c(problem);
  const std::shared_ptr<thread_pool> pool = gemm_thread_pool();
  // 1 inside a task of the pool (Conv2D's chunks): the split would run inline there, and the
  // depth split would only add its buffer pass.
  const std::size_t threads = pool->available_threads();
  if (gemm_depth_split(problem.m, problem.n, problem.k, kernel.tile_rows, kernel.tile_columns, kernel.blocks.kc,
                       kernel.lanes, threads)) {
    return run_depth_split(kernel, problem, *pool);
  }
  const gemm_split split(problem.m, problem.n, problem.k, kernel.tile_rows, kernel.tile_columns, threads);
  pool->run(split.tasks(), [&](std::size_t task) {
    multiply_rectangle(kernel, problem, split.rows(task), split.columns(task));
  });
}

/// op(B) packed whole for `kernel`, depth block by depth block, as multiply_rectangle packs a
/// block's columns.
template <class TA, class TB>
packed_b_data pack_whole_b(const gemm_micro_kernel<TA, TB>& kernel, const pack_b_problem<TB>& problem) {
  packed_b_data packed;
  packed.kernel = kernel.choice;
  packed.k = problem.k;
  packed.n = problem.n;
  // multiply_rectangle's depth blocks and panels.
  const std::size_t kc = std::min(kernel.blocks.kc, problem.k);
  const std::size_t padded_columns = round_up(problem.n, kernel.tile_columns);
  std::size_t elements = 0;
  for (std::size_t pc = 0; pc < problem.k; pc += kc) {
    packed.block_offsets.push_back(elements);
    elements += kernel.packed_depth(std::min(kc, problem.k - pc)) * padded_columns;
  }
  packed.bytes = std::max<std::size_t>(elements, 1) * kernel.packed_size;
  packed.storage.reset(::operator new(packed.bytes, std::align_val_t{64}));
  auto* to = static_cast<std::byte*>(packed.storage.get());
  gemm_workspace& workspace = thread_gemm_workspace();
  for (std::size_t block = 0; block < packed.block_offsets.size(); ++block) {
    const std::size_t pc = block * kc, depth = std::min(kc, problem.k - pc);
    const op_b_block<TB> from = op_b_at(problem.b, problem.ldb, problem.trans_b, pc, 0);
    kernel.pack_b(from.first, from.lane_stride, from.depth_stride, problem.n, depth,
                  packed_at(to, packed.block_offsets[block], kernel), workspace);
  }
  return packed;
}

}  // namespace
}  // namespace mixprec::kernels::detail
