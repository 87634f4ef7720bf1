// Seed 000 (tf.keras.mixed_precision.experimental.Policy), "How to use mixed precision in a
// Keras model" and "How to use float64 in a Keras model", in C++. Each model twice: as a type
// the compiler checks, and built at run time from strings as Keras does.
#include <iostream>

#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>
#include <mixprec/runtime.hpp>

using namespace mixprec;

int main() {
  Tensor<float, dynamic, 100> x(2);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * static_cast<float>(i % 37);

  // >>> set_policy('mixed_float16')
  // >>> model = Sequential([Input((100,)), Dense(10), Dense(10), Activation('softmax', dtype='float32')])
  // The model's first argument plays the global policy; the softmax keeps float32.
  Sequential<policies::mixed_float16, Input<100>, Dense<10>, Dense<10>,
             Activation<activations::softmax, policies::float32>>
      global_policy_model;
  const Tensor<float, dynamic, 10> y = global_policy_model(x);  // the type says: float32 out
  std::cout << "global policy model:\n" << global_policy_model << "  output " << y << "\n\n";

  {  // The same at run time: set_dtype_policy, then layers without a dtype take it.
    policy_scope scope("mixed_float16");
    RuntimeModel model({100}, {layer_configs::dense(10), layer_configs::dense(10),
                               layer_configs::activation("softmax", "float32")});
    std::cout << model << "  output dtype " << model(x).dtype() << "\n\n";
  }

  // >>> policy = Policy('mixed_float16')
  // >>> model = Sequential([Input((100,)), Dense(10, dtype=policy), Dense(10, dtype=policy),
  // ...                     Activation('softmax', dtype='float32')])
  using policy = policies::mixed_float16;
  Sequential<policies::float32, Input<100>, Dense<10, policy>, Dense<10, policy>,
             Activation<activations::softmax, policies::float32>>
      per_layer_model;
  std::cout << "per-layer policies:\n" << per_layer_model << "  output " << per_layer_model(x) << "\n\n";

  // >>> set_policy('float64'); model = Sequential([Input((100,)), Dense(10), Dense(10), Activation('softmax')])
  Sequential<policies::float64, Input<100>, Dense<10>, Dense<10>, Activation<activations::softmax>> float64_model;
  const Tensor<double, dynamic, 10> z = float64_model(x);
  std::cout << "float64 model:\n" << float64_model << "  output " << z << "\n";
  return 0;
}
