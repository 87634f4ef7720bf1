// fit / evaluate / predict on both model kinds, the progress bar's text, and the callbacks
// (History, CSVLogger, EarlyStopping, ModelCheckpoint, LearningRateScheduler, the hook order).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>
#include <mixprec/runtime.hpp>
#include <mixprec/training.hpp>

#include "model_weights.hpp"

// This program counts its live heap bytes (heap_counter.hpp replaces operator new and delete), so
// that a test can see what release_step_buffers() frees.
#include "heap_counter.hpp"

using namespace mixprec;
using mixprec::test::copy_weights;
using mixprec::test::weight_bytes;

namespace {

using mlp = Sequential<policies::mixed_bfloat16, Input<6>, Dense<8, activations::relu>, Dropout<>, Dense<3>>;
using X = Tensor<float, dynamic, 6>;
using Y = Tensor<std::int32_t, dynamic>;

/// The class is the index of the largest of the first three features.
struct data {
  X x;
  Y y;
  AnyTensor ax, ay;
};
data make_data(std::size_t rows, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  value_buffer<float> x(rows * 6);
  for (auto& v : x) v = normal(rng);
  std::vector<std::int32_t> y;
  for (std::size_t r = 0; r < rows; ++r) {
    std::int32_t best = 0;
    for (std::int32_t c = 1; c < 3; ++c)
      if (x[r * 6 + static_cast<std::size_t>(c)] > x[r * 6 + static_cast<std::size_t>(best)]) best = c;
    y.push_back(best);
  }
  data d{X(std::move(x)), Y(y), {}, {}};
  d.ax = AnyTensor(d.x);
  d.ay = AnyTensor(d.y);
  return d;
}

/// The rows [first, last) of a typed tensor.
template <class T, std::size_t... E>
Tensor<T, E...> rows_of(const Tensor<T, E...>& t, std::size_t first, std::size_t last) {
  constexpr std::size_t row = Tensor<T, E...>::row_size;
  return Tensor<T, E...>(value_buffer<T>(t.values().begin() + static_cast<std::ptrdiff_t>(first * row),
                                         t.values().begin() + static_cast<std::ptrdiff_t>(last * row)));
}

RuntimeModel runtime_copy(mlp& model) {
  RuntimeModel runtime = RuntimeModel::from_config(model.get_config());
  copy_weights(model, runtime);
  return runtime;
}

/// A clock that advances by 0.25 s at every reading.
ProgressClock ticking_clock() {
  auto t = std::make_shared<double>(0.0);
  return [t] { return *t += 0.25; };
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("mixprec_test_fit_" + name)).string();
}

std::string f4(double v) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.4f", v);
  return text;
}

/// Sets logs[key] at each epoch's end from a script (a stand-in for a monitored quantity).
struct scripted : callbacks::Callback {
  scripted(std::string monitored, std::vector<double> script) : key(std::move(monitored)), values(std::move(script)) {}
  void on_epoch_end(int epoch, Logs& logs) override { logs[key] = values.at(static_cast<std::size_t>(epoch)); }
  std::string key;
  std::vector<double> values;
};

/// Records every weight's bytes at each epoch's end.
struct weight_recorder : callbacks::Callback {
  void on_epoch_end(int, Logs&) override { epochs.push_back(model().get_weights()); }
  std::vector<std::vector<callbacks::WeightValue>> epochs;
};

}  // namespace

TEST_CASE("fit: Sequential and RuntimeModel give the same weights and History") {
  mlp compiled(Dense<8, activations::relu>(), Dropout<>(0.25, "dropout", 7), Dense<3>());
  RuntimeModel runtime = runtime_copy(compiled);
  compiled.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  runtime.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  const data d = make_data(50, 1);
  const History a = compiled.fit(d.x, d.y, {.batch_size = 8, .epochs = 3, .verbose = 0, .validation_split = 0.2, .seed = 42});
  const History b = runtime.fit(d.ax, d.ay, {.batch_size = 8, .epochs = 3, .verbose = 0, .validation_split = 0.2, .seed = 42});
  CHECK(weight_bytes(compiled) == weight_bytes(runtime));
  CHECK(a.history == b.history);
  CHECK(a.epoch == std::vector<int>{0, 1, 2});
  CHECK(a.params() == callbacks::Params{.verbose = 0, .epochs = 3, .steps = 5});  // 40 training rows / 8
  for (const char* key : {"loss", "accuracy", "val_loss", "val_accuracy"}) CHECK(a.history.at(key).size() == 3);
  CHECK(a.history.size() == 4);
  CHECK(a.history.at("loss").back() < a.history.at("loss").front());
}

