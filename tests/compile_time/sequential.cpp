// Compile-time probe: a 4-layer Sequential model, called once.
#include <iostream>

#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>

int main() {
  using namespace mixprec;
  Tensor<float, dynamic, 100> x(2);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * static_cast<float>(i % 37);
  Sequential<policies::mixed_float16, Input<100>, Dense<10>, Dense<10>, Activation<activations::softmax, policies::float32>>
      model;
  std::cout << model(x) << "\n";
  return 0;
}
