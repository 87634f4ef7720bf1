// A product weight (Dense's or Conv2D's kernel: the B of x * kernel) packed for the GEMMs of
// inference calls, kept between calls while the weight stays the same.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include <mixprec/kernels/gemm.hpp>

namespace mixprec::detail {

/// The weight packed by kernels::pack_b for products computing in C, kept while its variable
/// keeps its version (AutoCastVariable::version) and the GEMM runs the micro-kernel it was packed
/// for: an inference call then packs nothing, with the same bits. A layer engine holds one per
/// layer; a training step drops it (the weights change every step). Calls on several threads may
/// share it (a lock; each gets its own reference to the packed elements); a copy shares them too.
template <class C>
class packed_product_weight {
 public:
  packed_product_weight() = default;
  packed_product_weight(const packed_product_weight& other) { *this = other; }
  packed_product_weight& operator=(const packed_product_weight& other) {
    if (this != &other) {
      const std::scoped_lock lock(mutex_, other.mutex_);
      version_ = other.version_;
      packed_ = other.packed_;
    }
    return *this;
  }

  /// The weight (k x n, row-major) packed: the one kept, or packed now from weight(), a span in C
  /// or in float32 (read as C). `version` 0 (unknown) is never kept.
  template <class Weight>
  kernels::packed_b<C> get(std::uint64_t version, std::size_t k, std::size_t n, Weight&& weight) {
    const std::lock_guard lock(mutex_);
    if (version == 0 || version != version_ || !packed_.usable() || packed_.k() != k || packed_.n() != n) {
      packed_ = kernels::pack_b<C>(kernels::transpose::no, k, n, weight(), n);
      version_ = version;
    }
    return packed_;
  }
  void release() {
    const std::lock_guard lock(mutex_);
    version_ = 0;
    packed_ = {};
  }

 private:
  mutable std::mutex mutex_;
  std::uint64_t version_ = 0;
  kernels::packed_b<C> packed_;
};

}  // namespace mixprec::detail
