// GEMM entry points: plain pointers and sizes, no Highway types. Each call dispatches to the best
// compiled target for this CPU (or the one forced with kernels::target_scope). The typed public
// API, which checks the arguments, is gemm.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <vector>

#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/config.hpp>

namespace mixprec::kernels {

class thread_pool;

namespace detail {

/// The micro-kernel a GEMM runs, and the target whose code runs it: what a packed B is laid out
/// for (gemm_kernels::with_kernel in gemm-inl.hpp chooses it).
enum class gemm_kernel_kind : std::uint8_t { highway, highway_narrow, native_bf16, amx_bf16 };
struct gemm_kernel_choice {
  std::int64_t target = 0;  // a HWY_TARGET bit
  gemm_kernel_kind kind = gemm_kernel_kind::highway;
  bool operator==(const gemm_kernel_choice&) const = default;
};

/// What kernels::packed_b holds: op(B) (k x n) packed once, as a GEMM with the chosen kernel packs
/// it per call. Depth block b (the kernel's kc deep, the last one shorter) starts at
/// block_offsets[b] elements of the kernel's packed type and holds the block's panels of the
/// kernel's tile columns, every column of op(B), one after the other.
struct packed_b_data {
  struct aligned_delete {
    void operator()(void* p) const { ::operator delete(p, std::align_val_t{64}); }
  };
  gemm_kernel_choice kernel;
  std::size_t k = 0;
  std::size_t n = 0;
  std::vector<std::size_t> block_offsets;
  std::size_t bytes = 0;
  std::unique_ptr<void, aligned_delete> storage;
};

/// op(B) to pack: k x n, B[p][j] or, when trans_b, B[j][p] (leading dimension ldb, checked).
template <class TB>
struct pack_b_problem {
  bool trans_b;
  std::size_t k;
  std::size_t n;
  const TB* b;
  std::size_t ldb;
};

/// C = alpha * op(A) * op(B) + beta * C, row-major; op(X) is X, or X transposed when trans_x.
/// The leading dimensions are already checked. A float B with a 16-bit A is read in A's dtype.
/// With `packed_b`, op(B) is read from there, from its depth block packed_b_first_block on (b is
/// not read); it was packed for the kernel this call runs (checked by the caller).
template <class TA, class TB, class TC>
struct gemm_problem {
  bool trans_a;
  bool trans_b;
  std::size_t m;
  std::size_t n;
  std::size_t k;
  float alpha;
  const TA* a;
  std::size_t lda;
  const TB* b;
  std::size_t ldb;
  float beta;
  TC* c;
  std::size_t ldc;
  const packed_b_data* packed_b = nullptr;
  std::size_t packed_b_first_block = 0;
};

/// A row-major matrix as gemm sees it, for argument checks: `rows` rows of `row_length`
/// elements, `ld` apart; the names say how the caller sees it.
struct gemm_operand {
  const char* matrix;    // "A", "B", "C"
  const char* ld_name;   // "lda", ...
  const char* shape;     // how it is stored, in the caller's names: "m x k"
  const char* row_name;  // the name of the row length: "k"
  std::size_t rows;
  std::size_t row_length;
  std::size_t ld;
};

/// std::invalid_argument for ld < row_length, naming the value and its minimum (out of line, so
/// that the message is not built in every caller).
[[noreturn]] MIXPREC_KERNEL_API void throw_leading_dimension_error(const gemm_operand& operand);
/// std::invalid_argument for a span of `size` elements where gemm touches `extent` (none: more
/// than std::size_t counts).
[[noreturn]] MIXPREC_KERNEL_API void throw_extent_error(const gemm_operand& operand, std::size_t size,
                                                        std::optional<std::size_t> extent);

MIXPREC_KERNEL_ENTRY void gemm(const gemm_problem<float, float, float>& problem);
MIXPREC_KERNEL_ENTRY void gemm(const gemm_problem<bfloat16, bfloat16, float>& problem);
MIXPREC_KERNEL_ENTRY void gemm(const gemm_problem<bfloat16, bfloat16, bfloat16>& problem);
MIXPREC_KERNEL_ENTRY void gemm(const gemm_problem<bfloat16, float, float>& problem);
MIXPREC_KERNEL_ENTRY void gemm(const gemm_problem<float16, float16, float>& problem);
MIXPREC_KERNEL_ENTRY void gemm(const gemm_problem<float16, float16, float16>& problem);
MIXPREC_KERNEL_ENTRY void gemm(const gemm_problem<float16, float, float>& problem);

/// std::invalid_argument for a packed B gemm cannot use: empty (null), or packed for another
/// kernel than `now`, the one the call would run (out of line: the message names the targets).
[[noreturn]] MIXPREC_KERNEL_API void throw_packed_b_error(const packed_b_data* packed, gemm_kernel_choice now);

/// op(B) packed for GEMMs with an A of dtype TA, for the kernel such a GEMM of n columns runs now
/// (kernels::pack_b); TB is TA or float (read as TA).
template <class TA, class TB>
packed_b_data pack_b(const pack_b_problem<TB>& problem);
/// The kernel a GEMM with an A of dtype TA and n columns runs if called now.
template <class TA>
gemm_kernel_choice gemm_kernel(std::size_t n);

/// The pool the GEMM kernels split their work across (created on first use, replaced by
/// kernels::set_num_threads; a running GEMM keeps the pool it started with).
MIXPREC_KERNEL_API std::shared_ptr<thread_pool> gemm_thread_pool();

// The native bfloat16 path: hand-written AVX-512 BF16 kernels, used when the CPU has AVX-512
// BF16, the active target is AVX3 or better, and they are enabled (the default): the vdpbf16ps
// (or AMX-BF16) micro-kernel for bfloat16 x bfloat16 GEMMs and vcvtne2ps2bf16 for float ->
// bfloat16 conversions. One switch turns them off; tests do, to compare them with the Highway
// AVX3 paths.

/// This CPU (and compiler) can run the native bfloat16 kernel.
MIXPREC_KERNEL_API bool native_bf16_supported();
/// Allows (the default) or forbids the native bfloat16 kernel, process-wide.
MIXPREC_KERNEL_API void set_native_bf16_enabled(bool enabled);
MIXPREC_KERNEL_API bool native_bf16_enabled();
/// Whether a bfloat16 x bfloat16 GEMM called now runs a native kernel (vdpbf16ps or AMX).
MIXPREC_KERNEL_ENTRY bool gemm_uses_native_bf16();

// Of the native bfloat16 GEMM kernels, AMX-BF16's (Sapphire Rapids and later Xeons) runs where the
// CPU and OS allow it, else vdpbf16ps's. Tests turn AMX off to compare the two.

/// This CPU (and compiler, and OS) can run the AMX-BF16 kernel.
MIXPREC_KERNEL_API bool amx_bf16_supported();
/// Allows (the default) or forbids the AMX-BF16 kernel, process-wide.
MIXPREC_KERNEL_API void set_amx_bf16_enabled(bool enabled);
MIXPREC_KERNEL_API bool amx_bf16_enabled();
/// Whether a bfloat16 x bfloat16 GEMM called now runs the AMX-BF16 kernel.
MIXPREC_KERNEL_API bool gemm_uses_amx_bf16();

}  // namespace detail
}  // namespace mixprec::kernels
