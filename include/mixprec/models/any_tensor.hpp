// AnyTensor: a tensor whose dtype and shape are known at run time, what the runtime model
// passes between layers. Each layer converts it once to its compute dtype; there is no
// per-element dtype switch anywhere. It also holds int32 / int64 class ids (the labels of a
// sparse loss), which are never converted to floating values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <mixprec/core/dtype.hpp>
#include <mixprec/core/limits.hpp>
#include <mixprec/kernels/convert.hpp>
#include <mixprec/layers/tensor.hpp>

namespace mixprec {

namespace detail {
/// Extents as Python prints a shape tuple, "(2, 3)", "(2,)", with a dynamic extent as "batch".
inline std::string extents_text(std::span<const std::size_t> extents) {
  std::string text = "(";
  for (std::size_t i = 0; i < extents.size(); ++i)
    text += (i ? ", " : "") + (extents[i] == dynamic ? std::string("batch") : std::to_string(extents[i]));
  return text + (extents.size() == 1 ? ",)" : ")");
}
}  // namespace detail

class AnyTensor {
 public:
  using storage = std::variant<value_buffer<float16>, value_buffer<bfloat16>, value_buffer<float>, value_buffer<double>,
                               value_buffer<std::int32_t>, value_buffer<std::int64_t>>;

  AnyTensor() : values_(value_buffer<float>{}) {}
  /// extents include the batch: {batch, 784}.
  template <class T>
  AnyTensor(std::vector<std::size_t> extents, value_buffer<T> values)
      : extents_(std::move(extents)), values_(std::move(values)) {
    const std::size_t expected = detail::checked_product(extents_, "AnyTensor");
    if (expected != size())
      throw std::invalid_argument("AnyTensor: " + std::to_string(size()) + " values for a shape of " +
                                  std::to_string(expected) + " elements.");
  }
  template <class T>
  AnyTensor(std::vector<std::size_t> extents, const std::vector<T>& values)
      : AnyTensor(std::move(extents), value_buffer<T>(values.begin(), values.end())) {}
  /// From a compile-time tensor.
  template <class T, std::size_t... E>
  explicit AnyTensor(const Tensor<T, E...>& tensor)
      : AnyTensor(extents_of(tensor), value_buffer<T>(tensor.values().begin(), tensor.values().end())) {}

  const std::vector<std::size_t>& extents() const { return extents_; }
  std::size_t batch() const { return extents_.empty() ? 1 : extents_[0]; }
  std::size_t size() const {
    return std::visit([](const auto& v) { return v.size(); }, values_);
  }
  std::string_view dtype() const {
    return std::visit([](const auto& v) { return dtype_name_v<typename std::remove_cvref_t<decltype(v)>::value_type>; },
                      values_);
  }
  template <class T>
  bool holds() const {
    return std::holds_alternative<value_buffer<T>>(values_);
  }
  /// The values, when the dtype is T (std::invalid_argument otherwise).
  template <class T>
  std::span<const T> values() const {
    if (!holds<T>())
      throw std::invalid_argument("AnyTensor holds " + std::string(dtype()) + ", not " + std::string(dtype_name_v<T>) + ".");
    return std::get<value_buffer<T>>(values_);
  }
  /// f(std::span<const T>) with the values in their own dtype.
  template <class F>
  decltype(auto) visit(F&& f) const {
    return std::visit([&](const auto& v) -> decltype(auto) {
      return f(std::span<const typename std::remove_cvref_t<decltype(v)>::value_type>(v));
    }, values_);
  }
  /// Whether it holds floating values (not class ids).
  bool floating() const { return !holds<std::int32_t>() && !holds<std::int64_t>(); }
  /// The values converted to the floating dtype T (correctly rounded; a plain copy when the
  /// dtype is T, class ids included), in a value_buffer<T> (a std::vector with an allocator that
  /// skips zero-filling). Class ids convert to nothing else, floats not to class ids:
  /// std::invalid_argument.
  template <class T>
  value_buffer<T> values_as() const {
    return std::visit(
        [&](const auto& v) -> value_buffer<T> {
          using From = typename std::remove_cvref_t<decltype(v)>::value_type;
          if constexpr (std::is_same_v<From, T>) {
            return value_buffer<T>(v.begin(), v.end());
          } else if constexpr (std::is_integral_v<From>) {
            throw std::invalid_argument("AnyTensor holds " + std::string(dtype()) + " class ids, not " +
                                        (std::is_integral_v<T> ? std::string(dtype_name_v<T>) + " ones."
                                                               : std::string("floating values.")));
          } else if constexpr (std::is_integral_v<T>) {
            throw std::invalid_argument("AnyTensor holds " + std::string(dtype()) + " values, not " +
                                        std::string(dtype_name_v<T>) + " class ids.");
          } else {
            value_buffer<T> out(v.size());
            kernels::convert<From, T>(std::span<const From>(v), std::span(out));
            return out;
          }
        },
        values_);
  }
  /// As a compile-time tensor; the shape must match (batch aside), the dtype is converted.
  template <class T, std::size_t... E>
  Tensor<T, E...> to_tensor() const {
    const auto expected = Tensor<T, E...>::shape_type::extents;
    bool same = extents_.size() == expected.size();
    for (std::size_t i = 0; same && i < expected.size(); ++i) same = expected[i] == dynamic || expected[i] == extents_[i];
    if (!same)
      throw std::invalid_argument("AnyTensor::to_tensor: the AnyTensor's shape " + detail::extents_text(extents_) +
                                  " is not the tensor's " + detail::extents_text(expected) + ".");
    return Tensor<T, E...>(values_as<T>());
  }

 private:
  template <class T, std::size_t... E>
  static std::vector<std::size_t> extents_of(const Tensor<T, E...>& tensor) {
    const auto extents = tensor.extents();
    return {extents.begin(), extents.end()};
  }

  std::vector<std::size_t> extents_;
  storage values_;
};

}  // namespace mixprec