TEST_CASE("fit without shuffling is a loop of train_on_batch, and the epoch logs are weighted means") {
  mlp model, manual;
  copy_weights(model, manual);
  model.compile(optimizers::SGD(0.1, 0.9), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  manual.compile(optimizers::SGD(0.1, 0.9), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  const data d = make_data(20, 2);
  const History history = model.fit(d.x, d.y, {.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false});
  for (int epoch = 0; epoch < 2; ++epoch) {
    double loss = 0.0, accuracy = 0.0;
    for (std::size_t first = 0; first < 20; first += 8) {
      const std::size_t last = std::min<std::size_t>(first + 8, 20);
      const Logs logs = manual.train_on_batch(rows_of(d.x, first, last), rows_of(d.y, first, last));
      loss += logs.at("loss") * static_cast<double>(last - first);
      accuracy += logs.at("accuracy") * static_cast<double>(last - first);
    }
    CHECK(history.history.at("loss")[static_cast<std::size_t>(epoch)] == loss / 20);
    CHECK(history.history.at("accuracy")[static_cast<std::size_t>(epoch)] == accuracy / 20);
  }
  CHECK(weight_bytes(model) == weight_bytes(manual));

  // One batch per epoch: the epoch's logs are that step's, exactly.
  RuntimeModel runtime = runtime_copy(model), runtime_manual = runtime_copy(model);
  runtime.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy", {"accuracy"});
  runtime_manual.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy", {"accuracy"});
  const History one = runtime.fit(d.ax, d.ay, {.batch_size = 20, .epochs = 1, .verbose = 0, .shuffle = false});
  const Logs step = runtime_manual.train_on_batch(d.ax, d.ay);
  CHECK(one.history.at("loss") == std::vector<double>{step.at("loss")});
  CHECK(one.history.at("accuracy") == std::vector<double>{step.at("accuracy")});
  CHECK(weight_bytes(runtime) == weight_bytes(runtime_manual));
}

namespace {

/// Whether every trained weight's gradient from the last step is still held.
template <class Model>
std::vector<bool> gradients_held(Model& model) {
  std::vector<gradient_and_variable> pairs;
  model.collect_gradients(pairs);
  std::vector<bool> held;
  for (const auto& pair : pairs) std::visit([&](const auto& p) { held.push_back(!p.gradient.empty()); }, pair);
  return held;
}

}  // namespace

TEST_CASE("fit frees the steps' buffers when it returns (or throws); training then goes on to the same bits") {
  mlp fitted(Dense<8, activations::relu>(), Dropout<>(0.25, "dropout", 3), Dense<3>());
  mlp manual(Dense<8, activations::relu>(), Dropout<>(0.25, "dropout", 3), Dense<3>());
  copy_weights(fitted, manual);
  RuntimeModel runtime = runtime_copy(fitted), runtime_manual = runtime_copy(fitted);
  fitted.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true));
  manual.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true));
  runtime.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true));
  runtime_manual.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true));
  const data d = make_data(16, 21);
  const FitOptions<X, Y> options{.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false};
  for (int call = 0; call < 2; ++call) {
    fitted.fit(d.x, d.y, options);
    runtime.fit(d.ax, d.ay, {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
    CHECK(gradients_held(fitted) == std::vector<bool>(4, false));
    CHECK(gradients_held(runtime) == std::vector<bool>(4, false));
    for (std::size_t first = 0; first < 16; first += 8) {
      manual.train_on_batch(rows_of(d.x, first, first + 8), rows_of(d.y, first, first + 8));
      const std::vector<std::size_t> rows{first, first + 1, first + 2, first + 3, first + 4, first + 5, first + 6, first + 7};
      runtime_manual.train_on_batch(detail::take_rows(d.ax, rows), detail::take_rows(d.ay, rows));
    }
    CHECK(gradients_held(manual) == std::vector<bool>(4, true));  // a step keeps them for the next
    CHECK(weight_bytes(fitted) == weight_bytes(manual));
    CHECK(weight_bytes(runtime) == weight_bytes(runtime_manual));
  }
  CHECK(weight_bytes(fitted) == weight_bytes(runtime));

  // A custom loop frees them itself; the next step is the same.
  runtime_manual.release_step_buffers();
  CHECK(gradients_held(runtime_manual) == std::vector<bool>(4, false));
  CHECK(runtime_manual.train_on_batch(d.ax, d.ay) == runtime.train_on_batch(d.ax, d.ay));
  CHECK(weight_bytes(runtime_manual) == weight_bytes(runtime));

  // A fit that a callback ends by throwing frees them too.
  struct thrower : callbacks::Callback {
    void on_train_batch_end(int, const Logs&) override { throw std::runtime_error("stop"); }
  };
  CHECK_THROWS_AS(fitted.fit(d.x, d.y, {.batch_size = 8, .verbose = 0, .callbacks = {std::make_shared<thrower>()}}),
                  std::runtime_error);
  CHECK(gradients_held(fitted) == std::vector<bool>(4, false));
}

TEST_CASE("inference calls pack the kernels once: a second call allocates no packed kernel") {
  // The first call packs each Dense kernel (784 x 256 and 256 x 10 in bfloat16: 393 KiB and more)
  // and keeps it; a second call reuses it, so at its peak it holds no more than its output and
  // its own small buffers (packing again would hold a new packed kernel beside the old one).
  using wide = Sequential<policies::mixed_bfloat16, Input<784>, Dense<256, activations::relu>, Dense<10>>;
  wide model;
  RuntimeModel runtime = RuntimeModel::from_config(model.get_config());
  const Tensor<float, dynamic, 784> x(4);
  constexpr std::int64_t packed_kernel = 784 * 256 * 2;
  const auto second_call_peak = [&](auto& m, const auto& input) {
    const auto first = m(input);
    const std::int64_t before = heap_counter::live_bytes.load();
    heap_counter::peak_bytes.store(before);
    const auto second = m(input);
    return heap_counter::peak_bytes.load() - before;
  };
  CHECK(second_call_peak(model, x) < packed_kernel / 4);
  CHECK(second_call_peak(runtime, AnyTensor(x)) < packed_kernel / 4);
}

TEST_CASE("release_step_buffers frees at least every record and gradient; a step allocates them again; fit frees them") {
  const data d = make_data(8, 41);
  // What a step of mlp keeps, at the least: the weight gradients in float32 (6 x 8 + 8 and 8 x 3
  // + 3 parameters) and each layer's output in bfloat16 (8 rows of 8, 8 and 3 values).
  constexpr std::int64_t kept = (6 * 8 + 8 + 8 * 3 + 3) * 4 + 8 * (8 + 8 + 3) * 2;
  const auto check = [&](auto& model, const auto& x, const auto& y, const auto& options) {
    model.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true));
    model.train_on_batch(x, y);
    model.train_on_batch(x, y);
    const std::int64_t held = heap_counter::live_bytes.load();
    model.release_step_buffers();
    const std::int64_t released = heap_counter::live_bytes.load();
    CHECK(held - released >= kept);
    model.train_on_batch(x, y);
    CHECK(heap_counter::live_bytes.load() == held);  // the same buffers again, nothing more
    model.fit(x, y, options);
    CHECK(heap_counter::live_bytes.load() == released);
  };
  mlp compiled;
  check(compiled, d.x, d.y, FitOptions<X, Y>{.batch_size = 8, .verbose = 0});
  RuntimeModel runtime = runtime_copy(compiled);
  check(runtime, d.ax, d.ay, FitOptions<>{.batch_size = 8, .verbose = 0});
}

TEST_CASE("a step allocates no input gradient as large as the output the layer below lends") {
  // Conv2D (relu) -> MaxPooling2D: max pooling writes the convolution's pre-activation gradient
  // over its output; MaxPooling2D -> Conv2D likewise. With an Activation("linear") in between,
  // nothing is lent, and the step allocates input gradients as large as that output (the check
  // that this test can fail).
  const std::size_t threads_before = kernels::num_threads();
  kernels::set_num_threads(1);  // one thread's scratch: the same allocations every run
  constexpr std::size_t rows = 16;
  constexpr std::int64_t conv_output_bytes = rows * 30 * 30 * 16 * sizeof(float);  // 0.9 MiB
  Tensor<float, dynamic, 32, 32, 1> x(rows);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  for (float& v : x.values()) v = normal(rng);
  std::vector<std::int32_t> labels(rows);
  for (std::size_t i = 0; i < rows; ++i) labels[i] = static_cast<std::int32_t>(i % 3);
  const Tensor<std::int32_t, dynamic> y(labels);
  // What the third step allocates beyond what the model held after the second.
  const auto step_growth = [](auto& model, const auto& inputs, const auto& targets) {
    model.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
    model.train_on_batch(inputs, targets);
    model.train_on_batch(inputs, targets);
    const std::int64_t held = heap_counter::live_bytes.load();
    heap_counter::peak_bytes.store(held);
    model.train_on_batch(inputs, targets);
    return heap_counter::peak_bytes.load() - held;
  };
  using relu = activations::relu;
  Sequential<policies::float32, Input<32, 32, 1>, Conv2D<16, 3, 3, relu>, MaxPooling2D<2>, Flatten<>, Dense<3>> lending;
  Sequential<policies::float32, Input<32, 32, 1>, Conv2D<16, 3, 3, relu>, Activation<activations::linear>,
             MaxPooling2D<2>, Flatten<>, Dense<3>>
      separate;
  RuntimeModel runtime = RuntimeModel::from_config(lending.get_config());
  const std::int64_t lent = step_growth(lending, x, y);
  CHECK(lent < conv_output_bytes);
  CHECK(step_growth(runtime, AnyTensor(x), AnyTensor(y)) < conv_output_bytes);
  CHECK(step_growth(separate, x, y) >= conv_output_bytes + lent);
  // MaxPooling2D -> Conv2D: the convolution writes its input gradient over the pooling's output.
  constexpr std::int64_t pool_output_bytes = rows * 15 * 15 * 16 * sizeof(float);
  Sequential<policies::float32, Input<32, 32, 1>, Conv2D<16, 3, 3, relu>, MaxPooling2D<2>, Conv2D<8, 3, 3>, Flatten<>,
             Dense<3>>
      pooling_lends;
  Sequential<policies::float32, Input<32, 32, 1>, Conv2D<16, 3, 3, relu>, MaxPooling2D<2>,
             Activation<activations::linear>, Conv2D<8, 3, 3>, Flatten<>, Dense<3>>
      pooling_apart;
  CHECK(step_growth(pooling_apart, x, y) >= step_growth(pooling_lends, x, y) + pool_output_bytes);
  kernels::set_num_threads(threads_before);
}

