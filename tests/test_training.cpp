// Training both model kinds: compile / train_on_batch / test_on_batch, the same bits from the
// compile-time Sequential and the RuntimeModel, the strong guarantee of a rejected step, frozen
// layers, the dtypes an optimizer sees, and small models that learn.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <mixprec/kernels/targets.hpp>
#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>
#include <mixprec/runtime.hpp>
#include <mixprec/training.hpp>

#include "model_weights.hpp"

using namespace mixprec;
using mixprec::test::copy_weights;
using mixprec::test::weight_bytes;

namespace {

/// A synthetic classification task: the class is the index of the largest of the first
/// `classes` features (the rest is noise), so a small model can learn it.
struct task {
  std::vector<float> x;
  std::vector<std::int32_t> labels;
};
task make_task(std::size_t rows, std::size_t features, std::size_t classes, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  task t;
  t.x.resize(rows * features);
  for (auto& v : t.x) v = normal(rng);
  for (std::size_t r = 0; r < rows; ++r) {
    std::size_t best = 0;
    for (std::size_t c = 1; c < classes; ++c)
      if (t.x[r * features + c] > t.x[r * features + best]) best = c;
    t.labels.push_back(static_cast<std::int32_t>(best));
  }
  return t;
}

template <class T, std::size_t... E>
Tensor<T, E...> tensor_of(const std::vector<float>& values) {
  value_buffer<T> converted(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) converted[i] = cast<T>(values[i]);
  return Tensor<T, E...>(std::move(converted));
}

/// A model output's bytes, to compare outputs bit for bit.
template <class Output>
std::vector<std::byte> bits_of(const Output& y) {
  std::vector<std::byte> bytes(y.size() * sizeof(y.values()[0]));
  std::memcpy(bytes.data(), y.values().data(), bytes.size());
  return bytes;
}

template <class P>
using cnn_model = Sequential<P, Input<8, 8, 2>, Conv2D<6, 3, 3, activations::relu, padding::same>, MaxPooling2D<2>,
                             BatchNormalization<>, Conv2D<4, 2, 2, activations::tanh, strides<1, 2>>, Flatten<>,
                             Dropout<>, Dense<12, activations::gelu>, Dense<3>>;

}  // namespace

// bfloat16_with_float_output: a jmp-style policy whose output dtype casts the model's output.
using bfloat16_with_float_output = Policy<bfloat16, float, float>;
TEST_CASE_TEMPLATE("Sequential and RuntimeModel train to the same bits", P, policies::float32, policies::mixed_bfloat16,
                   policies::mixed_float16, policies::float64, policies::bfloat16, bfloat16_with_float_output) {
  cnn_model<P> compiled(Conv2D<6, 3, 3, activations::relu, padding::same>(), MaxPooling2D<2>(), BatchNormalization<>(),
                        Conv2D<4, 2, 2, activations::tanh, strides<1, 2>>(), Flatten<>(), Dropout<>(0.25, "dropout", 7),
                        Dense<12, activations::gelu>("dense", weight_settings{.kernel_regularizer = regularizers::l2{0.01}}),
                        Dense<3>());
  RuntimeModel runtime = RuntimeModel::from_config(compiled.get_config());
  copy_weights(compiled, runtime);
  CHECK(weight_bytes(compiled) == weight_bytes(runtime));

  compiled.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  runtime.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  const task t = make_task(16, 8 * 8 * 2, 3, 11);
  const auto x = tensor_of<float, dynamic, 8, 8, 2>(t.x);
  const Tensor<std::int32_t, dynamic> y(t.labels);
  const AnyTensor x_any(x), y_any(y);
  for (int step = 0; step < 3; ++step) {
    const Logs a = compiled.train_on_batch(x, y);
    const Logs b = runtime.train_on_batch(x_any, y_any);
    CHECK(a == b);
    CHECK(std::isfinite(a.at("loss")));
  }
  CHECK(weight_bytes(compiled) == weight_bytes(runtime));
  CHECK(compiled.test_on_batch(x, y) == runtime.test_on_batch(x_any, y_any));
}

