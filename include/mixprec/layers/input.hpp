// Input<Extents...>: a model's input shape (and dtype), as Keras' Input / InputLayer.
//
//   Sequential<policies::mixed_bfloat16, Input<784>, Dense<10>>       // (batch, 784) float32 inputs
//   Sequential<policies::infer, InputOf<double, 28, 28, 1>, ...>       // the infer policy reads the dtype
#pragma once

#include <cstddef>

#include <mixprec/core/dtype.hpp>
#include <mixprec/layers/tensor.hpp>

namespace mixprec {

template <class T, std::size_t... Extents>
struct InputOf {
  static_assert(sizeof...(Extents) > 0, "Input needs a shape: Input<784>, Input<28, 28, 1>.");
  static_assert(((Extents != dynamic && Extents > 0) && ...),
                "Input<Extents...>: the batch is implicit; every extent given is a fixed, positive size.");
  using dtype = T;
  /// The model's input tensor: Tensor<T, dynamic, Extents...>.
  using tensor = Tensor<T, dynamic, Extents...>;
};

/// Keras' default input dtype is float32.
template <std::size_t... Extents>
using Input = InputOf<float, Extents...>;

namespace detail {
template <class T>
struct is_input : std::false_type {};
template <class T, std::size_t... E>
struct is_input<InputOf<T, E...>> : std::true_type {};
}  // namespace detail

template <class T>
concept InputSpec = detail::is_input<T>::value;

}  // namespace mixprec