TEST_CASE("validation_split takes the last rows, before shuffling") {
  mlp model, manual;
  copy_weights(model, manual);
  model.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  manual.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  const data d = make_data(10, 3);
  // floor(10 * 0.75) = 7 training rows, then rows 7, 8, 9 for validation.
  const History h = model.fit(d.x, d.y, {.batch_size = 7, .verbose = 0, .validation_split = 0.25, .shuffle = false});
  manual.train_on_batch(rows_of(d.x, 0, 7), rows_of(d.y, 0, 7));
  CHECK(weight_bytes(model) == weight_bytes(manual));
  const Logs validation = manual.test_on_batch(rows_of(d.x, 7, 10), rows_of(d.y, 7, 10));
  CHECK(h.history.at("val_loss") == std::vector<double>{validation.at("loss")});
  CHECK(h.history.at("val_accuracy") == std::vector<double>{validation.at("accuracy")});
  // validation_data takes precedence over validation_split.
  const History given = model.fit(d.x, d.y, {.verbose = 0, .validation_split = 0.25,
                                             .validation_data = std::pair(rows_of(d.x, 0, 2), rows_of(d.y, 0, 2))});
  CHECK(given.params().steps == 1);  // all 10 rows train
  CHECK(given.history.at("val_loss")[0] == model.test_on_batch(rows_of(d.x, 0, 2), rows_of(d.y, 0, 2)).at("loss"));
}

TEST_CASE("a seed gives the same order every run") {
  mlp base;
  const data d = make_data(30, 4);
  const auto train = [&](std::uint64_t seed) {
    RuntimeModel model = runtime_copy(base);
    model.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
    model.fit(d.ax, d.ay, {.batch_size = 4, .epochs = 2, .verbose = 0, .seed = seed});
    return weight_bytes(model);
  };
  CHECK(train(5) == train(5));
  CHECK(train(5) != train(6));
}

TEST_CASE("evaluate: test_on_batch over the whole data, or the row-weighted mean of its batches") {
  mlp model;
  model.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  const data d = make_data(10, 5);
  CHECK(model.evaluate(d.x, d.y, {.batch_size = 10, .verbose = 0}) == model.test_on_batch(d.x, d.y));
  CHECK(model.evaluate(d.x, d.y, {.batch_size = 64, .verbose = 0}) == model.test_on_batch(d.x, d.y));
  const Logs a = model.test_on_batch(rows_of(d.x, 0, 4), rows_of(d.y, 0, 4));
  const Logs b = model.test_on_batch(rows_of(d.x, 4, 8), rows_of(d.y, 4, 8));
  const Logs c = model.test_on_batch(rows_of(d.x, 8, 10), rows_of(d.y, 8, 10));
  const Logs logs = model.evaluate(d.x, d.y, {.batch_size = 4, .verbose = 0});
  for (const char* key : {"loss", "accuracy"})
    CHECK(logs.at(key) == (a.at(key) * 4 + b.at(key) * 4 + c.at(key) * 2) / 10);
  RuntimeModel runtime = runtime_copy(model);
  runtime.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  CHECK(runtime.evaluate(d.ax, d.ay, {.batch_size = 4, .verbose = 0}) == logs);
}

TEST_CASE("predict: the direct call's outputs, batch by batch") {
  mlp model;
  const data d = make_data(11, 6);
  const auto direct = model(d.x);
  const auto predicted = model.predict(d.x, {.batch_size = 4, .verbose = 0});
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(predicted)>, mlp::output_type>);
  CHECK(predicted.batch() == 11);
  CHECK(std::vector<bfloat16>(predicted.values().begin(), predicted.values().end()) ==
        std::vector<bfloat16>(direct.values().begin(), direct.values().end()));
  RuntimeModel runtime = runtime_copy(model);
  const AnyTensor any = runtime.predict(d.ax, {.batch_size = 3, .verbose = 0});
  CHECK(any.extents() == std::vector<std::size_t>{11, 3});
  const AnyTensor whole = runtime(d.ax);
  CHECK(any.dtype() == "bfloat16");
  CHECK(std::vector<bfloat16>(any.values<bfloat16>().begin(), any.values<bfloat16>().end()) ==
        std::vector<bfloat16>(whole.values<bfloat16>().begin(), whole.values<bfloat16>().end()));
}

TEST_CASE("fit, evaluate and predict: bad arguments") {
  RuntimeModel model({6}, {layer_configs::dense(3)});
  const data d = make_data(10, 7);
  const auto throws = [](auto&& call, const char* message) {
    CHECK_THROWS_WITH_AS(call(), message, std::invalid_argument);
  };
  // Before compile(): the API called in the wrong order.
  CHECK_THROWS_WITH_AS(model.fit(d.ax, d.ay, {.verbose = 0}), "You must call `compile()` before using the model.", std::logic_error);
  CHECK_THROWS_WITH_AS(model.evaluate(d.ax, d.ay, {.verbose = 0}), "You must call `compile()` before using the model.",
                       std::logic_error);
  model.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
  throws([&] { model.fit(d.ax, d.ay, {.batch_size = 0}); }, "`batch_size` must be a positive integer. Received: batch_size=0");
  throws([&] { model.predict(d.ax, {.batch_size = 0}); }, "`batch_size` must be a positive integer. Received: batch_size=0");
  throws([&] { model.fit(d.ax, d.ay, {.validation_split = 1.0}); },
         "`validation_split` must be in [0, 1). Received: validation_split=1");
  throws([&] { model.fit(d.ax, d.ay, {.validation_split = -0.5}); },
         "`validation_split` must be in [0, 1). Received: validation_split=-0.5");
  throws([&] { model.fit(d.ax, d.ay, {.verbose = 3}); },
         "`verbose` must be 0 (silent), 1 (progress bar) or 2 (one line per epoch). Received: verbose=3");
  throws([&] { model.fit(d.ax, d.ay, {.epochs = -1}); },
         "`epochs` and `initial_epoch` must be integers >= 0. Received: epochs=-1, initial_epoch=0");
  throws([&] { model.fit(d.ax, AnyTensor({9}, std::vector<std::int32_t>(9, 0))); },
         "Data cardinality is ambiguous. Make sure all arrays contain the same number of samples. 'x' sizes: 10, 'y' "
         "sizes: 9.");
  throws([&] { model.evaluate(AnyTensor({0, 6}, std::vector<float>{}), AnyTensor({0}, std::vector<std::int32_t>{})); },
         "The data is empty: x and y need at least one row.");
  throws([&] { model.predict(AnyTensor({0, 6}, std::vector<float>{})); }, "The data is empty: x needs at least one row.");
  const data one = make_data(1, 8);
  throws([&] { model.fit(one.ax, one.ay, {.validation_split = 0.1}); },
         "Training data contains 1 samples, which is not sufficient to split it into a validation and training set as "
         "specified by `validation_split=0.1`. Either provide more data, or a different value for the "
         "`validation_split` argument.");
  throws([&] { model.fit(d.ax, d.ay, {.verbose = 0, .callbacks = {nullptr}}); },
         "callbacks: an entry is empty (a null shared_ptr).");
  // predict needs no compile().
  RuntimeModel fresh({6}, {layer_configs::dense(3)});
  CHECK(fresh.predict(d.ax, {.verbose = 0}).extents() == std::vector<std::size_t>{10, 3});
}

