// A product weight (Dense's or Conv2D's kernel: the B of x * kernel) packed for the GEMMs of
// inference calls, kept between calls while the weight stays the same.
#pragma once

#include <cstddef>
#include <cstdint>

#include <mixprec/kernels/gemm.hpp>

namespace mixprec::detail {

/// The weight packed by kernels::pack_b for products computing in C, kept while its variable
/// keeps its version (AutoCastVariable::version) and the GEMM runs the micro-kernel it was packed
/// for: an inference call then packs nothing, with the same bits. A layer engine holds one per
/// layer; a training step drops it (the weights change every step).
template <class C>
class packed_product_weight {
 public:
  /// The weight (k x n, row-major) packed: the one kept, or packed now from weight(), a span in C
  /// or in float32 (read as C). `version` 0 (unknown) is never kept.
  template <class Weight>
  const kernels::packed_b<C>& get(std::uint64_t version, std::size_t k, std::size_t n, Weight&& weight) {
    if (version == 0 || version != version_ || !packed_.usable() || packed_.k() != k || packed_.n() != n) {
      packed_ = kernels::pack_b<C>(kernels::transpose::no, k, n, weight(), n);
      version_ = version;
    }
    return packed_;
  }
  void release() { *this = {}; }

 private:
  std::uint64_t version_ = 0;
  kernels::packed_b<C> packed_;
};

}  // namespace mixprec::detail