TEST_CASE_TEMPLATE("gradients written over lent outputs: the bits of the layers' separate backward passes", P,
                   policies::float32, policies::mixed_bfloat16, policies::mixed_float16, policies::float64) {
  // A layer lends its output to the backward pass of the layer above, which writes the lending
  // layer's pre-activation gradient over it: Conv2D (relu) -> MaxPooling2D, Conv2D (linear) ->
  // MaxPooling2D with overlapping windows, MaxPooling2D -> Conv2D, Conv2D (relu) -> Conv2D,
  // Conv2D (relu) -> Flatten, Flatten -> Dense and, under a 16-bit compute dtype, Dense (relu,
  // linear) -> Dense. An Activation("linear") in between lends nothing, so there each layer's
  // backward pass runs on its own, with an input gradient buffer of its own.
  using relu = activations::relu;
  using linear = activations::linear;
  using identity = Activation<linear>;
  using lending = Sequential<P, Input<8, 8, 2>, Conv2D<6, 3, 3, relu, padding::same>, MaxPooling2D<2>,
                             Conv2D<5, 2, 2, relu, padding::same>, Conv2D<4, 2, 2, linear>,
                             MaxPooling2D<2, 2, strides<1>>, Conv2D<4, 2, 2, relu, padding::same>, Flatten<>, Dense<8, relu>,
                             Dense<6>, Dense<3>>;
  using separate = Sequential<P, Input<8, 8, 2>, Conv2D<6, 3, 3, relu, padding::same>, identity, MaxPooling2D<2>,
                              identity, Conv2D<5, 2, 2, relu, padding::same>, identity, Conv2D<4, 2, 2, linear>,
                              identity, MaxPooling2D<2, 2, strides<1>>, identity, Conv2D<4, 2, 2, relu, padding::same>, identity,
                              Flatten<>, identity, Dense<8, relu>, identity, Dense<6>, identity, Dense<3>>;
  lending fused(Conv2D<6, 3, 3, relu, padding::same>("conv_1"), MaxPooling2D<2>("pool_1"),
                Conv2D<5, 2, 2, relu, padding::same>("conv_2"), Conv2D<4, 2, 2, linear>("conv_3"),
                MaxPooling2D<2, 2, strides<1>>("pool_2"), Conv2D<4, 2, 2, relu, padding::same>("conv_4"), Flatten<>("flatten"),
                Dense<8, relu>("hidden_1"), Dense<6>("hidden_2"), Dense<3>("logits"));
  separate apart(Conv2D<6, 3, 3, relu, padding::same>("conv_1"), identity("identity_1"), MaxPooling2D<2>("pool_1"),
                 identity("identity_2"), Conv2D<5, 2, 2, relu, padding::same>("conv_2"), identity("identity_3"),
                 Conv2D<4, 2, 2, linear>("conv_3"), identity("identity_4"), MaxPooling2D<2, 2, strides<1>>("pool_2"),
                 identity("identity_5"), Conv2D<4, 2, 2, relu, padding::same>("conv_4"), identity("identity_6"),
                 Flatten<>("flatten"), identity("identity_7"), Dense<8, relu>("hidden_1"), identity("identity_8"),
                 Dense<6>("hidden_2"), identity("identity_9"), Dense<3>("logits"));
  RuntimeModel runtime = RuntimeModel::from_config(fused.get_config());
  copy_weights(fused, apart);
  copy_weights(fused, runtime);
  fused.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  apart.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  runtime.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  const task t = make_task(16, 8 * 8 * 2, 3, 13);
  const auto x = tensor_of<float, dynamic, 8, 8, 2>(t.x);
  const Tensor<std::int32_t, dynamic> y(t.labels);
  for (int step = 0; step < 3; ++step) {
    const Logs a = fused.train_on_batch(x, y);
    CHECK(a == apart.train_on_batch(x, y));
    CHECK(a == runtime.train_on_batch(AnyTensor(x), AnyTensor(y)));
  }
  CHECK(weight_bytes(fused) == weight_bytes(apart));
  CHECK(weight_bytes(fused) == weight_bytes(runtime));
}

