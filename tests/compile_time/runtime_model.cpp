// Compile-time probe: a RuntimeModel built from layer configs, called once.
#include <iostream>

#include <mixprec/models.hpp>
#include <mixprec/runtime.hpp>

int main() {
  using namespace mixprec;
  Tensor<float, dynamic, 100> x(2);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * static_cast<float>(i % 37);
  policy_scope scope("mixed_float16");
  RuntimeModel model({100}, {layer_configs::dense(10), layer_configs::dense(10),
                             layer_configs::activation("softmax", "float32")});
  std::cout << model << model(x).dtype() << "\n";
  return 0;
}