TEST_CASE("fit checks all its data before the first step: bad data anywhere changes nothing") {
  const data d = make_data(10, 21);
  const auto rejected = [](auto& model, auto&& call, const std::string& message) {
    const auto before = weight_bytes(model);
    CHECK_THROWS_WITH_AS(call(), message.c_str(), std::invalid_argument);
    CHECK(weight_bytes(model) == before);
    CHECK(model.optimizer().iterations() == 0);
  };
  SUBCASE("a RuntimeModel") {
    RuntimeModel model({6}, {layer_configs::dense(3)});
    model.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy", {"accuracy"});
    std::vector<std::int32_t> labels(d.y.values().begin(), d.y.values().end());
    labels.back() = 7;  // in the last batch
    rejected(model, [&] { model.fit(d.ax, AnyTensor({10}, labels), {.batch_size = 4, .verbose = 0, .shuffle = false}); },
             "Received a label value of 7 which is outside the valid range of [0, 3).");
    std::vector<float> x(d.x.values().begin(), d.x.values().end());
    x.back() = std::numeric_limits<float>::quiet_NaN();
    rejected(model, [&] { model.fit(AnyTensor({10, 6}, x), d.ay, {.batch_size = 4, .verbose = 0}); },
             "the inputs hold a non-finite value (NaN or infinity); a training step on them would make every weight NaN.");
    const data wide = make_data(5, 22);
    const AnyTensor five_features({5, 5}, std::vector<float>(25, 0.5f));
    rejected(model, [&] { model.fit(d.ax, d.ay, {.verbose = 0, .validation_data = std::pair(five_features, wide.ay)}); },
             "validation_data: RuntimeModel 'sequential' expects inputs of shape (batch, 6); got (batch, 5).");
    rejected(model, [&] { model.fit(d.ax, d.ay, {.verbose = 0, .validation_data = std::pair(wide.ax, AnyTensor({5}, std::vector<std::int32_t>(5, -1)))}); },
             "validation_data: Received a label value of -1 which is outside the valid range of [0, 3).");
    // Validation rows are only evaluated: a non-finite input there is not a training step's.
    model.fit(AnyTensor({10, 6}, x), d.ay, {.verbose = 0, .validation_split = 0.2});
    CHECK(model.optimizer().iterations() == 1);
  }
  SUBCASE("a Sequential model") {
    mlp model;
    model.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
    Y labels = d.y;
    labels[9] = 3;
    rejected(model, [&] { model.fit(d.x, labels, {.batch_size = 4, .verbose = 0}); },
             "Received a label value of 3 which is outside the valid range of [0, 3).");
  }
}

TEST_CASE("a batch_size larger than the data is one step, however large") {
  CHECK(detail::steps_for(10, std::numeric_limits<std::size_t>::max()) == 1);
  CHECK(detail::steps_for(10, 4) == 3);
  CHECK(detail::steps_for(12, 4) == 3);
  RuntimeModel model({6}, {layer_configs::dense(3)});
  model.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
  const data d = make_data(10, 23);
  const callbacks::History history =
      model.fit(d.ax, d.ay, {.batch_size = std::numeric_limits<std::size_t>::max(), .verbose = 0});
  CHECK(history.params().steps == 1);
  CHECK(model.optimizer().iterations() == 1);
}

TEST_CASE("epoch logs with loss scaling: the last scale and the number of skipped steps") {
  detail::running_logs logs;
  logs.add({{"loss", 1.0}, {"loss_scale", 32768.0}, {"skipped", 1.0}}, 4);
  CHECK(logs.result() == Logs{{"loss", 1.0}, {"loss_scale", 32768.0}, {"skipped", 1.0}});
  logs.add({{"loss", 0.5}, {"loss_scale", 16384.0}, {"skipped", 0.0}}, 4);
  logs.add({{"loss", 0.25}, {"loss_scale", 16384.0}, {"skipped", 1.0}}, 2);
  CHECK(logs.result() == Logs{{"loss", (4.0 + 2.0 + 0.5) / 10}, {"loss_scale", 16384.0}, {"skipped", 2.0}});
}

TEST_CASE("the progress bar: Keras 3's text") {
  SUBCASE("a fit that threw leaves the bar to draw the next evaluate") {
    std::ostringstream out;
    RuntimeModel model({6}, {layer_configs::dense(3)});
    model.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
    const data d = make_data(10, 9);
    const auto bar = std::make_shared<callbacks::ProgbarLogger>(out, false, ticking_clock());
    struct failing : callbacks::Callback {
      void on_epoch_begin(int, const Logs&) override { throw std::runtime_error("stop"); }
    };
    CHECK_THROWS_AS(model.fit(d.ax, d.ay, {.verbose = 1, .callbacks = {bar, std::make_shared<failing>()}}),
                    std::runtime_error);
    out.str("");
    model.evaluate(d.ax, d.ay, {.verbose = 1, .callbacks = {bar}});
    CHECK(out.str().starts_with("1/1 \u2501"));
  }
  SUBCASE("verbose 1, not a terminal: the final line of each epoch") {
    std::ostringstream out;
    RuntimeModel model({6}, {layer_configs::dense(3)});
    model.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy", {"accuracy"});
    const data d = make_data(10, 9);
    const auto bar = std::make_shared<callbacks::ProgbarLogger>(out, false, ticking_clock());
    const History h = model.fit(d.ax, d.ay, {.batch_size = 4, .epochs = 2, .verbose = 1, .callbacks = {bar}, .shuffle = false});
    // Per epoch the clock reads at the start, after each of the 3 steps and at the end: 1s in all,
    // and (end - after the first step) / 2 = 0.375s per step.
    std::string expected;
    for (std::size_t e = 0; e < 2; ++e)
      expected += "Epoch " + std::to_string(e + 1) + "/2\n3/3 \u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501"
                  "\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501 1s 375ms/step - accuracy: " +
                  f4(h.history.at("accuracy")[e]) + " - loss: " + f4(h.history.at("loss")[e]) + "\n";
    CHECK(out.str() == expected);
  }
  SUBCASE("verbose 2, with validation: one line per epoch") {
    std::ostringstream out;
    RuntimeModel model({6}, {layer_configs::dense(3)});
    model.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
    const data d = make_data(12, 10);
    const auto bar = std::make_shared<callbacks::ProgbarLogger>(out, false, ticking_clock());
    const History h = model.fit(d.ax, d.ay, {.batch_size = 1, .verbose = 2, .callbacks = {bar},
                                             .validation_split = 0.25});
    // 9 steps; validation is silent in fit; a single epoch has no "Epoch 1/1" line. verbose 2, as
    // verbose 1, reads the clock at the start, after each step and at the end: 2.5s, and (end -
    // after the first step) / 8 = 281ms per step.
    CHECK(out.str() == "9/9 - 2s - 281ms/step - loss: " + f4(h.history.at("loss")[0]) +
                           " - val_loss: " + f4(h.history.at("val_loss")[0]) + "\n");
  }
  SUBCASE("keys a callback adds at the epoch's end come after the val_ ones, at verbose 1 and 2 alike") {
    for (const int verbose : {1, 2}) {
      std::ostringstream out;
      RuntimeModel model({6}, {layer_configs::dense(3)});
      model.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy", {"accuracy"});
      const data d = make_data(12, 10);
      const auto scheduler = std::make_shared<callbacks::LearningRateScheduler>([](int, double lr) { return lr; });
      const auto bar = std::make_shared<callbacks::ProgbarLogger>(out, false, ticking_clock());
      model.fit(d.ax, d.ay, {.batch_size = 4, .verbose = verbose, .callbacks = {scheduler, bar}, .validation_split = 0.25});
      const std::string line = out.str();
      const auto at = [&](const char* key) { return line.find(std::string(" - ") + key + ": "); };
      CHECK(at("accuracy") < at("loss"));
      CHECK(at("loss") < at("val_accuracy"));
      CHECK(at("val_accuracy") < at("val_loss"));
      CHECK(at("val_loss") < at("learning_rate"));
      CHECK(at("learning_rate") != std::string::npos);
    }
  }
  SUBCASE("loss scaling keys, small values, aligned counts") {
    std::ostringstream out;
    Progbar bar(12, 1, out, false, ticking_clock());
    for (std::size_t step = 1; step <= 12; ++step) bar.update(step, {{"loss", 2e-4}, {"loss_scale", 32768.0}, {"skipped", 3.0}}, false);
    bar.update(12, {{"loss", 2e-4}, {"loss_scale", 32768.0}, {"skipped", 3.0}, {"val_loss", -0.5}}, true);
    CHECK(out.str() == "12/12 \u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501"
                       "\u2501\u2501\u2501\u2501\u2501 3s 273ms/step - loss: 2.0000e-04 - loss_scale: 32768.0000 - "
                       "skipped: 3 - val_loss: -0.5000\n");
    std::ostringstream two;
    Progbar line(12, 2, two, false, ticking_clock());
    line.update(3, {{"loss", 0.5}}, false);
    CHECK(two.str().empty());
    line.update(12, {{"loss", 0.5}, {"val_loss", -0.5}}, true);  // Keras' verbose 2: no abs()
    CHECK(two.str() == "12/12 - 0s - 42ms/step - loss: 0.5000 - val_loss: -5.0000e-01\n");
  }
  SUBCASE("on a terminal: redrawn in place, with Keras' colors") {
    std::ostringstream out;
    Progbar bar(2, 1, out, true, ticking_clock(), /*interval=*/0.0);
    bar.update(1, {{"loss", 0.5}}, false);
    const std::string first = "\x1b[1m1/2\x1b[0m \x1b[32m" + std::string("\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501") +
                              "\x1b[0m\x1b[37m" + "\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501" +
                              "\x1b[0m \x1b[1m0s\x1b[0m 250ms/step - loss: 0.5000";
    CHECK(out.str() == "\r" + first);
    bar.update(2, {{"loss", 0.25}}, true);
    // 1/2 + space + 20 + space + "0s" + " 250ms/step - loss: 0.5000": 53 columns to back over.
    CHECK(out.str() == "\r" + first + std::string(53, '\b') + "\r\x1b[1m2/2\x1b[0m \x1b[32m" +
                           "\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501"
                           "\u2501\u2501\u2501\u2501\u2501\x1b[0m\x1b[37m\x1b[0m \x1b[1m0s\x1b[0m 250ms/step - loss: 0.2500\n");
  }
}

