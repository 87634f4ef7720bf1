// Per-target helpers shared by the kernel families. Toggle-guarded: compiled once per target.
#if defined(MIXPREC_KERNELS_COMMON_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef MIXPREC_KERNELS_COMMON_INL_HPP_
#undef MIXPREC_KERNELS_COMMON_INL_HPP_
#else
#define MIXPREC_KERNELS_COMMON_INL_HPP_
#endif

#include <cstddef>
#include <cstring>
#include <limits>
#include <tuple>
#include <type_traits>
#include <utility>

#include <hwy/highway.h>
#include <mixprec/kernels/detail/kernel_macros.hpp>

MIXPREC_KERNELS_BEGIN
namespace hn = hwy::HWY_NAMESPACE;

/// A zero-padded copy of the last, partial step of one array (see for_each_step).
template <class T, std::size_t MaxStep>
struct padded_tail {
  std::remove_const_t<T> data[MaxStep];

  void fill(const T* from, std::size_t count) {
    std::memset(static_cast<void*>(data), 0, sizeof(data));
    std::memcpy(static_cast<void*>(data), from, count * sizeof(T));
  }
  void write_back(T* to, std::size_t count) const {
    if constexpr (!std::is_const_v<T>) std::memcpy(static_cast<void*>(to), data, count * sizeof(T));
  }
};

/// block(p...), as a bool: true (go on) for a block that returns nothing.
template <class Block, class... P>
HWY_INLINE bool run_block(Block& block, P*... p) {
  if constexpr (std::is_void_v<decltype(block(p...))>) {
    block(p...);
    return true;
  } else {
    return block(p...);
  }
}

template <std::size_t MaxStep, class Block, std::size_t... I, class... T>
HWY_INLINE bool run_padded_tail(Block& block, std::size_t count, std::index_sequence<I...>, T*... arrays) {
  std::tuple<padded_tail<T, MaxStep>...> tails;
  (std::get<I>(tails).fill(arrays, count), ...);
  const bool go_on = run_block(block, static_cast<T*>(std::get<I>(tails).data)...);
  (std::get<I>(tails).write_back(arrays, count), ...);
  return go_on;
}

/// Runs `block(array + i...)` for i = 0, step, 2 step, ... over `n` elements of every array.
/// The last partial step runs the same code on zero-padded copies (copied back into the arrays
/// that are not const), so a ragged tail is computed exactly as a full step would be. `block`
/// may return bool: false stops the loop, and for_each_step then returns false.
template <std::size_t MaxStep, class Block, class... T>
HWY_INLINE bool for_each_step(std::size_t n, std::size_t step, Block&& block, T*... arrays) {
  std::size_t i = 0;
  for (; i + step <= n; i += step)
    if (!run_block(block, (arrays + i)...)) return false;
  if (i == n) return true;
  return run_padded_tail<MaxStep>(block, n - i, std::index_sequence_for<T...>(), (arrays + i)...);
}

/// Runs `block(in, out)` over `n` elements in steps of `lanes` (see for_each_step).
template <std::size_t MaxLanes, class In, class Out, class Block>
HWY_INLINE void for_each_block(const In* in, Out* out, std::size_t n, std::size_t lanes, Block&& block) {
  for_each_step<MaxLanes>(n, lanes, block, in, out);
}

/// f(std::integral_constant<std::size_t, I>()) for I = 0 ... Count - 1, unrolled at compile
/// time, so that an array of vectors indexed by I can live in registers.
template <std::size_t Count, class F>
HWY_INLINE void unroll(F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) { (f(std::integral_constant<std::size_t, I>()), ...); }(
      std::make_index_sequence<Count>());
}

/// NaN lanes replaced by the canonical quiet NaN: which NaN an operation on NaNs returns depends
/// on operand order (which compilers may swap) and on the instruction set.
template <class V>
HWY_INLINE V canonical_nan(V v) {
  const hn::DFromV<V> d;
  return hn::IfThenElse(hn::IsNaN(v), hn::Set(d, std::numeric_limits<hn::TFromV<V>>::quiet_NaN()), v);
}

/// Round to nearest integer, ties to even, for |x| < 2^22 (adding 1.5 * 2^23 leaves no
/// fraction bits, so the FPU's default rounding does the work on every target alike).
template <class D>
HWY_INLINE hn::Vec<D> round_half_even_small(D d, hn::Vec<D> x) {
  const auto magic = hn::Set(d, 12582912.0f);  // 1.5 * 2^23
  return hn::Sub(hn::Add(x, magic), magic);
}

MIXPREC_KERNELS_END

#endif  // toggle guard
