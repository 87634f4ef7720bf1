// Layer weights.
//
// AutoCastVariable<V, C, E...>: Keras' AutoCastVariable. Stored in the variable dtype V (its
//   true_dtype); inside a layer's call it reads in the compute dtype C (its dtype) through the
//   call context; outside, value() is the true value. Assignments convert to V and keep V's
//   precision: assigning 1 + eps16/2 under a float16 compute dtype stores it exactly in float32.
// Variable<T, E...>: a weight read in the dtype it is stored in (AutoCastVariable<T, T, E...>);
//   reading it is a plain reference: no copy, no conversion.
//
// No compute-dtype copy is kept: as in Keras, a read in C rounds the true value then
// (compute_value() returns a new tensor), and the built-in layers' products round a float32
// weight to a 16-bit C as the GEMM packs it, which gives the same bits with no copy at all. A
// mixed-precision model holds its weights once, in float32.
//
// Every change of a variable's values gives it a new version (version(), unique in the process),
// so that what is derived from them can be kept while they stay the same: Dense's and Conv2D's
// kernels packed for the GEMMs of inference calls.
#pragma once

#include <cstddef>
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <mixprec/core/cast.hpp>
#include <mixprec/core/dtype.hpp>
#include <mixprec/layers/tensor.hpp>
#include <mixprec/runtime/detail/message_text.hpp>

namespace mixprec {

namespace detail {
/// A version no variable has had before in this process (never 0).
inline std::uint64_t new_weight_version() {
  static std::atomic<std::uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

/// What a variable holds besides its values, and what it does with them as a span: compiled once
/// per variable dtype, not once per shape (every weight shape of a program is its own
/// AutoCastVariable class; a test file with dozens of models had 136 of them).
template <class V>
class variable_state {
 public:
  const std::string& name() const { return name_; }
  /// Changes with every change of the values (a copy keeps its original's: the same values).
  std::uint64_t version() const { return version_; }
  const std::vector<std::size_t>& shape() const { return shape_; }
  bool trainable() const { return trainable_; }

  template <class Regularizer>
  void set_regularizer(Regularizer regularizer) {
    regularizer_ = [regularizer](std::span<const V> w) {
      if constexpr (requires { regularizer.index(); })  // regularizers::any
        return std::visit([&](const auto& r) { return r(w); }, regularizer);
      else
        return regularizer(w);
    };
  }

 protected:
  variable_state() = default;
  /// `shape` empty: the tensor's extents. Its product must be the number of values.
  variable_state(std::string name, std::vector<std::size_t> shape, std::span<const std::size_t> extents,
                 std::size_t size, bool trainable)
      : name_(std::move(name)), shape_(std::move(shape)), trainable_(trainable) {
    if (shape_.empty()) shape_.assign(extents.begin(), extents.end());
    std::size_t shape_size = 1;
    for (std::size_t extent : shape_) shape_size *= extent;
    if (shape_size != size)
      throw std::invalid_argument("Variable '" + quote_for_message(name_) + "': a shape of " +
                                  std::to_string(shape_size) + " elements for " + std::to_string(size) + " values.");
  }

  void check_size(std::size_t size, std::size_t held, const char* what) const {
    if (size != held)
      throw std::invalid_argument("Variable '" + quote_for_message(name_) + "': " + what + " with " +
                                  std::to_string(size) + " values, but the variable holds " + std::to_string(held) + ".");
  }
  void changed() { version_ = new_weight_version(); }
  template <class U>
  void assign_converted(std::span<const U> new_values, std::span<V> values) {
    check_size(new_values.size(), values.size(), "assign");
    kernels::convert<U, V>(new_values, values);
    changed();
  }
  /// values += sign * delta, the delta rounded to V first, the sum then rounded to V.
  template <class U>
  void update(std::span<const U> delta, std::span<V> values, int sign) {
    check_size(delta.size(), values.size(), sign > 0 ? "assign_add" : "assign_sub");
    for (std::size_t i = 0; i < values.size(); ++i) {
      const V d = cast<V>(delta[i]);
      values[i] = sign > 0 ? V(values[i] + d) : V(values[i] - d);
    }
    changed();
  }
  void fill(std::span<V> values, double value) {
    std::fill(values.begin(), values.end(), cast<V>(value));
    changed();
  }
  void assign_values(std::span<const V> new_values, std::span<V> values) {
    check_size(new_values.size(), values.size(), "assign");
    std::copy(new_values.begin(), new_values.end(), values.begin());
    changed();
  }
  V regularization_loss(std::span<const V> values) const { return regularizer_ ? regularizer_(values) : cast<V>(0); }

 private:
  std::string name_;
  std::uint64_t version_ = new_weight_version();
  std::vector<std::size_t> shape_;
  bool trainable_ = true;
  std::function<V(std::span<const V>)> regularizer_;
};
}  // namespace detail

template <class V, class C, std::size_t... E>
class AutoCastVariable : public detail::variable_state<V> {
  static_assert(std::is_same_v<V, C> || (FloatingDType<V> && FloatingDType<C>),
                "AutoCastVariable<V, C>: a weight read in another dtype must be floating in both.");
  using state = detail::variable_state<V>;

