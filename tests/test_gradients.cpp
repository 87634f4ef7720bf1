// compute_gradients against independent references.
//
// float64: every layer kind and every loss, each gradient entry against the central difference
//   (L(w + h) - L(w - h)) / 2h of a float64 loss written out here (the library's losses compute
//   in float32, as Keras' do, so differencing their value could not resolve 1e-6).
// Other policies (test_gradients_policies.cpp): the gradients of the same model at the same
//   (rounded) weights against the float64 gradients, within a bound made of the compute dtype's
//   unit roundoff; the checker itself must reject a gradient with a wrong sign or a missing term.
// The data, the models and the checkers: gradient_check.hpp.
// Also: the dtypes and shapes of the gradients, the RuntimeModel built from the same config gives
// the same bits, nothing changes when gradients are computed, the errors.
#include <doctest/doctest.h>

#include "gradient_check.hpp"

using namespace mixprec;
using namespace gradient_check;

TEST_CASE("float64: every layer kind's gradients against central finite differences") {
  std::uint64_t seed = 100;
  for_each_layer_case([&]<class Case>(const loss_case& lc) { check_float64<Case>(lc, seed += 10); });
  check_float64<chunked_conv_first_layer_case>(sparse_logits, 700);
}

TEST_CASE("float64: every loss's gradients against central finite differences") {
  std::uint64_t seed = 500;
  for_each_loss([&]<class Case>(const loss_case& lc) { check_float64<Case>(lc, seed += 10); });
}


TEST_CASE_TEMPLATE("Sequential and RuntimeModel compute the same gradients", P, policies::float64, policies::float32,
                   policies::mixed_bfloat16, policies::mixed_float16, policies::bfloat16, policies::float16) {
  check_runtime_model<pooling_case<MaxPooling2D<2>>, P>(sparse_logits, 21);
  check_runtime_model<pooling_case<MaxPooling2D<2>, activations::linear>, P>(mse, 26);
  check_runtime_model<pooling_under_conv_case, P>(sparse_logits, 27);
  check_runtime_model<dropout_case, P>(mse, 22);
  check_runtime_model<regularized, P>(mse, 23);
  check_runtime_model<batch_normalization_conv, P>(sparse_logits, 24);
  check_runtime_model<chunked_conv_case, P>(sparse_logits, 25);
}

TEST_CASE_TEMPLATE("Conv2D and MaxPooling2D over many chunks of samples: the same gradients on 1, 2 and 3 threads", P,
                   policies::float64, policies::float32, policies::mixed_bfloat16, policies::mixed_float16) {
  // Both kinds in several chunks (chunked_conv_case), max pooling between them (on its own) and
  // after (over the output the relu Conv2D lends it).
  using Model = Sequential<P, Input<28, 28, 2>, Conv2D<4, 3, 3, activations::tanh>, MaxPooling2D<2>,
                           Conv2D<3, 3, 3, activations::relu, padding::same>, MaxPooling2D<3, 3, strides<2>>,
                           Flatten<>, Dense<3>>;
  Model model;
  randomize(model, 41);
  model.compile(optimizers::SGD(0.1), sparse_logits.loss);
  const batch<Model> data(chunked_conv_case::rows, sparse_logits.targets, 42);
  const std::size_t threads_before = kernels::num_threads();
  kernels::set_num_threads(1);
  const Gradients one = data.gradients(model);
  for (std::size_t threads : {2, 3}) {
    CAPTURE(threads);
    kernels::set_num_threads(threads);
    const Gradients many = data.gradients(model);
    CHECK(many.loss == one.loss);
    CHECK(bytes_of(many) == bytes_of(one));
  }
  kernels::set_num_threads(threads_before);
}

