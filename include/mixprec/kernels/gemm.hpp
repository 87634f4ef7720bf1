// gemm: C = alpha * op(A) * op(B) + beta * C for float, bfloat16 and float16 operands,
// accumulated in float, vectorized (dispatched to the best CPU target) and split across threads.
//
//   // y (batch x units) = x (batch x inputs) * w^T, with w stored units x inputs:
//   kernels::gemm(transpose::no, transpose::yes, batch, units, inputs, 1.0f, x, inputs, w, inputs, 0.0f, y, units);
//
// Row-major, as in CBLAS with CblasRowMajor. The result does not depend on the number of
// threads, bit for bit; it does depend on the target: fused multiply-add on AVX2/AVX3, separate
// multiply and add on SSE4/SCALAR; and on CPUs with AVX-512 BF16, bfloat16 x bfloat16
// products are summed in pairs by vdpbf16ps, which treats subnormal inputs and sums as zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>

#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/config.hpp>
#include <mixprec/kernels/detail/argument_checks.hpp>
#include <mixprec/kernels/detail/gemm_entry_points.hpp>
#include <mixprec/kernels/ranges.hpp>

namespace mixprec::kernels {

enum class transpose : bool { no = false, yes = true };

namespace detail {

template <class TA, class TB, class TC>
inline constexpr bool is_gemm_dtype_combination =
    (std::is_same_v<TA, float> && std::is_same_v<TB, float> && std::is_same_v<TC, float>) ||
    (std::is_same_v<TA, bfloat16> && std::is_same_v<TB, bfloat16> &&
     (std::is_same_v<TC, float> || std::is_same_v<TC, bfloat16>)) ||
    (std::is_same_v<TA, float16> && std::is_same_v<TB, float16> &&
     (std::is_same_v<TC, float> || std::is_same_v<TC, float16>)) ||
    ((std::is_same_v<TA, bfloat16> || std::is_same_v<TA, float16>) && std::is_same_v<TB, float> &&
     std::is_same_v<TC, float>);

inline void check_leading_dimension(const gemm_operand& operand) {
  if (operand.ld < operand.row_length) throw_leading_dimension_error(operand);
}

/// Elements from the first to one past the last that gemm touches; none if that count
/// overflows std::size_t (a leading dimension no span can hold).
inline std::optional<std::size_t> extent(const gemm_operand& operand) {
  if (operand.rows == 0 || operand.row_length == 0) return 0;
  std::size_t elements = 0;
  if (__builtin_mul_overflow(operand.rows - 1, operand.ld, &elements) ||
      __builtin_add_overflow(elements, operand.row_length, &elements))
    return std::nullopt;
  return elements;
}

inline void check_extent(const gemm_operand& operand, std::size_t size) {
  const std::optional<std::size_t> needed = extent(operand);
  if (!needed || size < *needed) throw_extent_error(operand, size, needed);
}

/// Whether the rows of one strided operand share a byte with the rows of another: a walk over
/// both row lists in address order (each operand's rows lie apart: ld >= row length), so a C in
/// the gaps between A's rows (lda > k) is apart from A.
template <class In, class Out>
bool rows_overlap(const gemm_operand& input, const In* in, const gemm_operand& c, const Out* out) {
  const auto address = [](const auto* p) { return reinterpret_cast<std::uintptr_t>(p); };
  const std::uintptr_t in_row = input.ld * sizeof(In), out_row = c.ld * sizeof(Out);
  const std::uintptr_t in_length = input.row_length * sizeof(In), out_length = c.row_length * sizeof(Out);
  std::size_t i = 0, j = 0;
  while (i < input.rows && j < c.rows) {
    const std::uintptr_t in_begin = address(in) + i * in_row, out_begin = address(out) + j * out_row;
    if (in_begin + in_length <= out_begin) ++i;
    else if (out_begin + out_length <= in_begin) ++j;
    else return true;
  }
  return false;
}

/// The elements gemm reads of an input and writes of C must lie apart (C written over a block of
/// A or B that a later depth block reads again gives wrong values silently); after check_extent.
template <class In, class Out>
void check_apart_from_c(const gemm_operand& input, std::span<In> in, const gemm_operand& c, std::span<Out> out) {
  const auto in_used = in.first(*extent(input));
  const auto out_used = out.first(*extent(c));
  if (mixprec::detail::overlap(in_used, out_used) && rows_overlap(input, in_used.data(), c, out_used.data()))
    mixprec::detail::throw_overlap("gemm", input.matrix, c.matrix);
}

struct gemm_operands {
  gemm_operand a, b, c;
  gemm_operands(transpose trans_a, transpose trans_b, std::size_t m, std::size_t n, std::size_t k, std::size_t lda,
                std::size_t ldb, std::size_t ldc)
      : a(trans_a == transpose::no ? gemm_operand{"A", "lda", "m x k", "k", m, k, lda}
                                   : gemm_operand{"A", "lda", "stored transposed, k x m", "m", k, m, lda}),
        b(trans_b == transpose::no ? gemm_operand{"B", "ldb", "k x n", "n", k, n, ldb}
                                   : gemm_operand{"B", "ldb", "stored transposed, n x k", "k", n, k, ldb}),
        c{"C", "ldc", "m x n", "n", m, n, ldc} {
    check_leading_dimension(a);
    check_leading_dimension(b);
    check_leading_dimension(c);
  }
};

}  // namespace detail

/// C = alpha * op(A) * op(B) + beta * C, row-major. op(A) is m x k (A is m x k with leading
/// dimension lda, or k x m when transposed), op(B) is k x n, C is m x n with leading dimension
/// ldc. Accumulation in float32; a 16-bit C is rounded once (nearest even) at the end.
/// beta == 0 means C is not read (NaN/garbage in C ignored), as in BLAS; so does k == 0 or
/// alpha == 0 for A and B (C = beta * C).
/// Supported (TA, TB, TC): (float, float, float), (bfloat16, bfloat16, float),
/// (bfloat16, bfloat16, bfloat16), (float16, float16, float), (float16, float16, float16), and
/// (bfloat16, float, float), (float16, float, float): a float B read in A's dtype, each element
/// rounded to it (nearest even) as it is packed, which gives the bits of a GEMM on a rounded copy
/// of B without the copy (how a layer multiplies by a float32 weight under a mixed policy, as
/// Keras' autocast does, without keeping a 16-bit copy of the weight).
/// A leading dimension shorter than its row throws std::invalid_argument, before anything is written.
/// C must not overlap A or B (the span overloads check it).
template <class TA, class TB, class TC>
void gemm(transpose trans_a, transpose trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
          const TA* a, std::size_t lda, const TB* b, std::size_t ldb, float beta, TC* c, std::size_t ldc) {
  static_assert(detail::is_gemm_dtype_combination<TA, TB, TC>,
                "mixprec::kernels::gemm supports (A, B, C) dtypes (float, float, float), (bfloat16, bfloat16, float), "
                "(bfloat16, bfloat16, bfloat16), (float16, float16, float), (float16, float16, float16), "
                "(bfloat16, float, float) and (float16, float, float); "
                "convert the operands with mixprec::kernels::convert first");
  if constexpr (detail::is_gemm_dtype_combination<TA, TB, TC>) {
    detail::gemm_operands(trans_a, trans_b, m, n, k, lda, ldb, ldc);
    detail::gemm(detail::gemm_problem<TA, TB, TC>{trans_a == transpose::yes, trans_b == transpose::yes, m, n, k, alpha,
                                                  a, lda, b, ldb, beta, c, ldc});
  }
}

/// The same on spans, which must hold every element gemm touches (else std::invalid_argument,
/// also for a leading dimension so large that the rows' extent overflows std::size_t), and
/// whose elements of A and of B lie apart from those of C (else std::invalid_argument).
template <class TA, class TB, class TC>
void gemm(transpose trans_a, transpose trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
          std::span<const TA> a, std::size_t lda, std::span<const TB> b, std::size_t ldb, float beta, std::span<TC> c,
          std::size_t ldc) {
  const detail::gemm_operands operands(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  detail::check_extent(operands.a, a.size());
  detail::check_extent(operands.b, b.size());
  detail::check_extent(operands.c, c.size());
  detail::check_apart_from_c(operands.a, a, operands.c, c);
  detail::check_apart_from_c(operands.b, b, operands.c, c);
  gemm(trans_a, trans_b, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
}

/// The same on any contiguous ranges (std::vector, std::array, spans), the dtypes deduced.
template <detail::input_range A, detail::input_range B, detail::output_range C>
void gemm(transpose trans_a, transpose trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const A& a,
          std::size_t lda, const B& b, std::size_t ldb, float beta, C&& c, std::size_t ldc) {
  kernels::gemm(trans_a, trans_b, m, n, k, alpha, detail::input_span(a), lda, detail::input_span(b), ldb, beta,
                detail::output_span(std::forward<C>(c)), ldc);
}

namespace detail {
struct packed_b_access;
}  // namespace detail

/// op(B) packed once for GEMMs with an A of dtype TA (kernels::pack_b), what gemm otherwise packs
/// on every call: for a product by the same B many times, as a layer's weights in inference. It
/// is laid out for the micro-kernel and CPU target such a GEMM runs when it is packed; forcing
/// another target (target_scope) or switching a native kernel off (set_amx_bf16_enabled, ...)
/// makes it unusable (usable() says so, and gemm throws): pack it again then. Immutable; copies
/// share the packed elements.
template <class TA>
class packed_b {
 public:
  packed_b() = default;  // empty: gemm refuses it
  std::size_t k() const { return data_ ? data_->k : 0; }
  std::size_t n() const { return data_ ? data_->n : 0; }
  /// The packed elements' memory (the panels are zero-padded to whole tiles).
  std::size_t bytes() const { return data_ ? data_->bytes : 0; }
  bool empty() const { return !data_; }
  /// Whether a gemm with it called now runs the kernel it was packed for.
  bool usable() const { return data_ && detail::gemm_kernel<TA>(data_->n) == data_->kernel; }

 private:
  friend struct detail::packed_b_access;
  explicit packed_b(detail::packed_b_data data)
      : data_(std::make_shared<const detail::packed_b_data>(std::move(data))) {}
  std::shared_ptr<const detail::packed_b_data> data_;
};

namespace detail {

template <class TA, class TB>
inline constexpr bool is_pack_b_dtype_combination = is_gemm_dtype_combination<TA, TB, float>;

struct packed_b_access {
  template <class TA>
  static packed_b<TA> make(packed_b_data data) {
    return packed_b<TA>(std::move(data));
  }
  template <class TA>
  static const packed_b_data* data(const packed_b<TA>& b) {
    return b.data_.get();
  }
};

}  // namespace detail

/// Packs op(B), k x n (B is k x n with leading dimension ldb, or n x k when transposed), for
/// gemm calls with an A of dtype TA (named: it is not deduced). TB is TA, or float with a
/// bfloat16 or float16 TA (each element rounded to TA, nearest even, as gemm reads it). A gemm
/// with the packed B gives the bits of gemm with B itself. A leading dimension shorter than its
/// row throws std::invalid_argument.
template <class TA, class TB>
packed_b<TA> pack_b(transpose trans_b, std::size_t k, std::size_t n, const TB* b, std::size_t ldb) {
  static_assert(detail::is_pack_b_dtype_combination<TA, TB>,
                "mixprec::kernels::pack_b packs a B of the A dtype (float, bfloat16 or float16), or a float B for a "
                "bfloat16 or float16 A; name the A dtype: kernels::pack_b<bfloat16>(...)");
  if constexpr (detail::is_pack_b_dtype_combination<TA, TB>) {
    detail::gemm_operands(transpose::no, trans_b, 0, n, k, k, ldb, n);
    return detail::packed_b_access::make<TA>(
        detail::pack_b<TA, TB>(detail::pack_b_problem<TB>{trans_b == transpose::yes, k, n, b, ldb}));
  }
}

/// The same from a span, which must hold every element of B (else std::invalid_argument).
template <class TA, class TB>
packed_b<TA> pack_b(transpose trans_b, std::size_t k, std::size_t n, std::span<const TB> b, std::size_t ldb) {
  const detail::gemm_operands operands(transpose::no, trans_b, 0, n, k, k, ldb, n);
  detail::check_extent(operands.b, b.size());
  return pack_b<TA>(trans_b, k, n, b.data(), ldb);
}

/// The same from any contiguous range (std::vector, std::array, spans).
template <class TA, detail::input_range B>
packed_b<TA> pack_b(transpose trans_b, std::size_t k, std::size_t n, const B& b, std::size_t ldb) {
  return kernels::pack_b<TA>(trans_b, k, n, detail::input_span(b), ldb);
}

/// C = alpha * op(A) * op(B) + beta * C with op(B) packed by pack_b (k and n are its own): the
/// gemm above, with the same dtypes for (A, C), without packing B. An empty packed B, or one
/// packed for another kernel than this call would run (see packed_b), throws
/// std::invalid_argument, as does a leading dimension shorter than its row.
template <class TA, class TC>
void gemm(transpose trans_a, std::size_t m, float alpha, const TA* a, std::size_t lda, const packed_b<TA>& b,
          float beta, TC* c, std::size_t ldc) {
  static_assert(detail::is_gemm_dtype_combination<TA, TA, TC>,
                "mixprec::kernels::gemm with a packed B supports (A, C) dtypes (float, float), (bfloat16, float), "
                "(bfloat16, bfloat16), (float16, float) and (float16, float16)");
  if constexpr (detail::is_gemm_dtype_combination<TA, TA, TC>) {
    const detail::packed_b_data* packed = detail::packed_b_access::data(b);
    if (!packed) detail::throw_packed_b_error(nullptr, {});
    detail::gemm_operands(trans_a, transpose::no, m, packed->n, packed->k, lda, packed->n, ldc);
    // The kernel is checked where it is chosen, before anything is written.
    detail::gemm(detail::gemm_problem<TA, TA, TC>{trans_a == transpose::yes, false, m, packed->n, packed->k, alpha, a,
                                                  lda, nullptr, packed->n, beta, c, ldc, packed});
  }
}

/// The same on spans, which must hold every element gemm touches (else std::invalid_argument).
template <class TA, class TC>
void gemm(transpose trans_a, std::size_t m, float alpha, std::span<const std::type_identity_t<TA>> a, std::size_t lda,
          const packed_b<TA>& b, float beta, std::span<TC> c, std::size_t ldc) {
  const detail::gemm_operands operands(trans_a, transpose::no, m, b.n(), b.k(), lda, b.n(), ldc);
  detail::check_extent(operands.a, a.size());
  detail::check_extent(operands.c, c.size());
  detail::check_apart_from_c(operands.a, a, operands.c, c);
  gemm(trans_a, m, alpha, a.data(), lda, b, beta, c.data(), ldc);
}

/// The same on any contiguous ranges, the dtypes deduced.
template <detail::input_range A, class TA, detail::output_range C>
void gemm(transpose trans_a, std::size_t m, float alpha, const A& a, std::size_t lda, const packed_b<TA>& b,
          float beta, C&& c, std::size_t ldc) {
  static_assert(std::is_same_v<detail::range_element_t<A>, TA>,
                "mixprec::kernels::gemm with a packed B: A must have the dtype B was packed for (pack_b<TA>)");
  if constexpr (std::is_same_v<detail::range_element_t<A>, TA>)
    kernels::gemm(trans_a, m, alpha, detail::input_span(a), lda, b, beta, detail::output_span(std::forward<C>(c)), ldc);
}

/// Threads the GEMM splits its work across, the calling thread included; 0 means
/// std::thread::hardware_concurrency(), which is also the default. Results do not depend on it.
/// Safe while other threads run kernels (a running GEMM finishes on the pool it started with).
/// More than thread_pool::max_threads throws std::invalid_argument; if the OS refuses a thread,
/// what std::thread threw (std::system_error) propagates and the previous pool stays. The default
/// pool is built by the first GEMM (or num_threads()), which can throw the same way; nothing
/// is kept then, and set_num_threads(1) needs no thread at all.
MIXPREC_KERNEL_API void set_num_threads(std::size_t threads);
MIXPREC_KERNEL_API std::size_t num_threads();

}  // namespace mixprec::kernels

#include <mixprec/kernels/detail/default_implementation.hpp>
