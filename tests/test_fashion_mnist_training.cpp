// Training on real data: the demo's MLP on a subset of Fashion-MNIST (Debian's
// dataset-fashion-mnist) under mixed_float16 with dynamic loss scaling, and in float8 (delayed
// scaling), reaches the accuracy of float32 with the same seed, on the whole test set; the
// float32 model quantized to int8 after training keeps it (the README has the full runs).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string_view>
#include <type_traits>
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

struct trained {
  double accuracy;
  double skipped;
  double int8_accuracy;  // after model.quantize("int8") (float32 and bfloat16 compute only)
  std::size_t float_bytes, int8_bytes;
};

template <class Model>
std::size_t weight_bytes(Model& model) {
  std::size_t bytes = 0;
  for (const auto& w : model.weights()) bytes += w.bytes.size();
  return bytes;
}

template <class P>
trained train(const datasets::fashion_mnist::TrainTest& data, bool loss_scaling, std::string_view quantize_before = {}) {
  mlp<P> model(Dense<512, activations::relu>("hidden_1"), Dropout<>(0.2, "dropout", 1), Dense<256, activations::relu>("hidden_2"),
               Dense<10>("logits"));
  if (!quantize_before.empty()) model.quantize(quantize_before);
  model.compile(optimizers::Adam(schedules::CosineDecay(1e-3, epochs * subset / batch)),
                losses::SparseCategoricalCrossentropy(true), {"accuracy"}, {.auto_scale_loss = loss_scaling});
  const auto all = datasets::scaled<784>(data.train.x);
  const Tensor<float, dynamic, 784> x(value_buffer<float>(all.values().begin(), all.values().begin() + subset * 784));
  const History h = model.fit(x, labels(data.train.y, subset), {.batch_size = batch, .epochs = epochs, .verbose = 0, .seed = 2026});
  trained result{};
  result.skipped = h.history.count("skipped") ? h.history.at("skipped").front() + h.history.at("skipped").back() : 0.0;
  const auto test_x = datasets::scaled<784>(data.test.x);
  const auto test_y = labels(data.test.y, data.test.size());
  result.accuracy = model.evaluate(test_x, test_y, {.batch_size = 1000, .verbose = 0}).at("accuracy");
  if (quantize_before.empty() && !std::is_same_v<typename P::compute_dtype, float16>) {
    result.float_bytes = weight_bytes(model);
    model.quantize("int8");
    model.compile(optimizers::SGD(0.0), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
    result.int8_accuracy = model.evaluate(test_x, test_y, {.batch_size = 1000, .verbose = 0}).at("accuracy");
    result.int8_bytes = weight_bytes(model);
  }
  return result;
}

}  // namespace

TEST_CASE("mixed_float16 with loss scaling and float8 train an MLP on Fashion-MNIST as well as float32; int8 keeps it") {
  if (!std::filesystem::exists(datasets::fashion_mnist::default_directory)) {
    MESSAGE("skipped: Fashion-MNIST is not installed (sudo apt-get install dataset-fashion-mnist)");
    return;
  }
  const auto data = datasets::fashion_mnist::load_data();
  const trained f32 = train<policies::float32>(data, true);
  const trained f16 = train<policies::mixed_float16>(data, true);
  const trained f8 = train<policies::float32>(data, true, "float8");
  MESSAGE("test accuracy after " << epochs << " epochs on " << subset << " images: float32 " << f32.accuracy
                                 << ", mixed_float16 " << f16.accuracy << " (" << f16.skipped << " skipped steps), float8 "
                                 << f8.accuracy << "; float32 quantized to int8 " << f32.int8_accuracy << " (weights "
                                 << f32.float_bytes << " -> " << f32.int8_bytes << " bytes)");
  CHECK(f32.accuracy > 0.85);
  CHECK(std::abs(f16.accuracy - f32.accuracy) <= 0.005);
  CHECK(std::abs(f8.accuracy - f32.accuracy) <= 0.01);
  CHECK(std::abs(f32.int8_accuracy - f32.accuracy) <= 0.005);
  CHECK(f32.int8_bytes * 10 < f32.float_bytes * 3);  // the kernels take a quarter; biases and scales stay float32
}