TEST_CASE_TEMPLATE("compute_gradients changes nothing, and gives what train_on_batch applies", P, policies::float64,
                   policies::mixed_float16) {
  // BatchNormalization (moving statistics) and Dropout (its generator) between two Dense layers.
  using Model = Sequential<P, Input<4>, Dense<6, activations::relu>, BatchNormalization<>, Dropout<>, Dense<3>>;
  const auto make = [] {
    return Model(Dense<6, activations::relu>(), BatchNormalization<>(), Dropout<>(0.3, "dropout", 9), Dense<3>());
  };
  Model a = make(), b = make();
  randomize(a, 31);
  copy_weights(a, b);
  a.compile(optimizers::SGD(1.0), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  b.compile(optimizers::SGD(1.0), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  const batch<Model> data(8, target_kind::class_ids, 32);
  const batch<Model> other(8, target_kind::class_ids, 33);

  // Two calls, the same bits: the same Dropout mask, the same batch statistics.
  const Gradients first = data.gradients(a);
  const Gradients second = data.gradients(a);
  CHECK(first.loss == second.loss);
  CHECK(bytes_of(first) == bytes_of(second));
  // Nothing written: the weights and the moving statistics (non-trainable weights) are b's.
  CHECK(weight_bytes(a) == weight_bytes(b));
  // A call on another batch in between changes nothing either.
  data.gradients(a);
  other.gradients(a);
  // The next steps go exactly as in the model that never computed gradients (generator, moving
  // statistics, metrics), and the loss is the one train_on_batch reports.
  const Logs step_a = data.train(a);
  const Logs step_b = data.train(b);
  CHECK(step_a == step_b);
  CHECK(step_a.at("loss") == first.loss);
  CHECK(weight_bytes(a) == weight_bytes(b));
  CHECK(data.gradients(a).loss == data.gradients(b).loss);
  CHECK(other.train(a) == other.train(b));
  CHECK(weight_bytes(a) == weight_bytes(b));

  // SGD(1.0) applied w -= g: the step moved each weight by the gradient computed before it (to
  // the rounding of the subtraction in the variable dtype).
  Model c = make();
  randomize(c, 31);
  c.compile(optimizers::SGD(1.0), losses::SparseCategoricalCrossentropy(true));
  std::vector<std::vector<double>> weights_before;
  for (const auto& w : c.trainable_weights()) weights_before.push_back(as_doubles(w));
  const Gradients g = data.gradients(c);
  data.train(c);
  const auto after = c.trainable_weights();
  for (std::size_t i = 0; i < after.size(); ++i) {
    const std::vector<double> w1 = as_doubles(after[i]), grad = as_doubles(g.gradients[i]);
    for (std::size_t j = 0; j < w1.size(); ++j) {
      const double expected = weights_before[i][j] - grad[j];
      CHECK(std::abs(w1[j] - expected) <= 1e-6 * std::abs(expected) + 1e-30);
    }
  }
}

TEST_CASE("compute_gradients: the errors of train_on_batch") {
  using Model = Sequential<policies::mixed_bfloat16, Input<3>, Dense<2>>;
  Model model;
  const Tensor<float, dynamic, 3> x({1, 2, 3, 4, 5, 6});
  CHECK_THROWS_WITH_AS(model.compute_gradients(x, Tensor<std::int32_t, dynamic>({0, 1})),
                       "You must call `compile()` before using the model.", std::logic_error);
  RuntimeModel runtime = RuntimeModel::from_config(model.get_config());
  CHECK_THROWS_WITH_AS(runtime.compute_gradients(AnyTensor(x), AnyTensor({2}, std::vector<std::int32_t>{0, 1})),
                       "You must call `compile()` before using the model.", std::logic_error);

  model.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  runtime.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  const auto weights = weight_bytes(model);
  CHECK_THROWS_WITH_AS(model.compute_gradients(x, Tensor<std::int32_t, dynamic>({0, 2})),
                       "Received a label value of 2 which is outside the valid range of [0, 2).", std::invalid_argument);
  CHECK_THROWS_AS(model.compute_gradients(x, Tensor<std::int32_t, dynamic>({0, 1, 1})), std::invalid_argument);
  Tensor<float, dynamic, 3> bad = x;
  bad[1] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH_AS(model.compute_gradients(bad, Tensor<std::int32_t, dynamic>({0, 1})),
                       doctest::Contains("non-finite"), std::invalid_argument);
  CHECK(weight_bytes(model) == weights);

  CHECK_THROWS_WITH_AS(runtime.compute_gradients(AnyTensor(x), AnyTensor({3}, std::vector<std::int32_t>{0, 1, 1})),
                       "RuntimeModel 'sequential': labels of shape (3,) (int32) do not fit the output (2, 2): class ids "
                       "come one per row.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(runtime.compute_gradients(AnyTensor(x), AnyTensor({2}, std::vector<float>{0, 1})),
                       doctest::Contains("floating targets need the output's shape"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(runtime.compute_gradients(AnyTensor({2, 4}, std::vector<float>(8, 1.0f)),
                                                 AnyTensor({2}, std::vector<std::int32_t>{0, 1})),
                       doctest::Contains("expects inputs of shape (batch, 3)"), std::invalid_argument);

  // A model whose gradients are all there is: Dense's kernel and bias, float32 under mixed_bfloat16.
  const Gradients g = runtime.compute_gradients(AnyTensor(x), AnyTensor({2}, std::vector<std::int64_t>{0, 1}));
  REQUIRE(g.gradients.size() == 2);
  CHECK(g.gradients[0].dtype() == "float32");
  CHECK(g.gradients[0].extents() == std::vector<std::size_t>{3, 2});
  CHECK(g.gradients[1].extents() == std::vector<std::size_t>{2});
}
