// Training on real data: the demo's MLP on a subset of Fashion-MNIST (Debian's
// dataset-fashion-mnist) under mixed_float16 with dynamic loss scaling reaches the accuracy of
// float32 with the same seed, on the whole test set (the README has the full runs).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <vector>

#include <mixprec/datasets.hpp>
#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>
#include <mixprec/training.hpp>

using namespace mixprec;

namespace {

constexpr std::size_t subset = 20000, epochs = 3, batch = 64;

template <class P>
using mlp = Sequential<P, Input<784>, Dense<512, activations::relu>, Dropout<>, Dense<256, activations::relu>, Dense<10>>;

Tensor<std::int32_t, dynamic> labels(const datasets::fashion_mnist::Labels& y, std::size_t n) {
  return Tensor<std::int32_t, dynamic>(std::vector<std::int32_t>(y.values().begin(), y.values().begin() + static_cast<std::ptrdiff_t>(n)));
}

template <class P>
double test_accuracy(const datasets::fashion_mnist::TrainTest& data, bool loss_scaling, double& skipped) {
  mlp<P> model(Dense<512, activations::relu>("hidden_1"), Dropout<>(0.2, "dropout", 1), Dense<256, activations::relu>("hidden_2"),
               Dense<10>("logits"));
  model.compile(optimizers::Adam(schedules::CosineDecay(1e-3, epochs * subset / batch)),
                losses::SparseCategoricalCrossentropy(true), {"accuracy"}, {.auto_scale_loss = loss_scaling});
  const auto all = datasets::scaled<784>(data.train.x);
  const Tensor<float, dynamic, 784> x(value_buffer<float>(all.values().begin(), all.values().begin() + subset * 784));
  const History h = model.fit(x, labels(data.train.y, subset), {.batch_size = batch, .epochs = epochs, .verbose = 0, .seed = 2026});
  skipped = h.history.count("skipped") ? h.history.at("skipped").front() + h.history.at("skipped").back() : 0.0;
  const Logs test = model.evaluate(datasets::scaled<784>(data.test.x), labels(data.test.y, data.test.size()), {.batch_size = 1000, .verbose = 0});
  return test.at("accuracy");
}

}  // namespace

TEST_CASE("mixed_float16 with loss scaling trains an MLP on Fashion-MNIST as well as float32") {
  if (!std::filesystem::exists(datasets::fashion_mnist::default_directory)) {
    MESSAGE("skipped: Fashion-MNIST is not installed (sudo apt-get install dataset-fashion-mnist)");
    return;
  }
  const auto data = datasets::fashion_mnist::load_data();
  double skipped32 = 0.0, skipped16 = 0.0;
  const double f32 = test_accuracy<policies::float32>(data, true, skipped32);
  const double f16 = test_accuracy<policies::mixed_float16>(data, true, skipped16);
  MESSAGE("test accuracy after " << epochs << " epochs on " << subset << " images: float32 " << f32 << ", mixed_float16 "
                                 << f16 << " (" << skipped16 << " skipped steps)");
  CHECK(f32 > 0.85);
  CHECK(std::abs(f16 - f32) <= 0.005);
}
