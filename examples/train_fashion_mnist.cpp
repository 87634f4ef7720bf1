// The demo: trains a classifier on Fashion-MNIST (Debian's dataset-fashion-mnist) in C++ the way
// seed 000 describes a float16 model in Keras: a mixed_float16 policy, compile() (which wraps
// the optimizer in a LossScaleOptimizer with a dynamic loss scale), fit() with Keras 3's progress
// bar, evaluate() on the test images; then the loss scale's history.
//
//   train_fashion_mnist [--model cnn|mlp] [--policy mixed_float16|mixed_bfloat16|float32]
//                       [--epochs 5] [--batch-size 64] [--limit N] [--data DIR]
//                       [--no-loss-scaling] [--csv PREFIX] [--quantize int8|float8]
//
// --quantize int8 quantizes the trained model's Dense layers to int8 (Keras 3's
// model.quantize("int8")) and evaluates it again; --quantize float8 trains them in float8 with
// delayed scaling (model.quantize("float8") before training).
// --limit N trains on the first N training images only (a quick run); --no-loss-scaling compiles
// with auto_scale_loss = false; --csv PREFIX writes PREFIX.epochs.csv and PREFIX.steps.csv
// (CSVLogger) for scripts/plot_history.py.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <mixprec/datasets.hpp>
#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>
#include <mixprec/training.hpp>

#include "fashion_mnist_models.hpp"

using namespace mixprec;

namespace {

struct options {
  std::string model = "cnn", policy = "mixed_float16";
  std::size_t epochs = 5, batch_size = 64;
  std::optional<std::size_t> limit;  // all the training images when not given
  std::string data = datasets::fashion_mnist::default_directory;
  bool loss_scaling = true;
  std::string csv, quantize;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--no-loss-scaling") {
      o.loss_scaling = false;
      continue;
    }
    constexpr std::string_view with_value[] = {"--model", "--policy", "--epochs", "--batch-size", "--limit",
                                               "--data", "--csv", "--quantize"};
    if (std::find(std::begin(with_value), std::end(with_value), flag) == std::end(with_value)) {
      std::string known;
      for (const std::string_view name : with_value) known += std::string(name) + ", ";
      throw std::invalid_argument("unknown option " + std::string(flag) + "; known: " + known + "--no-loss-scaling");
    }
    if (i + 1 >= argc) throw std::invalid_argument("missing a value after " + std::string(flag));
    const std::string value = argv[++i];
    // Digits only (std::stoull would take " -5" as 2^64 - 5), from 1 to `most`.
    const auto number = [&](std::size_t most = std::numeric_limits<std::size_t>::max()) {
      std::size_t n = 0;
      const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), n);
      const bool digits = std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (!digits || error != std::errc() || end != value.data() + value.size() || n == 0 || n > most)
        throw std::invalid_argument(std::string(flag) + " must be an integer from 1 to " + std::to_string(most) + "; got '" +
                                    value + "'");
      return n;
    };
    if (value.empty()) throw std::invalid_argument(std::string(flag) + " needs a value; got an empty one");
    if (flag == "--model") o.model = value;
    else if (flag == "--policy") o.policy = value;
    else if (flag == "--epochs") o.epochs = number(std::numeric_limits<int>::max());  // fit() counts epochs in an int
    else if (flag == "--batch-size") o.batch_size = number();
    else if (flag == "--limit") o.limit = number();
    else if (flag == "--data") o.data = value;
    else if (flag == "--csv") o.csv = value;
    else o.quantize = value;  // --quantize, the last known flag
  }
  if (o.model != "cnn" && o.model != "mlp") throw std::invalid_argument("--model must be cnn or mlp; got " + o.model);
  if (o.policy != "mixed_float16" && o.policy != "mixed_bfloat16" && o.policy != "float32")
    throw std::invalid_argument("--policy must be mixed_float16, mixed_bfloat16 or float32; got " + o.policy);
  if (!o.quantize.empty() && o.quantize != "int8" && o.quantize != "float8")
    throw std::invalid_argument("--quantize must be int8 or float8; got " + o.quantize);
  if (o.quantize == "int8" && o.policy == "mixed_float16")
    throw std::invalid_argument("--quantize int8 needs --policy float32 or mixed_bfloat16 (as Keras, mixprec rejects int8 "
                                "with float16 compute)");
  return o;
}

using fashion_mnist_demo::make_cnn;
using fashion_mnist_demo::make_mlp;

