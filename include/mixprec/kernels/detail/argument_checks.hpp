// The argument checks the kernels share: sizes that must match, rows that must fit, spans that
// must lie apart. Each throws std::invalid_argument naming the kernel, the argument and the value.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>

namespace mixprec::detail {
inline void check_same_size(std::size_t from, std::size_t to, const char* what) {
  if (from != to)
    throw std::invalid_argument(std::string(what) + ": the input has " + std::to_string(from) +
                                " elements but the output has " + std::to_string(to) + "; they must match.");
}

/// rows x cols layouts: cols > 0 and the size a multiple of it.
inline void check_rows(std::size_t size, std::size_t cols, const char* what) {
  if (cols == 0) throw std::invalid_argument(std::string(what) + ": cols must be positive, got 0.");
  if (size % cols != 0)
    throw std::invalid_argument(std::string(what) + ": the size " + std::to_string(size) +
                                " is not a multiple of cols = " + std::to_string(cols) + ".");
}

/// `rows` rows of `row_length` elements, each starting `row_stride` after the previous one, lie
/// inside `size` elements (checked without overflow): row_length > 0, and rows > 1 needs
/// row_stride >= row_length (rows apart).
inline void check_strided_rows(std::size_t size, std::size_t rows, std::size_t row_length, std::size_t row_stride,
                               const char* what, const char* name) {
  if (rows > 1 && row_stride < row_length)
    throw std::invalid_argument(std::string(what) + ": " + name + "'s row stride " + std::to_string(row_stride) +
                                " is shorter than a row (" + std::to_string(row_length) + ").");
  const bool fits = rows == 0 || (size >= row_length && (rows == 1 || (size - row_length) / (rows - 1) >= row_stride));
  if (!fits)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(rows) + " rows of " +
                                std::to_string(row_length) + " elements, " + std::to_string(row_stride) +
                                " apart, do not fit in " + name + "'s " + std::to_string(size) + " elements.");
}

/// Whether the memory of `a` and `b` shares a byte (an empty span overlaps nothing).
template <class A, class B>
bool overlap(std::span<A> a, std::span<B> b) {
  const auto a_bytes = std::as_bytes(a);
  const auto b_bytes = std::as_bytes(b);
  const std::less<const std::byte*> before;
  return !a_bytes.empty() && !b_bytes.empty() && before(a_bytes.data(), b_bytes.data() + b_bytes.size()) &&
         before(b_bytes.data(), a_bytes.data() + a_bytes.size());
}

/// The error of two arguments that overlap: `what` names the kernel.
[[noreturn]] inline void throw_overlap(const char* what, const char* a_name, const char* b_name) {
  throw std::invalid_argument(std::string(what) + ": " + a_name + " and " + b_name + " overlap; they must lie apart.");
}

/// Throws unless the memory of `a` and `b` lies apart: a kernel would read an input after
/// writing an output over it.
template <class A, class B>
void check_disjoint(std::span<A> a, std::span<B> b, const char* what, const char* a_name, const char* b_name) {
  if (overlap(a, b)) throw_overlap(what, a_name, b_name);
}
}  // namespace mixprec::detail
