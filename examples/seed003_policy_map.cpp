// Seed 003 (keras.dtype_policies), DTypePolicyMap and the quantized policies, in C++:
// >>> dtype_policy_map = DTypePolicyMap()
// >>> dtype_policy_map["layer/dense_0"] = DTypePolicy("bfloat16")
// >>> dtype_policy_map["layer/dense_1"] = QuantizedDTypePolicy("int8", "bfloat16")
// >>> policy_2 = dtype_policy_map["layer/dense_2"]  # No hit -> keras.config.dtype_policy()
#include <iostream>

#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>
#include <mixprec/runtime.hpp>

using namespace mixprec;

int main() {
  DTypePolicyMap dtype_policy_map;
  dtype_policy_map.set("layer/dense_0", DTypePolicy("bfloat16"));
  dtype_policy_map.set("layer/dense_1", QuantizedDTypePolicy("int8", "bfloat16"));
  const auto policy_0 = dtype_policy_map["layer/dense_0"];
  const auto policy_1 = dtype_policy_map["layer/dense_1"];
  const auto policy_2 = dtype_policy_map["layer/dense_2"];  // no hit
  if (policy_0 != DTypePolicy("bfloat16") || policy_1 != QuantizedDTypePolicy("int8", "bfloat16") ||
      policy_2 != dtype_policy())
    return 1;
  std::cout << dtype_policy_map << '\n' << policy_0 << ' ' << policy_1 << ' ' << policy_2 << '\n';
  std::cout << "config: " << dtype_policy_map.get_config().dump() << "\n\n";

  // A map keyed by layer path drives a runtime model; regexes cover families of layers.
  DTypePolicyMap policies(DTypePolicy("float32"));
  policies.set("mlp/hidden_.*", "mixed_bfloat16");
  policies.set("mlp/logits", "float32");
  RuntimeModel model({16}, {layer_configs::dense(32, "relu", nullptr, "hidden_0"),
                            layer_configs::dense(32, "relu", nullptr, "hidden_1"),
                            layer_configs::dense(4, "softmax", nullptr, "logits")},
                     "mlp", policies);
  std::cout << model;

  // set_dtype_policy accepts quantized names; QuantizedFloat8DTypePolicy carries its amax history.
  set_dtype_policy("float8_from_mixed_bfloat16");
  std::cout << "global: " << dtype_policy() << ", amax_history_length " << *dtype_policy().amax_history_length() << '\n';
  set_dtype_policy("float32");
  return 0;
}
