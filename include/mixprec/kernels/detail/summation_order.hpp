// The order in which sum() and dot() add their terms. It is fixed by the element indices alone,
// never by the vector width, so every kernel target (and the scalar fallback) rounds the same
// partial sums in the same order and returns the same bits:
//
//  1. The terms are cut into chunks of `sum_chunk` consecutive elements. Within a chunk, term i
//     is added to virtual accumulator i % `sum_lanes` (each accumulator starts at +0 and adds
//     its terms in index order). A vector kernel holds the 32 accumulators in 32 / lanes
//     registers; the scalar fallback in an array.
//  2. Chunk results (32 partial sums each) are combined like a binary counter: the k-th chunk
//     is added lane by lane into the pending partial of each level its arrival carries through.
//     This is pairwise summation over chunks, so the rounding error grows with log(n), not n.
//  3. The pending partials are folded from the lowest level up, and the 32 lanes are reduced
//     by a fixed tree: lane[j] += lane[j + w] for w = 16, 8, 4, 2, 1.
//
// A NaN result is the canonical quiet NaN (which NaN an addition of two NaNs returns depends on
// operand order, which compilers may swap).
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace mixprec::kernels::detail {

inline constexpr std::size_t sum_lanes = 32;
inline constexpr std::size_t sum_chunk = 2048;
static_assert(sum_chunk % sum_lanes == 0);

/// Steps 2 and 3 above, for chunk results computed by the caller (step 1).
template <class Acc>
class chunk_cascade {
 public:
  using lanes_type = std::array<Acc, sum_lanes>;

  /// Adds the accumulators of the next chunk.
  void add_chunk(lanes_type chunk) {
    std::size_t level = 0;
    for (; (chunks_ >> level) & 1; ++level)
      for (std::size_t j = 0; j < sum_lanes; ++j) chunk[j] = pending_[level][j] + chunk[j];
    pending_[level] = chunk;
    ++chunks_;
  }

  /// The sum of every chunk added so far (+0 for none).
  Acc total() const {
    if (chunks_ == 0) return Acc(0);
    std::uint64_t levels = chunks_;
    lanes_type lanes = pending_[std::countr_zero(levels)];
    for (levels &= levels - 1; levels != 0; levels &= levels - 1) {
      const auto& partial = pending_[std::countr_zero(levels)];
      for (std::size_t j = 0; j < sum_lanes; ++j) lanes[j] = partial[j] + lanes[j];
    }
    for (std::size_t width = sum_lanes / 2; width > 0; width /= 2)
      for (std::size_t j = 0; j < width; ++j) lanes[j] += lanes[j + width];
    return lanes[0] == lanes[0] ? lanes[0] : std::numeric_limits<Acc>::quiet_NaN();
  }

 private:
  // A size_t count of elements makes fewer than 2^64 / sum_chunk = 2^53 chunks.
  static constexpr std::size_t max_levels = 54;
  lanes_type pending_[max_levels];  // only the levels whose bit is set in chunks_ are written
  std::uint64_t chunks_ = 0;
};

/// The sum of term(0) ... term(n - 1) in the order above (the scalar form of the kernels).
template <class Acc, class Term>
Acc ordered_sum(std::size_t n, Term&& term) {
  chunk_cascade<Acc> cascade;
  for (std::size_t start = 0; start < n; start += sum_chunk) {
    typename chunk_cascade<Acc>::lanes_type lanes{};
    const std::size_t end = n - start < sum_chunk ? n : start + sum_chunk;
    for (std::size_t i = start; i < end; ++i) lanes[i % sum_lanes] += static_cast<Acc>(term(i));
    cascade.add_chunk(lanes);
  }
  return cascade.total();
}

}  // namespace mixprec::kernels::detail
