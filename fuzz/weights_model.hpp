// The small fixed model whose weights the weights_file target loads, and whose saved files
// fuzz_seed_corpora writes as that target's seeds: every weight kind a file can hold (Conv2D
// kernel and bias, BatchNormalization's four, an int8 kernel with its scale, float8 scales and
// amax histories) in several dtypes.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include <mixprec/models.hpp>

namespace mixprec::fuzz {

/// The float layers take `float_policy` ("mixed_bfloat16", "float64", ...): the same weights
/// (paths and shapes) in other dtypes, which a load converts.
inline RuntimeModel weights_model(std::string_view float_policy = "mixed_bfloat16") {
  const nlohmann::json dtype = float_policy;
  return RuntimeModel({6, 6, 1},
                      {layer_configs::conv2d(2, 3, 3, "relu", "valid", 1, 1, dtype),
                       layer_configs::batch_normalization(0.99, 1e-3, dtype),
                       layer_configs::max_pooling2d(2, 2, "valid", dtype),
                       layer_configs::flatten(dtype),
                       layer_configs::dense(4, "relu", "int8_from_float32"),
                       layer_configs::dense(3, "linear", "float8_from_mixed_bfloat16"),
                       layer_configs::dense(2, "softmax", dtype)},
                      "weights_model");
}

}  // namespace mixprec::fuzz