TEST_CASE("History and params; initial_epoch") {
  RuntimeModel model({6}, {layer_configs::dense(3)});
  model.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy", {"accuracy"});
  const data d = make_data(10, 11);
  const History h = model.fit(d.ax, d.ay, {.batch_size = 3, .epochs = 4, .verbose = 0, .initial_epoch = 2});
  CHECK(h.epoch == std::vector<int>{2, 3});
  CHECK(h.params() == callbacks::Params{.verbose = 0, .epochs = 4, .steps = 4});
  CHECK(h.history.at("loss").size() == 2);
  CHECK(h.history.at("accuracy").size() == 2);
  CHECK_THROWS_AS(h.model(), std::logic_error);  // detached after fit
}

TEST_CASE("CSVLogger: Keras' file, and mixprec's steps file") {
  CHECK(callbacks::detail::python_float(0.25) == "0.25");
  CHECK(callbacks::detail::python_float(3.0) == "3.0");
  CHECK(callbacks::detail::python_float(-0.0) == "-0.0");
  CHECK(callbacks::detail::python_float(1e-5) == "1e-05");
  CHECK(callbacks::detail::python_float(0.0001) == "0.0001");
  CHECK(callbacks::detail::python_float(1.5e-7) == "1.5e-07");
  CHECK(callbacks::detail::python_float(123456.789) == "123456.789");
  CHECK(callbacks::detail::python_float(1e16) == "1e+16");
  CHECK(callbacks::detail::python_float(32768.0) == "32768.0");
  CHECK(callbacks::detail::python_float(static_cast<double>(0.1f)) == "0.10000000149011612");

  const std::string file = temp_path("log.csv"), steps = temp_path("steps.csv");
  RuntimeModel model({6}, {layer_configs::dense(3)});
  model.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy", {"accuracy"});
  const data d = make_data(10, 12);
  auto logger = std::make_shared<callbacks::CSVLogger>(file, ";", false, steps);
  auto step_logs = std::make_shared<std::vector<Logs>>();
  struct step_recorder : callbacks::Callback {
    explicit step_recorder(std::shared_ptr<std::vector<Logs>> into) : logs(std::move(into)) {}
    void on_train_step_end(int, int, const Logs& l) override { logs->push_back(l); }
    std::shared_ptr<std::vector<Logs>> logs;
  };
  const History h = model.fit(d.ax, d.ay, {.batch_size = 6, .epochs = 2, .verbose = 0,
                                           .callbacks = {logger, std::make_shared<step_recorder>(step_logs)},
                                           .validation_split = 0.2, .shuffle = false});
  using callbacks::detail::python_float;
  std::string expected = "epoch;accuracy;loss;val_accuracy;val_loss\r\n";
  for (std::size_t e = 0; e < 2; ++e)
    expected += std::to_string(e) + ";" + python_float(h.history.at("accuracy")[e]) + ";" +
                python_float(h.history.at("loss")[e]) + ";" + python_float(h.history.at("val_accuracy")[e]) + ";" +
                python_float(h.history.at("val_loss")[e]) + "\r\n";
  CHECK(read_file(file) == expected);
  REQUIRE(step_logs->size() == 4);  // 8 training rows in batches of 6: 2 steps an epoch
  std::string expected_steps = "epoch;step;loss;loss_scale;skipped\r\n";
  for (std::size_t i = 0; i < 4; ++i)
    expected_steps += std::to_string(i / 2) + ";" + std::to_string(i % 2) + ";" + python_float((*step_logs)[i].at("loss")) + ";;\r\n";
  CHECK(read_file(steps) == expected_steps);

  // append: no second header; loss scaling keys fill their columns.
  callbacks::CSVLogger again(file, ";", true, steps);
  again.on_train_begin({});
  again.on_train_step_end(0, 0, {{"loss", 0.5}, {"loss_scale", 32768.0}, {"skipped", 1.0}});
  Logs epoch_logs{{"loss", 0.5}, {"loss_scale", 32768.0}, {"skipped", 1.0}};
  again.on_epoch_end(0, epoch_logs);
  again.on_train_end({});
  CHECK(read_file(file) == expected + "0;0.5;32768.0;1.0\r\n");  // Keras: the first epoch's keys
  CHECK(read_file(steps) == expected_steps + "0;0;0.5;32768.0;1.0\r\n");
  std::filesystem::remove(file);
  std::filesystem::remove(steps);
  // Python's csv module takes a one-character separator.
  callbacks::CSVLogger unicode(file, "\u00a7");  // one character, two bytes of UTF-8: Python takes it
  CHECK_THROWS_AS(callbacks::CSVLogger(file, "\xc3"), std::invalid_argument);  // a lead byte alone is no character
  for (const char* bad : {"", ";;", "\u00a7\u00a7"})
    CHECK_THROWS_WITH_AS(callbacks::CSVLogger(file, bad), (std::string("CSVLogger: the separator must be a 1-character string. Received: separator='") + bad + "'").c_str(),
                         std::invalid_argument);
  CHECK_THROWS_WITH_AS(callbacks::CSVLogger(file, "\""),
                       "CSVLogger: the separator cannot be '\"', '\\r' or '\\n'. Received: separator='\"'", std::invalid_argument);
  for (const char* bad : {"\r", "\n"}) CHECK_THROWS_AS(callbacks::CSVLogger(file, bad), std::invalid_argument);

  // Fields are quoted as Python's csv module quotes them (QUOTE_MINIMAL): those that hold the
  // separator, a quote or a line break, in double quotes, their quotes doubled: Python's
  // csv.writer(f, delimiter=".") writes ["epoch", 'a"b', "loss"] as epoch."a""b".loss and
  // [0, "1.0", "0.5"] as 0."1.0"."0.5".
  // The file a logger with this separator writes for these epochs' logs.
  const auto logged = [&](const char* separator, std::vector<Logs> epochs) {
    callbacks::CSVLogger writer(file, separator);
    writer.on_train_begin({});
    for (std::size_t e = 0; e < epochs.size(); ++e) writer.on_epoch_end(static_cast<int>(e), epochs[e]);
    writer.on_train_end({});
    return read_file(file);
  };
  CHECK(logged(".", {{{"loss", 0.5}, {"a\"b", 1.0}}}) == "epoch.\"a\"\"b\".loss\r\n0.\"1.0\".\"0.5\"\r\n");
  CHECK(logged(",", {{{"loss", 0.25}, {"x,y", 2.0}, {"line\nbreak", 3.0}}, {{"loss", 0.5}}}) ==
        "epoch,\"line\nbreak\",loss,\"x,y\"\r\n0,3.0,0.25,2.0\r\n1,NA,0.5,NA\r\n");
  CHECK(logged("\u00a7", {{{"a\u00a7b", 1.0}}}) == "epoch\u00a7\"a\u00a7b\"\r\n0\u00a71.0\r\n");  // a two-byte separator
  // The steps file's header under separator "_".
  callbacks::CSVLogger underscore(file, "_", false, steps);
  underscore.on_train_begin({});
  underscore.on_train_end({});
  CHECK(read_file(steps) == "epoch_step_loss_\"loss_scale\"_skipped\r\n");
  std::filesystem::remove(file);
  std::filesystem::remove(steps);
}