TEST_CASE_TEMPLATE("an MLP learns a synthetic task under every policy", P, policies::float32, policies::mixed_bfloat16,
                   policies::mixed_float16, policies::float64) {
  using model_type = Sequential<P, Input<10>, Dense<32, activations::relu>, Dense<3>>;
  model_type model;
  model.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  const task t = make_task(128, 10, 3, 5);
  const auto x = tensor_of<float, dynamic, 10>(t.x);
  const Tensor<std::int32_t, dynamic> y(t.labels);
  const Logs before = model.test_on_batch(x, y);
  Logs after;
  for (int epoch = 0; epoch < 60; ++epoch) after = model.train_on_batch(x, y);
  after = model.test_on_batch(x, y);
  CHECK(after.at("loss") < 0.5 * before.at("loss"));
  CHECK(after.at("accuracy") > 0.9);
}

TEST_CASE("a CNN learns under mixed_bfloat16") {
  using model_type = Sequential<policies::mixed_bfloat16, Input<6, 6, 1>, Conv2D<8, 3, 3, activations::relu, padding::same>,
                                MaxPooling2D<2>, Flatten<>, Dense<3>>;
  model_type model;
  model.compile(optimizers::SGD(0.1, 0.9), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  const task t = make_task(96, 36, 3, 9);
  const auto x = tensor_of<float, dynamic, 6, 6, 1>(t.x);
  const Tensor<std::int32_t, dynamic> y(t.labels);
  for (int epoch = 0; epoch < 80; ++epoch) model.train_on_batch(x, y);
  CHECK(model.test_on_batch(x, y).at("accuracy") > 0.85);
}

TEST_CASE("a rejected step changes nothing") {
  using model_type = Sequential<policies::mixed_float16, Input<4>, Dense<5, activations::relu>, BatchNormalization<>,
                                Dropout<>, Dense<3>>;
  model_type model;
  const auto x = tensor_of<float, dynamic, 4>({0.5f, -1.0f, 2.0f, 0.25f, 1.0f, 0.0f, -0.5f, 3.0f});
  CHECK_THROWS_WITH_AS(model.train_on_batch(x, Tensor<std::int32_t, dynamic>({0, 1})),
                       "You must call `compile()` before using the model.", std::logic_error);
  // Keras' loss=None: a null name (a nullptr literal does not compile, with the same words).
  const char* no_loss = nullptr;
  CHECK_THROWS_WITH_AS(model.compile(optimizers::SGD(0.1), no_loss),
                       "No loss to compute. Provide a `loss` argument in `compile()`.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(model.train_on_batch(x, Tensor<std::int32_t, dynamic>({0, 1})),
                       "You must call `compile()` before using the model.", std::logic_error);
  model.compile(optimizers::SGD(0.1, 0.9), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  model.train_on_batch(x, Tensor<std::int32_t, dynamic>({0, 1}));
  const auto weights = weight_bytes(model);
  const auto expect_unchanged = [&](auto&& step, const std::string& message) {
    CHECK_THROWS_WITH_AS(step(), doctest::Contains(message.c_str()), std::invalid_argument);
    CHECK(weight_bytes(model) == weights);
  };
  expect_unchanged([&] { model.train_on_batch(x, Tensor<std::int32_t, dynamic>({0, 3})); }, "3");
  expect_unchanged([&] { model.train_on_batch(x, Tensor<std::int32_t, dynamic>({0, -1})); }, "-1");
  auto bad = x;
  bad[3] = std::numeric_limits<float>::quiet_NaN();
  expect_unchanged([&] { model.train_on_batch(bad, Tensor<std::int32_t, dynamic>({0, 1})); }, "non-finite");
  // After a rejected step, the next good one goes exactly as it would have without it: the
  // momentum, the moving statistics and Dropout's generator were untouched.
  model_type a, b;
  a.compile(optimizers::SGD(0.1, 0.9), losses::SparseCategoricalCrossentropy(true));
  b.compile(optimizers::SGD(0.1, 0.9), losses::SparseCategoricalCrossentropy(true));
  copy_weights(a, b);
  a.train_on_batch(x, Tensor<std::int32_t, dynamic>({0, 1}));
  CHECK_THROWS(a.train_on_batch(x, Tensor<std::int32_t, dynamic>({0, 7})));
  a.train_on_batch(x, Tensor<std::int32_t, dynamic>({1, 2}));
  b.train_on_batch(x, Tensor<std::int32_t, dynamic>({0, 1}));
  b.train_on_batch(x, Tensor<std::int32_t, dynamic>({1, 2}));
  CHECK(weight_bytes(a) == weight_bytes(b));
}

TEST_CASE("RuntimeModel: labels are checked against the output") {
  RuntimeModel model({3}, {layer_configs::dense(2)});
  model.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  const AnyTensor x({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK_THROWS_WITH_AS(model.train_on_batch(x, AnyTensor({3}, std::vector<std::int32_t>{0, 1, 1})),
                       "RuntimeModel 'sequential': labels of shape (3,) (int32) do not fit the output (2, 2): class ids "
                       "come one per row.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(model.train_on_batch(x, AnyTensor({2}, std::vector<float>{0, 1})),
                       doctest::Contains("floating targets need the output's shape"), std::invalid_argument);
  CHECK(model.train_on_batch(x, AnyTensor({2}, std::vector<std::int64_t>{0, 1})).contains("loss"));
  RuntimeModel regression({3}, {layer_configs::dense(2)});
  regression.compile(optimizers::SGD(0.1), "mse", {"mae"});
  const Logs logs = regression.train_on_batch(x, AnyTensor({2, 2}, std::vector<double>{0.5, 1, 1.5, 2}));
  CHECK(logs.contains("mae"));
}

TEST_CASE("frozen layers and trainable_weights") {
  using model_type = Sequential<policies::mixed_bfloat16, Input<4>, Dense<5>, BatchNormalization<>, Dense<2>>;
  model_type model;
  CHECK(model.trainable_weights().size() == 6);      // kernel, bias, gamma, beta, kernel, bias
  CHECK(model.non_trainable_weights().size() == 2);  // the moving statistics
  model.layer<0>().set_trainable(false);
  model.layer<1>().set_trainable(false);
  CHECK(model.trainable_weights().size() == 2);
  CHECK(model.non_trainable_weights().size() == 6);
  const auto frozen_kernel = model.layer<0>().kernel.value().values();
  const std::vector<float> kernel_before(frozen_kernel.begin(), frozen_kernel.end());
  const auto moving = model.layer<1>().moving_mean.value().values();
  const std::vector<float> moving_before(moving.begin(), moving.end());
  const auto last = model.layer<2>().kernel.value().values();
  const std::vector<float> last_before(last.begin(), last.end());
  model.compile(optimizers::SGD(0.5), losses::MeanSquaredError());
  const auto x = tensor_of<float, dynamic, 4>({0.5f, -1.0f, 2.0f, 0.25f, 1.0f, 0.0f, -0.5f, 3.0f});
  model.train_on_batch(x, tensor_of<float, dynamic, 2>({1, 0, 0, 1}));
  CHECK(std::vector<float>(frozen_kernel.begin(), frozen_kernel.end()) == kernel_before);
  // A frozen BatchNormalization runs in inference mode: its moving statistics stay.
  CHECK(std::vector<float>(moving.begin(), moving.end()) == moving_before);
  CHECK(std::vector<float>(last.begin(), last.end()) != last_before);

  RuntimeModel runtime = RuntimeModel::from_config(model.get_config());
  CHECK(!runtime.layer(0).trainable());
  CHECK(runtime.trainable_weights().size() == 2);

  // Every layer frozen: a step trains nothing, and (as in Keras) does not count as an update:
  // iterations and the schedule stay; unfrozen again, the optimizer builds for the weights.
  Sequential<policies::float32, Input<4>, Dense<2>> frozen;
  frozen.compile(optimizers::SGD(schedules::ExponentialDecay(0.1, 1, 0.5)), losses::MeanSquaredError());
  frozen.layer<0>().set_trainable(false);
  const auto y = tensor_of<float, dynamic, 2>({1, 0, 0, 1});
  frozen.train_on_batch(x, y);
  CHECK(frozen.optimizer().iterations() == 0);
  frozen.layer<0>().set_trainable(true);
  frozen.train_on_batch(x, y);
  CHECK(frozen.optimizer().iterations() == 1);

  // A layer frozen after the optimizer's first step: its slots are for the old weights, so the
  // step says to compile again, as Keras needs, and changes nothing.
  Sequential<policies::float32, Input<4>, Dense<3>, Dense<2>> two;
  two.compile(optimizers::SGD(0.1, 0.9), losses::MeanSquaredError());
  two.train_on_batch(x, y);
  two.layer<0>().set_trainable(false);
  const auto kernel_values = two.layer<1>().kernel.value().values();
  const std::vector<float> kernel_now(kernel_values.begin(), kernel_values.end());
  CHECK_THROWS_WITH_AS(two.train_on_batch(x, y), doctest::Contains("received 2 variables, but the optimizer was built for 4 "
                                                                   "(the slots were made at the first apply(); a model whose "
                                                                   "trainable weights changed since, a layer frozen, unfrozen "
                                                                   "or quantized, must be compiled again)."),
                       std::invalid_argument);
  CHECK(std::vector<float>(kernel_values.begin(), kernel_values.end()) == kernel_now);
  two.compile(optimizers::SGD(0.1, 0.9), losses::MeanSquaredError());
  two.train_on_batch(x, y);
  CHECK(std::vector<float>(kernel_values.begin(), kernel_values.end()) != kernel_now);
}

TEST_CASE("dtypes: float32 gradients and slots under mixed policies, float16 under float16") {
  Sequential<policies::mixed_float16, Input<3>, Dense<2>> mixed;
  mixed.compile(optimizers::Adam(1e-3), losses::MeanSquaredError());
  const auto x = tensor_of<float, dynamic, 3>({1, 2, 3});
  mixed.train_on_batch(x, tensor_of<float, dynamic, 2>({1, 0}));
  static_assert(std::is_same_v<decltype(mixed.layer<0>().kernel)::true_dtype, float>);
  Sequential<policies::float16, Input<3>, Dense<2>> half;
  half.compile(optimizers::Adam(1e-3), losses::MeanSquaredError());
  half.train_on_batch(x, tensor_of<float, dynamic, 2>({1, 0}));
  for (const auto& handle : half.weights()) CHECK(handle.dtype == "float16");
  std::vector<gradient_and_variable> pairs;
  half.collect_gradients(pairs);
  for (const auto& pair : pairs) CHECK(std::holds_alternative<gradient_and_variable_of<float16>>(pair));
  mixed.collect_gradients(pairs);
  CHECK(std::holds_alternative<gradient_and_variable_of<float>>(pairs.back()));
}

TEST_CASE_TEMPLATE("inference calls keep the kernels packed until the weights change: the bits of a fresh model", P,
                   policies::float32, policies::mixed_bfloat16, policies::mixed_float16, policies::float64) {
  // Dense and Conv2D keep their kernel packed for the GEMM between inference calls (not in
  // training steps). After every way a weight can change (a training step, loading weights,
  // assigning to a variable) and after the GEMM's kernel changes (AMX switched off), a call must
  // give the bits of a model that has never packed anything.
  using model = cnn_model<P>;
  const auto make = [] {
    return model(Conv2D<6, 3, 3, activations::relu, padding::same>(), MaxPooling2D<2>(), BatchNormalization<>(),
                 Conv2D<4, 2, 2, activations::tanh, strides<1, 2>>(), Flatten<>(), Dropout<>(0.25, "dropout", 7),
                 Dense<12, activations::gelu>(), Dense<3>());
  };
  using C = typename P::compute_dtype;
  model trained = make();
  RuntimeModel runtime = RuntimeModel::from_config(trained.get_config());
  copy_weights(trained, runtime);
  const task t = make_task(16, 8 * 8 * 2, 3, 17);
  const auto x = tensor_of<float, dynamic, 8, 8, 2>(t.x);
  const Tensor<std::int32_t, dynamic> labels(t.labels);
  // A fresh model with `from`'s weights: its first call packs, from its own variables.
  const auto fresh_output = [&](auto& from) {
    model fresh = make();
    copy_weights(from, fresh);
    return bits_of(fresh(x));
  };
  const auto runtime_output = [&] { return bits_of(runtime(x).template to_tensor<C, dynamic, 3>()); };

  const auto first = bits_of(trained(x));
  CHECK(bits_of(trained(x)) == first);  // the packed kernels reused
  CHECK(runtime_output() == first);
  CHECK(fresh_output(trained) == first);

  trained.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  runtime.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  trained.train_on_batch(x, labels);
  runtime.train_on_batch(AnyTensor(x), AnyTensor(labels));
  const auto after_step = bits_of(trained(x));
  CHECK(after_step != first);
  CHECK(after_step == fresh_output(trained));
  CHECK(runtime_output() == after_step);

  model other = make();
  other.template layer<0>().kernel.fill(0.125);
  copy_weights(other, trained);  // loading weights
  copy_weights(other, runtime);
  const auto loaded = bits_of(trained(x));
  CHECK(loaded != after_step);
  CHECK(loaded == fresh_output(other));
  CHECK(runtime_output() == loaded);

  trained.template layer<7>().kernel.fill(-0.25);  // assigning to a variable
  trained.template layer<3>().kernel.assign_sub(trained.template layer<3>().kernel.value());
  const auto assigned = bits_of(trained(x));
  CHECK(assigned != loaded);
  CHECK(assigned == fresh_output(trained));

  if (kernels::detail::gemm_uses_amx_bf16()) {  // the packed bfloat16 kernels are AMX's: packed again
    kernels::detail::set_amx_bf16_enabled(false);
    const auto on_vdpbf16ps = fresh_output(trained);
    CHECK(bits_of(trained(x)) == on_vdpbf16ps);
    CHECK(runtime_output() == fresh_output(runtime));
    kernels::detail::set_amx_bf16_enabled(true);
  }
}

TEST_CASE_TEMPLATE("packed kernels: writes through values_to_update, another kernel target, copies of a model", P,
                   policies::float32, policies::mixed_bfloat16, policies::mixed_float16) {
  // A kernel over two depth blocks (300 > the Highway GEMM's 256) and wider than a vector (40
  // columns: the two-vector Highway kernel), then a narrow one.
  using model = Sequential<P, Input<300>, Dense<40, activations::relu>, Dense<3>>;
  const task t = make_task(20, 300, 3, 19);
  const auto x = tensor_of<float, dynamic, 300>(t.x);
  const auto fresh_output = [&](auto& from) {
    model fresh;
    copy_weights(from, fresh);
    return bits_of(fresh(x));
  };
  model m;
  const auto first = bits_of(m(x));
  CHECK(first == fresh_output(m));

  // An optimizer's write through values_to_update, with no training step in between.
  const std::span<float> kernel = m.template layer<0>().kernel.values_to_update();
  for (float& w : kernel) w *= 0.5f;
  const auto halved = bits_of(m(x));
  CHECK(halved != first);
  CHECK(halved == fresh_output(m));

  // A copy shares what its original packed; each packs again once its own weights change.
  model copy = m;
  CHECK(bits_of(copy(x)) == halved);
  copy.template layer<1>().kernel.fill(0.25);
  const auto changed = bits_of(copy(x));
  CHECK(changed != halved);
  CHECK(changed == fresh_output(copy));
  CHECK(bits_of(m(x)) == halved);

  // Another kernel target: packed again for it (the same bits as a model that packs there first).
  const auto targets = kernels::supported_targets();
  for (const std::string& target : targets) {
    kernels::target_scope scope(target);
    INFO("kernel target ", target);
    CHECK(bits_of(m(x)) == fresh_output(m));
  }
}

TEST_CASE("inference calls on one model from several threads at once: the bits of one thread") {
  // The threads share each layer's packed kernel: the first to call packs it, the others wait
  // for it and use it; after the weights change, the threads' next calls pack it again once.
  using model = Sequential<policies::mixed_bfloat16, Input<300>, Dense<40, activations::relu>, Dense<3>>;
  const task t = make_task(20, 300, 3, 23);
  const auto x = tensor_of<float, dynamic, 300>(t.x);
  model shared;
  model alone;
  copy_weights(shared, alone);
  for (int round = 0; round < 2; ++round) {
    const auto expected = bits_of(alone(x));
    std::vector<std::vector<std::byte>> results(4);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < results.size(); ++i)
      threads.emplace_back([&, i] {
        for (int call = 0; call < 3; ++call) results[i] = bits_of(shared(x));
      });
    for (auto& thread : threads) thread.join();
    for (const auto& result : results) CHECK(result == expected);
    shared.template layer<0>().kernel.fill(0.01);
    alone.template layer<0>().kernel.fill(0.01);
  }
}
