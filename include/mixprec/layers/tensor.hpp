// Tensor<T, Extents...>: a dense, row-major tensor whose dtype and shape are part of its type.
//
//   Tensor<bfloat16, dynamic, 784> x(batch);     // a batch of 784-vectors (batch known at run time)
//   Tensor<float, 784, 1024> kernel;              // a weight: every extent static
//
// Only the first extent may be `dynamic` (the batch), as in Keras, where every other dimension of
// a layer's input is fixed when the model is built. Mixing dtypes in arithmetic is a compile
// error with a message saying what to do; mixing shapes is a compile error too.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <new>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <mixprec/core/cast.hpp>
#include <mixprec/core/dtype.hpp>
#include <mixprec/core/limits.hpp>
#include <mixprec/kernels/convert.hpp>

namespace mixprec {

inline constexpr std::size_t dynamic = static_cast<std::size_t>(-1);

namespace detail {
/// std::allocator, except that a value-less construct() default-initializes: for trivial
/// element types, sizing a vector leaves the elements uninitialized instead of zeroing them.
template <class T>
struct default_init_allocator : std::allocator<T> {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = default_init_allocator<U>;
  };
  default_init_allocator() = default;
  template <class U>
  default_init_allocator(const default_init_allocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
}  // namespace detail

/// The storage of tensors' values: a std::vector whose size constructor does not zero trivial
/// elements, so that a buffer a kernel is about to overwrite costs no memset.
template <class T>
using value_buffer = std::vector<T, detail::default_init_allocator<T>>;

namespace detail {
/// Frees a buffer's memory (clear() would keep its capacity).
template <class T>
void free_buffer(value_buffer<T>& buffer) noexcept {
  value_buffer<T>().swap(buffer);
}
}  // namespace detail

/// Tag for a tensor whose values the caller overwrites before reading (no zero fill).
struct uninitialized_t {
  explicit uninitialized_t() = default;
};
inline constexpr uninitialized_t uninitialized{};

/// A list of extents as a type: shape<dynamic, 28, 28, 1>.
template <std::size_t... Extents>
struct shape {
  static constexpr std::size_t rank = sizeof...(Extents);
  static constexpr std::array<std::size_t, rank> extents{Extents...};
  static constexpr bool batched = rank > 0 && extents[0] == dynamic;
  /// Elements per batch entry (the product of the static extents).
  /// 0 when the product overflows std::size_t (reported by the static_assert below).
  static constexpr std::size_t static_size = [] {
    std::size_t size = 1;
    for (std::size_t e : extents)
      if (e != dynamic && __builtin_mul_overflow(size, e, &size)) return std::size_t{0};
    return size;
  }();
  static_assert(((Extents != 0) && ...), "Tensor extents must be positive.");
  static_assert(static_size != 0 || !((Extents != 0) && ...),
                "Tensor extents multiply to more elements than std::size_t counts.");
};

template <class T, std::size_t... Extents>
class Tensor {
  static_assert(DType<T>, "Tensor<T, ...>: T must be a mixprec dtype (float, bfloat16, float16, ...).");
  static_assert(sizeof...(Extents) == 0 || ((Extents != dynamic) && ...) ||
                    (shape<Extents...>::extents[0] == dynamic &&
                     std::count(shape<Extents...>::extents.begin(), shape<Extents...>::extents.end(), dynamic) == 1),
                "Tensor<T, Extents...>: only the first extent (the batch) may be dynamic.");

 public:
  using dtype = T;
  using shape_type = shape<Extents...>;
  static constexpr std::size_t rank = sizeof...(Extents);
  static constexpr bool batched = shape_type::batched;
  /// Elements per batch entry (all elements when not batched).
  static constexpr std::size_t row_size = shape_type::static_size;

  /// A zero-filled tensor; a batched one starts with a batch of 0.
  Tensor() : batch_(batched ? 0 : 1), values_(batched ? 0 : row_size, cast<T>(0)) {}
  explicit Tensor(std::size_t batch)
    requires batched
      : batch_(batch), values_(checked_size(batch), cast<T>(0)) {}
  /// A batch whose values are left uninitialized, for outputs a kernel fills.
  Tensor(std::size_t batch, uninitialized_t)
    requires batched
      : batch_(batch), values_(checked_size(batch)) {}
  /// From values in row-major order; their number must match the shape.
  explicit Tensor(value_buffer<T> values) : batch_(batched ? values.size() / row_size : 1), values_(std::move(values)) {
    if (values_.size() != batch_ * row_size)
      throw std::invalid_argument("Tensor: " + std::to_string(values_.size()) + " values do not fill a whole number of " +
                                  std::to_string(row_size) + "-element rows.");
  }
  /// From a std::vector (copied: the storage uses another allocator).
  explicit Tensor(const std::vector<T>& values) : Tensor(value_buffer<T>(values.begin(), values.end())) {}
  Tensor(std::initializer_list<T> values) : Tensor(value_buffer<T>(values)) {}

  /// The extent of dimension i (the batch size for a dynamic first extent).
  std::size_t extent(std::size_t i) const { return i == 0 && batched ? batch_ : shape_type::extents[i]; }
  std::size_t batch() const { return batch_; }
  std::size_t size() const { return values_.size(); }
  std::array<std::size_t, rank> extents() const {
    std::array<std::size_t, rank> result{};
    for (std::size_t i = 0; i < rank; ++i) result[i] = extent(i);
    return result;
  }