TEST_CASE("EarlyStopping: patience, and restore_best_weights to the best epoch's bits") {
  RuntimeModel model({6}, {layer_configs::dense(3)});
  model.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
  const data d = make_data(10, 13);
  auto recorder = std::make_shared<weight_recorder>();
  auto stopper = std::make_shared<callbacks::EarlyStopping>(
      callbacks::EarlyStoppingOptions{.monitor = "score", .patience = 2, .mode = "min", .restore_best_weights = true});
  const History h = model.fit(d.ax, d.ay, {.batch_size = 5, .epochs = 10, .verbose = 0,
                                           .callbacks = {std::make_shared<scripted>("score", std::vector<double>{1.0, 0.5, 0.7, 0.4, 0.6, 0.8, 0.9}),
                                                         stopper, recorder}});
  // Improvements at epochs 0, 1, 3; epochs 4 and 5 do not improve (wait 2 = patience): stop at 5.
  CHECK(h.epoch == std::vector<int>{0, 1, 2, 3, 4, 5});
  CHECK(stopper->stopped_epoch() == 5);
  CHECK(stopper->best_epoch() == 3);
  CHECK(callbacks::ModelHandle(model, nullptr).get_weights() == recorder->epochs[3]);
  CHECK(recorder->epochs[5] != recorder->epochs[3]);

  // patience 0 and min_delta: 0.5 -> 0.45 is no improvement with min_delta 0.1.
  auto strict = std::make_shared<callbacks::EarlyStopping>(callbacks::EarlyStoppingOptions{.monitor = "val_score", .min_delta = 0.1, .mode = "min"});
  const History s = model.fit(d.ax, d.ay, {.batch_size = 5, .epochs = 10, .verbose = 0,
                                           .callbacks = {std::make_shared<scripted>("val_score", std::vector<double>{0.5, 0.45, 0.3}), strict}});
  CHECK(s.epoch == std::vector<int>{0, 1});

  // A monitor the logs lack: one warning on std::cerr, training goes on.
  std::ostringstream err;
  auto* old = std::cerr.rdbuf(err.rdbuf());
  const History w = model.fit(d.ax, d.ay, {.epochs = 3, .verbose = 0, .callbacks = {std::make_shared<callbacks::EarlyStopping>()}});
  std::cerr.rdbuf(old);
  CHECK(w.epoch.size() == 3);
  CHECK(err.str() == "Warning: Early stopping conditioned on metric `val_loss` which is not available. Available metrics "
                     "are: loss\n");
  CHECK_THROWS_WITH_AS(callbacks::EarlyStopping({.monitor = "score"}), doctest::Contains("monitor=score"), std::invalid_argument);
  CHECK_NOTHROW(callbacks::EarlyStopping({.monitor = "val_accuracy"}));  // "auto": accuracy goes up
}

TEST_CASE("ModelCheckpoint: save_best_only writes on improvement only, and the file loads back") {
  mlp model;
  model.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  const data d = make_data(10, 14);
  const std::string pattern = temp_path("ckpt-{epoch:02d}.weights");
  auto recorder = std::make_shared<weight_recorder>();
  auto checkpoint = std::make_shared<callbacks::ModelCheckpoint>(pattern, "val_loss", 0, true);
  model.fit(d.x, d.y, {.batch_size = 5, .epochs = 4, .verbose = 0,
                       .callbacks = {std::make_shared<scripted>("val_loss", std::vector<double>{1.0, 2.0, 0.5, 0.5}),
                                     checkpoint, recorder}});
  CHECK(checkpoint->saved() == std::vector<std::string>{temp_path("ckpt-01.weights"), temp_path("ckpt-03.weights")});
  CHECK(!std::filesystem::exists(temp_path("ckpt-02.weights")));
  CHECK(!std::filesystem::exists(temp_path("ckpt-04.weights")));
  mlp restored;
  restored.load_weights(temp_path("ckpt-03.weights"));
  CHECK(callbacks::ModelHandle(restored, nullptr).get_weights() == recorder->epochs[2]);
  // The best value carries over to the next fit: 0.6 does not beat 0.5, 0.25 does.
  model.fit(d.x, d.y, {.batch_size = 5, .epochs = 2, .verbose = 0,
                       .callbacks = {std::make_shared<scripted>("val_loss", std::vector<double>{0.6, 0.25}), checkpoint}});
  CHECK(checkpoint->saved().size() == 3);
  CHECK(checkpoint->saved().back() == temp_path("ckpt-02.weights"));
  CHECK(checkpoint->best() == 0.25);
  for (const auto& path : checkpoint->saved()) std::filesystem::remove(path);
  CHECK(callbacks::detail::checkpoint_path("w{epoch}-{loss:.2f}.bin", 8, {{"loss", 0.123}}) == "w9-0.12.bin");
}

TEST_CASE("ModelCheckpoint paths: Python's str.format of the fields Keras paths use, however long") {
  using callbacks::detail::checkpoint_path;
  // Python: 'w{epoch:03d}-{loss:.4f}.bin'.format(epoch=12, loss=1e70)
  CHECK(checkpoint_path("w{epoch:03d}-{loss:.4f}.bin", 11, {{"loss", 1e70}}) ==
        "w012-10000000000000000725314363815292351261583744096465219555182101554790400.0000.bin");
  CHECK(checkpoint_path("w{epoch:0d}{epoch:d}{epoch:5d}.bin", 0, {}) == "w11    1.bin");
  CHECK(checkpoint_path("{loss:.3e}_{loss}", 0, {{"loss", 0.25}}) == "2.500e-01_0.25");
  CHECK(checkpoint_path("{{epoch}}-{epoch}}}", 1, {}) == "{epoch}-2}");
  // Only braces pair up: other doubled characters are themselves.
  CHECK(checkpoint_path("/tmp/full_val_loss_{val_loss:.4f}.bin", 0, {{"val_loss", 0.12345}}) ==
        "/tmp/full_val_loss_0.1235.bin");
  CHECK(checkpoint_path("loss{{}}.bin", 0, {}) == "loss{}.bin");
  // Python writes nan and inf whatever the spec.
  CHECK(checkpoint_path("{loss:.4f}-{acc:.2e}", 0, {{"loss", -std::numeric_limits<double>::quiet_NaN()},
                                                    {"acc", -std::numeric_limits<double>::infinity()}}) == "nan--inf");
  const auto rejected = [](const std::string& pattern, const char* message) {
    CHECK_THROWS_WITH_AS(checkpoint_path(pattern, 0, {{"loss", 0.5}}), message, std::invalid_argument);
  };
  rejected("w{epoch:dd}.bin", "ModelCheckpoint: '{epoch:dd}': the epoch takes {epoch} or {epoch:02d} (a width of at most 4 digits).");
  rejected("w{epoch:080000d}.bin",
           "ModelCheckpoint: '{epoch:080000d}': the epoch takes {epoch} or {epoch:02d} (a width of at most 4 digits).");
  rejected("w{loss:.f}.bin",
           "ModelCheckpoint: '{loss:.f}': a log value takes {key}, {key:.4f} or {key:.3e} (a precision of at most 4 digits).");
  rejected("w{loss:4f}.bin",
           "ModelCheckpoint: '{loss:4f}': a log value takes {key}, {key:.4f} or {key:.3e} (a precision of at most 4 digits).");
  rejected("w}.bin", "ModelCheckpoint: a single '}' in 'w}.bin' (write '}}' for a brace).");
  rejected("w{epoch.bin", "ModelCheckpoint: an unclosed '{' in 'w{epoch.bin'.");
}