/// A callback of our own: the steps at which the loss scale changed, and the skipped steps.
class LossScaleHistory : public callbacks::Callback {
 public:
  void on_train_step_end(int /*epoch*/, int /*batch*/, const Logs& logs) override {
    const auto scale = logs.find("loss_scale");
    if (scale == logs.end()) return;
    ++step_;
    if (logs.at("skipped") != 0.0) ++skipped_;
    if (changes_.empty() || changes_.back().second != scale->second) changes_.emplace_back(step_, scale->second);
  }
  void print() const {
    if (changes_.empty()) {
      std::printf("No loss scaling (the policy does not compute in float16, or --no-loss-scaling).\n");
      return;
    }
    std::printf("Loss scale: %lld of %lld steps skipped; the scale each step used, from the step it took effect:",
                skipped_, step_);
    for (const auto& [step, scale] : changes_) std::printf(" %lld:%.0f", step, scale);
    std::printf("\n");
  }

 private:
  long long step_ = 0, skipped_ = 0;
  std::vector<std::pair<long long, double>> changes_;
};

template <class Model, class X>
void train(const options& o, Model model, const X& x, const X& x_test, const Tensor<std::int32_t, dynamic>& y,
           const Tensor<std::int32_t, dynamic>& y_test) {
  const auto decay_steps = static_cast<std::int64_t>(o.epochs * fashion_mnist_demo::steps_per_epoch(x.batch(), o.batch_size));
  if (o.quantize == "float8") model.quantize("float8");
  fashion_mnist_demo::compile(model, decay_steps, o.loss_scaling);
  std::printf("Fashion-MNIST: %zu training and %zu test images; %s under %s%s%s; Adam(CosineDecay(%g)), batch %zu\n",
              x.batch(), x_test.batch(), o.model.c_str(), o.policy.c_str(), o.quantize == "float8" ? ", Dense in float8" : "",
              model.loss_scale_optimizer() ? " with dynamic loss scaling" : "", fashion_mnist_demo::learning_rate<Model>,
              o.batch_size);
  std::fflush(stdout);

  auto scales = std::make_shared<LossScaleHistory>();
  callbacks::CallbackList extra{scales};
  if (!o.csv.empty())
    extra.push_back(std::make_shared<callbacks::CSVLogger>(o.csv + ".epochs.csv", ",", false, o.csv + ".steps.csv"));
  const auto start = std::chrono::steady_clock::now();
  // The test images as validation data: val_accuracy after each epoch, as Keras' tutorials do.
  model.fit(x, y,
            {.batch_size = o.batch_size, .epochs = static_cast<int>(o.epochs), .callbacks = extra,
             .validation_data = std::pair(x_test, y_test), .seed = 2026});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Logs test = model.evaluate(x_test, y_test, {.batch_size = 1000, .verbose = 0});
  std::printf("Test: loss %.4f, accuracy %.4f (training took %.1f s)\n", test.at("loss"), test.at("accuracy"), seconds);
  scales->print();
  if (o.quantize == "int8") {
    const auto bytes = [&] {
      std::size_t total = 0;
      for (const auto& w : model.weights()) total += w.bytes.size();
      return total;
    };
    const std::size_t float_bytes = bytes();
    model.quantize("int8");
    fashion_mnist_demo::compile(model, decay_steps, o.loss_scaling);  // evaluate needs the loss
    const Logs quantized = model.evaluate(x_test, y_test, {.batch_size = 1000, .verbose = 0});
    std::printf("Quantized to int8 (every Dense layer): accuracy %.4f; weights %zu -> %zu bytes\n",
                quantized.at("accuracy"), float_bytes, bytes());
  }
}

template <class P>
void run(const options& o, const datasets::fashion_mnist::TrainTest& data) {
  const auto labels = [](const auto& split, std::size_t n) {
    const auto values = split.y.values();
    return Tensor<std::int32_t, dynamic>(std::vector<std::int32_t>(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(n)));
  };
  if (o.limit && *o.limit > data.train.size())
    throw std::invalid_argument("--limit " + std::to_string(*o.limit) + " exceeds the " +
                                std::to_string(data.train.size()) + " training images");
  const std::size_t n = o.limit.value_or(data.train.size());
  if (n == 0) throw std::invalid_argument("the training data in " + o.data + " holds no image");
  const auto first = [&](const auto& images) {
    using T = std::remove_cvref_t<decltype(images)>;
    const auto values = images.values();
    return T(value_buffer<typename T::dtype>(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(n * T::row_size)));
  };
  if (o.model == "cnn")
    train(o, make_cnn<P>(), first(datasets::scaled<28, 28, 1>(data.train.x)), datasets::scaled<28, 28, 1>(data.test.x),
          labels(data.train, n), labels(data.test, data.test.size()));
  else
    train(o, make_mlp<P>(), first(datasets::scaled<784>(data.train.x)), datasets::scaled<784>(data.test.x),
          labels(data.train, n), labels(data.test, data.test.size()));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const options o = parse(argc, argv);
    const auto data = datasets::fashion_mnist::load_data(o.data);
    if (o.policy == "float32") run<policies::float32>(o, data);
    else if (o.policy == "mixed_bfloat16") run<policies::mixed_bfloat16>(o, data);
    else run<policies::mixed_float16>(o, data);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_fashion_mnist: %s\n", e.what());
    return 1;
  }
}