  T* data() { return values_.data(); }
  const T* data() const { return values_.data(); }
  std::span<T> values() { return values_; }
  std::span<const T> values() const { return values_; }
  T& operator[](std::size_t i) { return values_[i]; }
  const T& operator[](std::size_t i) const { return values_[i]; }
  /// The elements of batch entry i (or of the i-th slice along the first extent).
  std::span<T> row(std::size_t i) { return std::span(values_).subspan(i * row_size, row_size); }
  std::span<const T> row(std::size_t i) const { return std::span(values_).subspan(i * row_size, row_size); }

  /// The values, moved out without a copy (a reshape: Tensor<T, dynamic, 784>(std::move(images).release_values())).
  /// The tensor is left empty, fit only to be assigned to or destroyed.
  value_buffer<T> release_values() && {
    batch_ = 0;
    return std::move(values_);
  }

  /// Element-wise equality of values (bitwise for narrow floats would differ for NaN: this is IEEE ==).
  friend bool operator==(const Tensor& a, const Tensor& b) { return a.batch_ == b.batch_ && a.values_ == b.values_; }

 private:
  /// batch * row_size, or std::invalid_argument when it wraps (a wrapped size would be a small
  /// buffer under a huge batch()).
  static std::size_t checked_size(std::size_t batch) { return detail::checked_multiply(batch, row_size, "Tensor"); }

  std::size_t batch_ = 1;
  value_buffer<T> values_;
};

namespace detail {
template <class T>
struct is_tensor : std::false_type {};
template <class T, std::size_t... E>
struct is_tensor<Tensor<T, E...>> : std::true_type {};

template <class Tensor, class To>
struct rebind_tensor;
template <class T, std::size_t... E, class To>
struct rebind_tensor<Tensor<T, E...>, To> {
  using type = Tensor<To, E...>;
};
}  // namespace detail

template <class T>
concept TensorType = detail::is_tensor<std::remove_cvref_t<T>>::value;

/// The same shape with another dtype.
template <TensorType T, class To>
using rebind_tensor_t = typename detail::rebind_tensor<std::remove_cvref_t<T>, To>::type;

/// The tensor converted to another dtype (correctly rounded; vectorized where a kernel exists).
template <class To, class T, std::size_t... E>
Tensor<To, E...> tensor_cast(const Tensor<T, E...>& from) {
  value_buffer<To> values(from.size());
  kernels::convert<T, To>(from.values(), std::span(values));
  return Tensor<To, E...>(std::move(values));
}

namespace detail {

template <class Batched, class Unbatched>
struct broadcasts_over_batch : std::false_type {};
template <class T, std::size_t... E, class U>
struct broadcasts_over_batch<Tensor<T, dynamic, E...>, Tensor<U, E...>> : std::true_type {};

/// The operands of element-wise arithmetic: one dtype, and one shape or a batched tensor with
/// an unbatched one of its feature shape (a weight, broadcast over the batch).
template <class A, class B>
struct checked_operands {
  static constexpr bool one_dtype = std::is_same_v<typename A::dtype, typename B::dtype>;
  static constexpr bool one_shape = std::is_same_v<typename A::shape_type, typename B::shape_type> ||
                                    broadcasts_over_batch<A, B>::value || broadcasts_over_batch<B, A>::value;
  static_assert(one_dtype,
                "Tensor arithmetic needs operands of one dtype. Inside a layer, make constants in its compute dtype "
                "(ctx.constant_like(...), ctx.random_normal_like(...)) or convert explicitly with tensor_cast<T>(x).");
  static_assert(one_shape,
                "Tensor arithmetic needs operands of one shape, or a batched tensor and an unbatched one of its "
                "feature shape (broadcast over the batch).");
  static constexpr bool valid = one_dtype && one_shape;
};

template <class Op, class A, class B>
auto elementwise(const A& a, const B& b, Op op, const char* name) {
  if constexpr (broadcasts_over_batch<B, A>::value) {
    return elementwise(b, a, [op](auto x, auto y) { return op(y, x); }, name);
  } else {
    if (!broadcasts_over_batch<A, B>::value && a.size() != b.size())
      throw std::invalid_argument(std::string("Tensor ") + name + ": batch sizes differ (" +
                                  std::to_string(a.batch()) + " and " + std::to_string(b.batch()) + ").");
    value_buffer<typename A::dtype> values(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) values[i] = op(a[i], b[i % b.size()]);
    return A(std::move(values));
  }
}

/// Element-wise arithmetic once its operands are checked (before any other part of it compiles,
/// so that a misuse is reported first, and only once).
template <class Op, class A, class B>
auto arithmetic(const A& a, const B& b, Op op, const char* name) {
  if constexpr (checked_operands<A, B>::valid) return elementwise(a, b, op, name);
  else return A(a);  // reported above; a tensor, so that the caller's code reports nothing more
}

}  // namespace detail

// Element-wise arithmetic in the tensors' own dtype (each result rounded once).
template <TensorType A, TensorType B>
auto operator+(const A& a, const B& b) {
  return detail::arithmetic(a, b, [](auto x, auto y) { return x + y; }, "+");
}
template <TensorType A, TensorType B>
auto operator-(const A& a, const B& b) {
  return detail::arithmetic(a, b, [](auto x, auto y) { return x - y; }, "-");
}
template <TensorType A, TensorType B>
auto operator*(const A& a, const B& b) {
  return detail::arithmetic(a, b, [](auto x, auto y) { return x * y; }, "*");
}

template <class T, std::size_t... E>
std::ostream& operator<<(std::ostream& out, const Tensor<T, E...>& t) {
  out << "Tensor<" << dtype_name_v<T> << ", [";
  for (std::size_t i = 0; i < t.rank; ++i) out << (i ? ", " : "") << t.extent(i);
  out << "]>";
  return out;
}

}  // namespace mixprec
