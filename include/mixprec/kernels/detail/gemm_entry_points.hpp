// GEMM entry points: plain pointers and sizes, no Highway types. Each call dispatches to the best
// compiled target for this CPU (or the one forced with kernels::target_scope). The typed public
// API, which checks the arguments, is gemm.hpp.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>

#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/config.hpp>

namespace mixprec::kernels {

class thread_pool;

namespace detail {

/// C = alpha * op(A) * op(B) + beta * C, row-major; op(X) is X, or X transposed when trans_x.
/// The leading dimensions are already checked. A float B with a 16-bit A is read in A's dtype.
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
