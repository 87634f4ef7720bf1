// Layers' temporaries (GEMM accumulators, im2col columns, float32 widenings of 16-bit values)
// come from one per-thread stack of memory, taken inside a scratch_scope and given back when the
// scope ends. A thread then holds, between calls, one block as large as the most its deepest
// call needed at once, rather than one buffer per purpose each as large as the largest call that
// purpose served (what a training step held before: the sum over every purpose, per thread).
#pragma once

#include <algorithm>
#include <cstddef>
#include <new>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define MIXPREC_POISON_SCRATCH 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MIXPREC_POISON_SCRATCH 1
#endif
#endif
#ifdef MIXPREC_POISON_SCRATCH
#include <sanitizer/asan_interface.h>
#endif

namespace mixprec::detail {

/// The calling thread's stack of scratch memory. Memory is taken from its top, 64-byte aligned,
/// and the top goes back to where it was when a scope ends. When a take does not fit in the
/// blocks it has, a new block is added (at least 64 KiB, and as large as all the others: spans
/// already handed out stay valid); when the outermost scope ends, several blocks are merged into
/// one of the most that was in use at once, so that the next call of the same shape allocates
/// nothing. Under AddressSanitizer, memory not in use
/// is poisoned: a span used after its scope ended is reported.
class scratch_arena {
 public:
  static scratch_arena& of_this_thread() {
    thread_local scratch_arena arena;
    return arena;
  }

  scratch_arena(const scratch_arena&) = delete;
  scratch_arena& operator=(const scratch_arena&) = delete;
  ~scratch_arena() {
    for (const block& b : blocks_) free_block(b);
  }

  struct mark {
    std::size_t block, offset, in_use;
  };
  mark top() const { return {current_, offset_, in_use_}; }

  void* take(std::size_t bytes) {
    if (depth_ == 0)
      throw std::logic_error("mixprec: scratch memory was taken outside a scratch_scope (it would never be given back)");
    if (bytes > static_cast<std::size_t>(-1) - alignment) throw std::bad_alloc();
    bytes = (std::max<std::size_t>(bytes, 1) + alignment - 1) / alignment * alignment;
    while (current_ < blocks_.size() && blocks_[current_].size - offset_ < bytes) {
      ++current_;
      offset_ = 0;
    }
    if (current_ == blocks_.size()) {
      blocks_.reserve(blocks_.size() + 1);
      blocks_.push_back(new_block(std::max({bytes, capacity(), minimum_block})));
      offset_ = 0;
    }
    std::byte* memory = blocks_[current_].data + offset_;
#ifdef MIXPREC_POISON_SCRATCH
    ASAN_UNPOISON_MEMORY_REGION(memory, bytes);
#endif
    offset_ += bytes;
    in_use_ += bytes;
    most_in_use_ = std::max(most_in_use_, in_use_);
    return memory;
  }

  void open() { ++depth_; }
  /// Gives back everything taken since `m`. Called by a destructor, so it never throws.
  void close(const mark& m) noexcept {
#ifdef MIXPREC_POISON_SCRATCH
    for (std::size_t b = m.block; b <= current_ && b < blocks_.size(); ++b) {
      const std::size_t from = b == m.block ? m.offset : 0;
      ASAN_POISON_MEMORY_REGION(blocks_[b].data + from, blocks_[b].size - from);
    }
#endif
    current_ = m.block;
    offset_ = m.offset;
    in_use_ = m.in_use;
    if (--depth_ == 0 && blocks_.size() > 1) merge_blocks();
  }

  /// The bytes the thread holds (its blocks), for tests and benchmarks.
  std::size_t capacity() const {
    std::size_t capacity = 0;
    for (const block& b : blocks_) capacity += b.size;
    return capacity;
  }

 private:
  static constexpr std::size_t alignment = 64, minimum_block = std::size_t{1} << 16;
  struct block {
    std::byte* data;
    std::size_t size;
  };

  scratch_arena() = default;

  static block new_block(std::size_t size) {
    block b{static_cast<std::byte*>(::operator new(size, std::align_val_t{alignment})), size};
#ifdef MIXPREC_POISON_SCRATCH
    ASAN_POISON_MEMORY_REGION(b.data, b.size);
#endif
    return b;
  }
  static void free_block(const block& b) {
#ifdef MIXPREC_POISON_SCRATCH
    ASAN_UNPOISON_MEMORY_REGION(b.data, b.size);
#endif
    ::operator delete(b.data, std::align_val_t{alignment});
  }
  /// Nothing is in use: one block of the most that was (the old ones freed first, so that the
  /// merge never holds both). If that allocation fails the arena is left empty, which is
  /// consistent: the next take allocates again, and throws there if it must.
  void merge_blocks() noexcept {
    for (const block& b : blocks_) free_block(b);
    blocks_.clear();  // keeps the capacity: the push_back below does not allocate
    try {
      blocks_.push_back(new_block(most_in_use_));
    } catch (const std::bad_alloc&) {
    }
  }

  std::vector<block> blocks_;
  std::size_t current_ = 0, offset_ = 0, in_use_ = 0, most_in_use_ = 0;
  int depth_ = 0;
};

/// While it lives, scratch_buffer takes from the calling thread's arena; its end gives back all
/// of that. Scopes nest (a thread pool task inside a layer's call, a chunk inside a task).
class scratch_scope {
 public:
  scratch_scope() : arena_(scratch_arena::of_this_thread()), mark_(arena_.top()) { arena_.open(); }
  ~scratch_scope() { arena_.close(mark_); }
  scratch_scope(const scratch_scope&) = delete;
  scratch_scope& operator=(const scratch_scope&) = delete;

 private:
  scratch_arena& arena_;
  scratch_arena::mark mark_;
};

/// n elements of T from the calling thread's arena, valid until the innermost scratch_scope
/// open on this thread ends; their values are whatever the memory held. Throws std::logic_error
/// when no scope is open.
template <class T>
std::span<T> scratch_buffer(std::size_t n) {
  static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>,
                "scratch memory holds trivial values only");
  if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_alloc();
  return {static_cast<T*>(scratch_arena::of_this_thread().take(n * sizeof(T))), n};
}

}  // namespace mixprec::detail
