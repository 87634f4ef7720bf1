// The range arguments of the kernels. Every kernel takes std::spans, whose element types name
// its dtypes; each also has an overload that takes any contiguous sized range (std::vector,
// std::array, a std::span of non-const elements where the kernel reads) and views it as the
// span, so that the dtypes are deduced from the arguments:
//
//   std::vector<float> x(n);  std::vector<bfloat16> y(n);
//   kernels::convert(x, y);   // convert<float, bfloat16>
//   kernels::amax(y);         // amax<bfloat16>
#pragma once

#include <ranges>
#include <span>
#include <type_traits>

namespace mixprec::kernels::detail {

/// A range a kernel reads: contiguous and sized.
template <class R>
concept input_range = std::ranges::contiguous_range<R> && std::ranges::sized_range<R>;

/// A range a kernel writes: contiguous, sized, with non-const elements, and not a temporary
/// container whose results would be lost (a span or an lvalue).
template <class R>
concept output_range = input_range<R> && std::ranges::borrowed_range<R> &&
                       !std::is_const_v<std::remove_reference_t<std::ranges::range_reference_t<R>>>;

template <input_range R>
using range_element_t = std::remove_cvref_t<std::ranges::range_reference_t<R>>;

/// The span a kernel reads of a range.
template <input_range R>
std::span<const range_element_t<R>> input_span(const R& range) {
  return {std::ranges::data(range), std::ranges::size(range)};
}

/// The span a kernel writes of a range.
template <output_range R>
std::span<range_element_t<R>> output_span(R&& range) {
  return {std::ranges::data(range), std::ranges::size(range)};
}

}  // namespace mixprec::kernels::detail
