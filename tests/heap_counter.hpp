// Counts a program's live heap bytes and their high-water mark: replaces the global operator
// new and delete (every variant, so every C++ allocation of mixprec, of the standard library and
// of the thread pool's workers goes through it). Include it in ONE translation unit of a program
// (it defines the replacement operators). Each block carries a header (at least 16 bytes, and as
// large as the alignment asked for) holding the size requested and the header's own size, just
// before the pointer returned. Not counted: malloc's own overhead and fragmentation.
//   heap_counter::live_bytes.load(), heap_counter::peak_bytes.store(heap_counter::live_bytes.load())
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace heap_counter {

inline std::atomic<std::int64_t> live_bytes{0};
inline std::atomic<std::int64_t> peak_bytes{0};

inline void note_allocation(std::int64_t bytes) {
  const std::int64_t now = live_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  std::int64_t peak = peak_bytes.load(std::memory_order_relaxed);
  while (now > peak && !peak_bytes.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

inline void* counted_allocate(std::size_t size, std::size_t alignment) noexcept {
  const std::size_t header = alignment < 16 ? 16 : alignment;
  std::size_t total = header + (size == 0 ? 1 : size);
  total = (total + header - 1) / header * header;  // aligned_alloc wants a multiple of the alignment
  void* base = std::aligned_alloc(header, total);
  if (base == nullptr) return nullptr;
  auto* user = static_cast<unsigned char*>(base) + header;
  reinterpret_cast<std::size_t*>(user)[-1] = size;
  reinterpret_cast<std::size_t*>(user)[-2] = header;
  note_allocation(static_cast<std::int64_t>(size));
  return user;
}

inline void counted_free(void* p) noexcept {
  if (p == nullptr) return;
  auto* user = static_cast<unsigned char*>(p);
  const std::size_t size = reinterpret_cast<std::size_t*>(user)[-1];
  const std::size_t header = reinterpret_cast<std::size_t*>(user)[-2];
  live_bytes.fetch_sub(static_cast<std::int64_t>(size), std::memory_order_relaxed);
  std::free(user - header);
}

inline void* allocate_or_throw(std::size_t size, std::size_t alignment) {
  void* p = counted_allocate(size, alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace heap_counter

void* operator new(std::size_t size) { return heap_counter::allocate_or_throw(size, __STDCPP_DEFAULT_NEW_ALIGNMENT__); }
void* operator new[](std::size_t size) { return heap_counter::allocate_or_throw(size, __STDCPP_DEFAULT_NEW_ALIGNMENT__); }
void* operator new(std::size_t size, std::align_val_t a) { return heap_counter::allocate_or_throw(size, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t size, std::align_val_t a) { return heap_counter::allocate_or_throw(size, static_cast<std::size_t>(a)); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return heap_counter::counted_allocate(size, __STDCPP_DEFAULT_NEW_ALIGNMENT__);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return heap_counter::counted_allocate(size, __STDCPP_DEFAULT_NEW_ALIGNMENT__);
}
void* operator new(std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return heap_counter::counted_allocate(size, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return heap_counter::counted_allocate(size, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { heap_counter::counted_free(p); }
void operator delete[](void* p) noexcept { heap_counter::counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { heap_counter::counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { heap_counter::counted_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { heap_counter::counted_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { heap_counter::counted_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { heap_counter::counted_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { heap_counter::counted_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { heap_counter::counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { heap_counter::counted_free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { heap_counter::counted_free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { heap_counter::counted_free(p); }
