// The two networks the model benchmarks share (bench_models: forward passes; bench_training and
// bench_training_memory: training steps), defined once: an MLP 784-1024-1024-10 at batch 256 and
// a small CNN at batch 64. Each comes with and without a final float32 Softmax: inference ends
// in probabilities, training takes logits (SparseCategoricalCrossentropy(from_logits=true), as
// PyTorch's CrossEntropyLoss). benchmarks/torch_models.py and torch_training.py mirror them.
#pragma once

#include <cstddef>

#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>

namespace bench {

inline constexpr std::size_t mlp_batch = 256;
inline constexpr std::size_t cnn_batch = 64;

/// The MLP's layers, then Tail (nothing, or the final Softmax).
template <class P, class... Tail>
using mlp_network = mixprec::Sequential<P, mixprec::Input<784>, mixprec::Dense<1024, mixprec::activations::relu>,
                                        mixprec::Dense<1024, mixprec::activations::relu>, mixprec::Dense<10>, Tail...>;
/// The CNN: Conv2D(32, 3x3, relu) MaxPool(2) Conv2D(64, 3x3, relu) MaxPool(2) Flatten Dense(128,
/// relu) Dense(10), then Tail.
template <class P, class... Tail>
using cnn_network =
    mixprec::Sequential<P, mixprec::Input<28, 28, 1>, mixprec::Conv2D<32, 3, 3, mixprec::activations::relu>,
                        mixprec::MaxPooling2D<2>, mixprec::Conv2D<64, 3, 3, mixprec::activations::relu>,
                        mixprec::MaxPooling2D<2>, mixprec::Flatten<>, mixprec::Dense<128, mixprec::activations::relu>,
                        mixprec::Dense<10>, Tail...>;

/// Inference: ending in probabilities.
template <class P>
using mlp = mlp_network<P, mixprec::Softmax<mixprec::policies::float32>>;
template <class P>
using cnn = cnn_network<P, mixprec::Softmax<mixprec::policies::float32>>;
/// Training: ending in logits.
template <class P>
using mlp_logits = mlp_network<P>;
template <class P>
using cnn_logits = cnn_network<P>;

using mlp_input = mixprec::Tensor<float, mixprec::dynamic, 784>;
using cnn_input = mixprec::Tensor<float, mixprec::dynamic, 28, 28, 1>;

/// GEMM FLOPs (2 m n k) of one forward pass, layer by layer.
inline constexpr double mlp_layer_flops[] = {2.0 * mlp_batch * 784 * 1024, 2.0 * mlp_batch * 1024 * 1024,
                                             2.0 * mlp_batch * 1024 * 10};
// conv1 26x26x32 (k = 9), conv2 11x11x64 (k = 288), dense 1600x128, 128x10
inline constexpr double cnn_layer_flops[] = {2.0 * cnn_batch * 26 * 26 * 32 * 9, 2.0 * cnn_batch * 11 * 11 * 64 * 288,
                                             2.0 * cnn_batch * 1600 * 128, 2.0 * cnn_batch * 128 * 10};

template <std::size_t N>
constexpr double forward_flops(const double (&layers)[N]) {
  double total = 0;
  for (double f : layers) total += f;
  return total;
}
/// A training step's GEMM FLOPs: the forward GEMMs, then per layer the weight gradient's GEMM
/// (same size) and the input gradient's (same size), except the first layer's input gradient,
/// which nobody needs (neither mixprec nor PyTorch computes it). About 3x the forward pass; the
/// loss, the elementwise work and the optimizer's update are not counted.
template <std::size_t N>
constexpr double training_step_flops(const double (&layers)[N]) {
  return 3.0 * forward_flops(layers) - layers[0];
}

inline constexpr double mlp_flops = forward_flops(mlp_layer_flops);
inline constexpr double cnn_flops = forward_flops(cnn_layer_flops);
inline constexpr double mlp_step_flops = training_step_flops(mlp_layer_flops);
inline constexpr double cnn_step_flops = training_step_flops(cnn_layer_flops);

/// The benchmarks' input: i % 255 / 255 in every element (the same in every program).
template <class X>
X network_input(std::size_t batch) {
  X x(batch);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 255) / 255.0f;
  return x;
}

}  // namespace bench
