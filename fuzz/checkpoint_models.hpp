// The compiled models whose checkpoints the checkpoint_file target loads, and whose saved
// checkpoints fuzz_seed_corpora writes as that target's seeds: one keeps every kind of training
// state a checkpoint can hold (Adam with AMSGrad's three slots under a LossScaleOptimizer,
// BatchNormalization's moving statistics, Dropout's generator, float16 weights and float32
// slots), the other the simplest (SGD with momentum in float32, no loss scaling).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/models.hpp>
#include <mixprec/training.hpp>

namespace mixprec::fuzz {

inline RuntimeModel scaled_adam_model() {
  namespace lc = layer_configs;
  nlohmann::json dropout = lc::dropout(0.25, "mixed_float16");
  dropout["config"]["seed"] = 7;  // the same generator state in every process
  RuntimeModel model({4}, {lc::dense(5, "relu", "mixed_float16"), dropout,
                           lc::batch_normalization(0.9, 1e-3, "mixed_float16"), lc::dense(3, "linear", "mixed_float16")},
                     "scaled_adam");
  model.compile(optimizers::LossScaleOptimizer(optimizers::Adam(1e-2, 0.9, 0.999, 1e-7, /*amsgrad=*/true), 1024.0, 3),
                losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  return model;
}

inline RuntimeModel momentum_sgd_model() {
  namespace lc = layer_configs;
  RuntimeModel model({4}, {lc::dense(3, "tanh", "float32"), lc::dense(2, "linear", "float32")}, "momentum_sgd");
  model.compile(optimizers::SGD(0.1, 0.9, /*nesterov=*/true), losses::SparseCategoricalCrossentropy(true));
  return model;
}

/// A batch both models train on: 4 samples of 4 features, labels below 2 (both have >= 2 classes).
inline AnyTensor training_inputs() {
  std::vector<float> x(16);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  return AnyTensor({4, 4}, x);
}
inline AnyTensor training_labels() { return AnyTensor({4}, std::vector<std::int32_t>{0, 1, 1, 0}); }

}  // namespace mixprec::fuzz
