// Seed 001 (keras.DTypePolicy), in C++:
// >>> keras.config.set_dtype_policy("mixed_float16")
// >>> layer1 = keras.layers.Dense(10); layer1.dtype_policy    -> <DTypePolicy "mixed_float16">
// >>> layer2 = keras.layers.Dense(10, dtype="float32"); layer2.dtype_policy  -> <DTypePolicy "float32">
// >>> keras.config.set_dtype_policy('float32')
#include <iostream>

#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>
#include <mixprec/runtime.hpp>

using namespace mixprec;

int main() {
  // At run time: layers built from configs take the global policy unless given one.
  set_dtype_policy("mixed_float16");
  RuntimeModel model({10}, {layer_configs::dense(10, "linear", nullptr, "layer1"),
                            layer_configs::dense(10, "linear", "float32", "layer2")});
  std::cout << "layer1.dtype_policy: " << model.layer("layer1").dtype_policy() << '\n'
            << "layer2.dtype_policy: " << model.layer("layer2").dtype_policy() << '\n';
  set_dtype_policy("float32");

  // At compile time: the model's policy is the global one; a layer's own overrides it.
  using Model = Sequential<policies::mixed_float16, Input<10>, Dense<10>, Dense<10, policies::float32>>;
  std::cout << "compile time: layer1 " << to_dtype_policy<std::tuple_element_t<0, Model::layer_types>::policy>()
            << ", layer2 " << to_dtype_policy<std::tuple_element_t<1, Model::layer_types>::policy>() << '\n';
  // Passing dtype="float32" is the same as passing DTypePolicy("float32"):
  std::cout << std::boolalpha << (dtype_policies::get("float32") == DTypePolicy("float32")) << '\n';
  return 0;
}