TEST_CASE("LearningRateScheduler: the next epoch's steps use the new rate") {
  mlp a, b;
  copy_weights(a, b);
  a.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  const data d = make_data(8, 15);
  auto scheduler = std::make_shared<callbacks::LearningRateScheduler>([](int epoch, double lr) { return epoch == 0 ? lr : 0.05; });
  auto before = std::make_shared<std::vector<callbacks::WeightValue>>();
  auto gradients = std::make_shared<Gradients>();
  struct at_epoch_1 : callbacks::Callback {  // the weights and gradients just before epoch 1's step
    void on_train_batch_begin(int, const Logs&) override { begin(); }
    std::function<void()> begin;
  };
  auto hook = std::make_shared<at_epoch_1>();
  int epoch_seen = 0;
  hook->begin = [&] {
    if (epoch_seen++ != 1) return;
    *before = hook->model().get_weights();
    *gradients = a.compute_gradients(d.x, d.y);
  };
  const History h = a.fit(d.x, d.y, {.batch_size = 8, .epochs = 2, .verbose = 0, .callbacks = {scheduler, hook}, .shuffle = false});
  CHECK(h.history.at("learning_rate") == std::vector<double>{static_cast<double>(0.1f), static_cast<double>(0.05f)});
  // SGD: w - g * lr, in float32, with lr = 0.05 (the Dropout mask of compute_gradients is the step's).
  const auto after = a.trainable_weights();
  REQUIRE(after.size() == gradients->gradients.size());
  std::size_t index = 0;
  for (const auto& w : a.weights()) {
    std::size_t k = 0;
    while (k < after.size() && after[k].path != w.path) ++k;
    if (k < after.size()) {
      const auto g = gradients->gradients[k].values<float>();
      std::vector<float> expected(g.size());
      std::memcpy(expected.data(), (*before)[index].bytes.data(), g.size() * sizeof(float));
      for (std::size_t i = 0; i < g.size(); ++i) expected[i] = expected[i] - g[i] * 0.05f;
      std::vector<float> actual(g.size());
      std::memcpy(actual.data(), w.bytes.data(), g.size() * sizeof(float));
      CHECK(actual == expected);
    }
    ++index;
  }
  // The same as training with SGD(0.1), then SGD(0.05).
  b.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  b.train_on_batch(d.x, d.y);
  b.compile(optimizers::SGD(0.05), losses::SparseCategoricalCrossentropy(true));
  b.train_on_batch(d.x, d.y);
  CHECK(weight_bytes(a) == weight_bytes(b));

  // Over an optimizer built with a schedule, Keras' setter refuses the float: fit stops with its
  // error before the first step.
  mlp scheduled;
  scheduled.compile(optimizers::SGD(schedules::ExponentialDecay(0.1, 10, 0.5)), losses::SparseCategoricalCrossentropy(true));
  const auto untouched = weight_bytes(scheduled);
  CHECK_THROWS_WITH_AS(scheduled.fit(d.x, d.y, {.batch_size = 8, .verbose = 0, .callbacks = {scheduler}}),
                       doctest::Contains("hence its learning rate is not settable"), std::invalid_argument);
  CHECK(weight_bytes(scheduled) == untouched);
  CHECK(scheduled.optimizer().iterations() == 0);
}

TEST_CASE("a callback sees the hooks in Keras' order; stop_training; a throwing callback") {
  struct tracer : callbacks::Callback {
    std::vector<std::string> calls;
    void on_train_begin(const Logs&) override { calls.push_back("train_begin"); }
    void on_train_end(const Logs&) override { calls.push_back("train_end"); }
    void on_epoch_begin(int e, const Logs&) override { calls.push_back("epoch_begin " + std::to_string(e)); }
    void on_epoch_end(int e, Logs& logs) override {
      calls.push_back("epoch_end " + std::to_string(e) + (logs.contains("val_loss") ? " val_loss" : ""));
    }
    void on_train_batch_begin(int b, const Logs&) override { calls.push_back("batch_begin " + std::to_string(b)); }
    void on_train_step_end(int e, int b, const Logs&) override {
      calls.push_back("step_end " + std::to_string(e) + " " + std::to_string(b));
    }
    void on_train_batch_end(int b, const Logs&) override { calls.push_back("batch_end " + std::to_string(b)); }
    void on_test_begin(const Logs&) override { calls.push_back("test_begin"); }
    void on_test_end(const Logs&) override { calls.push_back("test_end"); }
    void on_test_batch_begin(int b, const Logs&) override { calls.push_back("test_batch_begin " + std::to_string(b)); }
    void on_test_batch_end(int b, const Logs&) override { calls.push_back("test_batch_end " + std::to_string(b)); }
    void on_predict_begin(const Logs&) override { calls.push_back("predict_begin"); }
    void on_predict_end(const Logs&) override { calls.push_back("predict_end"); }
    void on_predict_batch_begin(int b, const Logs&) override { calls.push_back("predict_batch_begin " + std::to_string(b)); }
    void on_predict_batch_end(int b, const Logs&) override { calls.push_back("predict_batch_end " + std::to_string(b)); }
  };
  RuntimeModel model({6}, {layer_configs::dense(3)});
  model.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
  const data d = make_data(6, 16);
  auto t = std::make_shared<tracer>();
  model.fit(d.ax, d.ay, {.batch_size = 2, .epochs = 2, .verbose = 0, .callbacks = {t}, .validation_split = 0.3});
  const std::vector<std::string> epoch = {"batch_begin 0", "step_end {e} 0", "batch_end 0", "batch_begin 1", "step_end {e} 1",
                                          "batch_end 1", "test_begin", "test_batch_begin 0", "test_batch_end 0", "test_end"};
  std::vector<std::string> expected{"train_begin"};
  for (int e = 0; e < 2; ++e) {
    expected.push_back("epoch_begin " + std::to_string(e));
    for (std::string call : epoch) {
      if (const auto at = call.find("{e}"); at != std::string::npos) call.replace(at, 3, std::to_string(e));
      expected.push_back(call);
    }
    expected.push_back("epoch_end " + std::to_string(e) + " val_loss");
  }
  expected.push_back("train_end");
  CHECK(t->calls == expected);
  t->calls.clear();
  model.evaluate(d.ax, d.ay, {.batch_size = 4, .verbose = 0, .callbacks = {t}});
  CHECK(t->calls == std::vector<std::string>{"test_begin", "test_batch_begin 0", "test_batch_end 0", "test_batch_begin 1",
                                             "test_batch_end 1", "test_end"});
  t->calls.clear();
  model.predict(d.ax, {.batch_size = 6, .verbose = 0, .callbacks = {t}});
  CHECK(t->calls == std::vector<std::string>{"predict_begin", "predict_batch_begin 0", "predict_batch_end 0", "predict_end"});

  // stop_training set before any batch (on_epoch_begin): as in Keras, the epoch's first batch
  // still runs, then fit ends after that epoch's end.
  struct early_stopper : callbacks::Callback {
    void on_epoch_begin(int, const Logs&) override { model().stop_training = true; }
  };
  mlp early;
  early.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  const data few = make_data(6, 31);
  const History one_batch =
      early.fit(few.x, few.y, {.batch_size = 2, .epochs = 3, .verbose = 0, .callbacks = {std::make_shared<early_stopper>()}});
  CHECK(one_batch.epoch == std::vector<int>{0});
  CHECK(one_batch.history.at("loss").size() == 1);

  // stop_training from a batch's end: fit ends after that step and its epoch's end.
  struct stopper : callbacks::Callback {
    void on_train_batch_end(int batch, const Logs&) override {
      if (batch == 1) model().stop_training = true;
    }
  };
  const History stopped = model.fit(d.ax, d.ay, {.batch_size = 1, .epochs = 5, .verbose = 0, .callbacks = {std::make_shared<stopper>()}});
  CHECK(stopped.epoch == std::vector<int>{0});

  // A callback that throws ends fit; the model is as the last completed step left it.
  struct thrower : callbacks::Callback {
    void on_train_batch_end(int batch, const Logs&) override {
      if (batch == 1) throw std::runtime_error("stop here");
    }
  };
  RuntimeModel reference = RuntimeModel::from_config(model.get_config());
  copy_weights(model, reference);
  reference.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
  model.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
  CHECK_THROWS_WITH_AS(model.fit(d.ax, d.ay, {.batch_size = 2, .epochs = 3, .verbose = 0,
                                              .callbacks = {std::make_shared<thrower>()}, .shuffle = false}),
                       "stop here", std::runtime_error);
  const data first = make_data(6, 16);
  const std::vector<std::size_t> two{0, 1}, four{2, 3};
  reference.train_on_batch(detail::take_rows(first.ax, two), detail::take_rows(first.ay, two));
  reference.train_on_batch(detail::take_rows(first.ax, four), detail::take_rows(first.ay, four));
  CHECK(weight_bytes(model) == weight_bytes(reference));
}