 public:
  using true_dtype = V;
  /// The dtype a read inside the layer's call gives.
  using dtype = C;
  using value_type = Tensor<V, E...>;
  static constexpr bool casts = !std::is_same_v<V, C>;

  AutoCastVariable() = default;
  /// `shape` is the weight's shape as Keras reports it (by default the tensor's extents; a
  /// Conv2D kernel stored as a matrix reports its 4-D shape). Its product must be the size.
  AutoCastVariable(std::string name, value_type value, std::vector<std::size_t> shape = {}, bool trainable = true)
      : state(std::move(name), std::move(shape), value.extents(), value.size(), trainable), value_(std::move(value)) {}

  std::size_t size() const { return value_.size(); }
  /// The true value, in the variable dtype.
  const value_type& value() const { return value_; }
  /// The value in the compute dtype: what the layer's call reads. The same object as value()
  /// (a reference) when the dtypes are equal; else a tensor rounded from it on every call.
  decltype(auto) compute_value() const {
    if constexpr (casts) return tensor_cast<C>(value_);
    else return (value_);
  }

  /// Converts to the true dtype (one rounding). Sizes must match (batch extent included).
  template <class U>
  void assign(const Tensor<U, E...>& new_value) { state::assign_converted(new_value.values(), value_.values()); }
  /// value += delta, value -= delta: the delta is rounded to the true dtype, then added in it.
  template <class U>
  void assign_add(const Tensor<U, E...>& delta) { state::update(delta.values(), value_.values(), +1); }
  template <class U>
  void assign_sub(const Tensor<U, E...>& delta) { state::update(delta.values(), value_.values(), -1); }
  /// Every element set to `value`, rounded once to the true dtype.
  void fill(double value) { state::fill(value_.values(), value); }
  /// The weight's regularization loss, computed in its true dtype (0 without a regularizer).
  V regularization_loss() const { return state::regularization_loss(value_.values()); }

  /// The true values, for an optimizer to update in place: the values count as changed, so write
  /// through the span before the layer's next call (take it again for a later update).
  std::span<V> values_to_update() {
    state::changed();
    return value_.values();
  }
  /// Replaces every value (a non-trainable weight's update); sizes must match.
  void assign_values(std::span<const V> values) { state::assign_values(values, value_.values()); }

  /// Replaces the value outright (loading weights); the caller has checked the shape.
  void reset(value_type value) {
    value_ = std::move(value);
    state::changed();
  }

 private:
  value_type value_;
};

template <class T, std::size_t... E>
using Variable = AutoCastVariable<T, T, E...>;

/// One variable's values and its gradient, both in the variable dtype V: what an optimizer updates.
template <class V>
struct gradient_and_variable_of {
  std::span<V> gradient;
  std::span<V> variable;
};
using gradient_and_variable =
    std::variant<gradient_and_variable_of<float>, gradient_and_variable_of<bfloat16>, gradient_and_variable_of<float16>,
                 gradient_and_variable_of<double>>;

namespace detail {
template <class T>
struct is_variable : std::false_type {};
template <class V, class C, std::size_t... E>
struct is_variable<AutoCastVariable<V, C, E...>> : std::true_type {};
}  // namespace detail

template <class T>
concept VariableType = detail::is_variable<std::remove_cvref_t<T>>::value;

}  // namespace mixprec
