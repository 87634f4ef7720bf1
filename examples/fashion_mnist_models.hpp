// The demo's two Fashion-MNIST models and its compile(), shared by examples/train_fashion_mnist.cpp
// and benchmarks/bench_fashion_mnist.cpp (which times one epoch of the same training).
#pragma once

#include <cstddef>
#include <cstdint>

#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>
#include <mixprec/training.hpp>

namespace fashion_mnist_demo {

using namespace mixprec;

/// Conv2D(32, 3x3) MaxPool Conv2D(64, 3x3) MaxPool Flatten Dropout(0.3) Dense(128) Dense(10).
template <class P>
using cnn = Sequential<P, Input<28, 28, 1>, Conv2D<32, 3, 3, activations::relu>, MaxPooling2D<2>,
                       Conv2D<64, 3, 3, activations::relu>, MaxPooling2D<2>, Flatten<>, Dropout<>,
                       Dense<128, activations::relu>, Dense<10>>;
template <class P>
cnn<P> make_cnn() {
  return cnn<P>(Conv2D<32, 3, 3, activations::relu>("conv_1"), MaxPooling2D<2>("pool_1"),
                Conv2D<64, 3, 3, activations::relu>("conv_2"), MaxPooling2D<2>("pool_2"), Flatten<>("flatten"),
                Dropout<>(0.3, "dropout", 1), Dense<128, activations::relu>("hidden"), Dense<10>("logits"));
}

/// 784-512-256-10 with Dropout(0.2).
template <class P>
using mlp = Sequential<P, Input<784>, Dense<512, activations::relu>, Dropout<>, Dense<256, activations::relu>, Dense<10>>;
template <class P>
mlp<P> make_mlp() {
  return mlp<P>(Dense<512, activations::relu>("hidden_1"), Dropout<>(0.2, "dropout", 1),
                Dense<256, activations::relu>("hidden_2"), Dense<10>("logits"));
}

/// The peak learning rate: 2e-3 for the CNN, 1e-3 for the MLP (what reaches 90% and 88% test
/// accuracy in 5 epochs).
template <class Model>
inline constexpr double learning_rate = 1e-3;
template <class P>
inline constexpr double learning_rate<cnn<P>> = 2e-3;

/// The demo's compile(): Adam whose learning rate decays along a cosine from learning_rate over
/// decay_steps (the whole run), sparse categorical crossentropy from logits, accuracy; under a
/// float16 policy compile() adds dynamic loss scaling unless loss_scaling is false.
template <class Model>
void compile(Model& model, std::int64_t decay_steps, bool loss_scaling = true) {
  model.compile(optimizers::Adam(schedules::CosineDecay(learning_rate<Model>, decay_steps)),
                losses::SparseCategoricalCrossentropy(/*from_logits=*/true), {"accuracy"},
                {.auto_scale_loss = loss_scaling});
}

/// Training steps per epoch: the last batch smaller.
inline std::size_t steps_per_epoch(std::size_t rows, std::size_t batch_size) {
  return rows / batch_size + (rows % batch_size != 0);  // no rows + batch_size - 1: it wraps for a huge batch size
}

}  // namespace fashion_mnist_demo