namespace {

/// A test double for a model under loss scaling: every third step is skipped and halves the scale
/// (train_on_batch's "loss_scale" and "skipped" keys), so fit's handling of them is seen end to end.
struct loss_scaled_model {
  int steps = 0;
  Logs train_on_batch(const AnyTensor&, const AnyTensor&) {
    ++steps;
    const bool skipped = steps % 3 == 0;
    return {{"loss", 1.0 / steps}, {"loss_scale", 32768.0 / (1 << (steps / 3))}, {"skipped", skipped ? 1.0 : 0.0}};
  }
  Logs test_on_batch(const AnyTensor&, const AnyTensor&) { return {{"loss", 0.5}}; }
  AnyTensor operator()(const AnyTensor& x) { return x; }
  std::vector<weight_handle> weights() { return {}; }
  std::vector<weight_handle> trainable_weights() { return {}; }
};

}  // namespace

TEST_CASE("fit with loss scaling logs: History, the progress bar and the steps file") {
  loss_scaled_model model;
  detail::compiled_model compiled(optimizers::SGD(0.1), losses::Loss(losses::MeanSquaredError()));
  const AnyTensor x({8, 1}, std::vector<float>(8, 1.0f)), y({8, 1}, std::vector<float>(8, 0.0f));
  std::ostringstream out;
  const std::string steps = temp_path("scaled_steps.csv"), epochs = temp_path("scaled.csv");
  const History h = detail::fit(model, compiled, x, y,
                                FitOptions<>{.batch_size = 2, .epochs = 2, .verbose = 2,
                                             .callbacks = {std::make_shared<callbacks::CSVLogger>(epochs, ",", false, steps),
                                                           std::make_shared<callbacks::ProgbarLogger>(out, false, ticking_clock())},
                                             .shuffle = false},
                                [](const AnyTensor&, const AnyTensor&, std::size_t) {});  // the double takes any data
  // Epoch 0: steps 1-4 (step 3 skipped, the scale halved from step 3 on); epoch 1: steps 5-8 (6 skipped).
  CHECK(h.history.at("loss_scale") == std::vector<double>{16384.0, 8192.0});
  CHECK(h.history.at("skipped") == std::vector<double>{1.0, 1.0});
  CHECK(h.history.at("loss") == std::vector<double>{(1.0 + 0.5 + 1.0 / 3 + 0.25) * 2 / 8,
                                                    (0.2 + 1.0 / 6 + 1.0 / 7 + 0.125) * 2 / 8});
  // The clock ticks 0.25s a read: at the start, after each step, at the end (1.25s; 1s / 3 a step).
  CHECK(out.str() == "Epoch 1/2\n4/4 - 1s - 333ms/step - loss: " + f4(h.history.at("loss")[0]) +
                         " - loss_scale: 16384.0000 - skipped: 1\nEpoch 2/2\n4/4 - 1s - 333ms/step - loss: " +
                         f4(h.history.at("loss")[1]) + " - loss_scale: 8192.0000 - skipped: 1\n");
  const std::string text = read_file(steps);
  CHECK(text.starts_with("epoch,step,loss,loss_scale,skipped\r\n0,0,1.0,32768.0,0.0\r\n0,1,0.5,32768.0,0.0\r\n"
                         "0,2,0.3333333333333333,16384.0,1.0\r\n0,3,0.25,16384.0,0.0\r\n1,0,0.2,16384.0,0.0\r\n"));
  CHECK(read_file(epochs).starts_with("epoch,loss,loss_scale,skipped\r\n0,"));
  std::filesystem::remove(steps);
  std::filesystem::remove(epochs);
}

TEST_CASE("the README's example") {
  // README.md, "fit, evaluate, predict and callbacks", as written there.
  Sequential<policies::mixed_bfloat16, Input<6>, Dense<16, activations::relu>, Dense<3>> model;
  model.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(/*from_logits=*/true), {"accuracy"});
  Tensor<float, dynamic, 6> x(100);                      // 100 rows
  Tensor<std::int32_t, dynamic> y(100);                  // their class ids
  auto stop = std::make_shared<callbacks::EarlyStopping>(
      callbacks::EarlyStoppingOptions{.monitor = "val_loss", .patience = 2, .restore_best_weights = true});
  History history = model.fit(x, y, {.batch_size = 16, .epochs = 5, .verbose = 0,
                                     .callbacks = {stop, std::make_shared<callbacks::CSVLogger>("log.csv")},
                                     .validation_split = 0.2, .seed = 7});
  history.history.at("val_loss");                         // one value per epoch run
  Logs logs = model.evaluate(x, y, {.batch_size = 32, .verbose = 0});   // logs.at("loss"), logs.at("accuracy")
  auto outputs = model.predict(x, {.verbose = 0});         // Tensor<bfloat16, dynamic, 3>, 100 rows

  RuntimeModel runtime = RuntimeModel::from_config(model.get_config());
  runtime.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  runtime.fit(AnyTensor(x), AnyTensor(y), {.epochs = 2, .verbose = 0});  // AnyTensor in, History out

  static_assert(std::is_same_v<decltype(outputs), Tensor<bfloat16, dynamic, 3>>);
  CHECK(outputs.batch() == 100);
  CHECK(logs.contains("accuracy"));
  CHECK(history.params().steps == 5);
  std::filesystem::remove("log.csv");
}
