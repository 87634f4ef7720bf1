// Seed 000, "How a layer uses its policy's compute dtype / variable dtype" and "How to write a
// layer that supports mixed precision and float64", in C++: input casting, every argument cast
// (no "Bug! b will not be casted"), autocast=False, experimental_autocast=False, MyDense with a
// random term, and the deprecated infer policy.
#include <iostream>
#include <utility>

#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>

using namespace mixprec;

// >>> class MyLayer(Layer):
// ...   def call(self, a, b): return a + 1., b + 1.
// In Keras (tf 2.x) only `a` was cast. Here every floating argument is.
template <class Policy>
struct MyLayer : Layer<MyLayer<Policy>, Policy> {
  template <class A, class B>
  auto call(const call_context<Policy>& context, const A& a, const B& b) {
    return std::pair{a + context.constant_like(a, 1.0), b + context.constant_like(b, 1.0)};
  }
};

// >>> class NonAutoCastingLayer(Layer): kwargs['autocast'] = False ...
template <class Policy>
struct NonAutoCastingLayer : Layer<NonAutoCastingLayer<Policy>, Policy, /*Autocast=*/false> {
  template <class X>
  X call(const call_context<Policy>&, const X& x) {
    return x;
  }
};

// >>> class MyLayer(Layer):
// ...   def build(self, input_shape):
// ...     self.x = self.add_weight('x')
// ...     self.y = self.add_weight('y', experimental_autocast=False)
template <class Policy>
struct TwoWeights : Layer<TwoWeights<Policy>, Policy> {
  using base = Layer<TwoWeights<Policy>, Policy>;
  typename base::template weight_t<1> x;           // AutoCastVariable: float16 inside call
  typename base::template plain_weight_t<1> y;     // stays float32 inside call
  template <class In>
  void build(const In&) {
    x = this->template add_weight<1>("x", initializers::ones{});
    y = this->template add_weight<1>("y", initializers::ones{}, no_autocast{});
  }
  template <class In>
  auto call(const call_context<Policy>& context, const In& in) {
    std::cout << "  inside call: x reads as " << dtype_name_v<typename std::remove_cvref_t<decltype(context.read(x))>::dtype>
              << ", y reads as " << dtype_name_v<typename std::remove_cvref_t<decltype(context.read(y))>::dtype> << '\n';
    return in;
  }
  template <class Self>
  static auto weights_of(Self& self) {
    return std::tie(self.x, self.y);
  }
};

// >>> class MyDense(Layer):
// ...   def build(self, input_shape): self.kernel = self.add_weight('kernel', (input_shape[-1], 10))
// ...   def call(self, inputs):
// ...     rand = tf.random.normal(shape=inputs.shape, dtype=inputs.dtype)
// ...     return tf.matmul(inputs, self.kernel) + rand
// Making `rand` in float32 instead is a compile error here (tests/compile_fail/constant_in_wrong_dtype.cpp).
template <class Policy>
struct MyDense : Layer<MyDense<Policy>, Policy> {
  using base = Layer<MyDense<Policy>, Policy>;
  using C = typename base::compute_dtype;
  typename base::template weight_t<dynamic, 10> kernel;
  template <class X>
  void build(const X&) {
    kernel = this->template add_weight<dynamic, 10>("kernel", {X::row_size, 10});
  }
  template <class X>
  auto call(const call_context<Policy>& context, const X& inputs) {
    Tensor<C, dynamic, 10> product(inputs.batch());
    detail::dense_forward<C>(inputs.values(), inputs.batch(), X::row_size, context.read(kernel).values(), {}, 10,
                             kernels::activation::linear, product.values());
    const auto rand = context.random_normal_like(product);  // in the compute dtype
    return product + rand;
  }
  template <class Self>
  static auto weights_of(Self& self) {
    return std::tie(self.kernel);
  }
};

int main() {
  // >>> x = tf.ones((4, 4, 4, 4), dtype='float64'); layer = Conv2D(filters=4, kernel_size=2); layer(x).dtype
  Tensor<double, dynamic, 4, 4, 4> x(4);
  for (auto& v : x.values()) v = 1.0;
  Conv2D<4, 2, 2> conv;  // float32 policy
  const Tensor<float, dynamic, 3, 3, 4> y = conv(x);
  std::cout << "Conv2D casts its float64 input: " << y << "\n";

  MyLayer<policies::float64> my_layer;
  const Tensor<float, dynamic, 1> a({1.0f}), b({1.0f});
  const auto [xa, yb] = my_layer(a, b);
  std::cout << "MyLayer(dtype=float64)(a, b): " << xa << " and " << yb << " (both cast)\n";

  NonAutoCastingLayer<policies::float64> non_autocasting;
  Tensor<float, dynamic, 4, 4, 4> ones(4);
  std::cout << "NonAutoCastingLayer(dtype=float64) keeps " << non_autocasting(ones) << "\n";

  TwoWeights<policies::mixed_float16> two_weights;
  two_weights(ones);
  std::cout << "  outside call: x is " << dtype_name_v<decltype(two_weights.x)::true_dtype> << " (true_dtype), y is "
            << dtype_name_v<decltype(two_weights.y)::true_dtype> << "\n";

  MyDense<policies::mixed_float16> my_dense;
  Tensor<double, dynamic, 10> random_input(10);
  for (std::size_t i = 0; i < random_input.size(); ++i) random_input[i] = static_cast<double>(i % 10) / 10.0;
  const Tensor<float16, dynamic, 10> out = my_dense(random_input);
  std::cout << "MyDense(dtype=mixed_float16): " << out << "\n";

  // The deprecated "infer" policy: the dtype comes from the input.
  Sequential<InferPolicy, InputOf<double, 10>, Dense<4>, Dense<2>> inferred;
  std::cout << "infer policy with float64 inputs: " << inferred(random_input) << "\n";
  return 0;
}
