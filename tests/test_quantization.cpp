// Quantized Dense (Keras 3's Dense.quantize) on both model kinds. int8: the kernel's quantization
// against the spec's example, the layer against an independent emulation of the same arithmetic.
// float8: float8-rounded products, and the scales and amax histories after 3 steps against the
// formulas by hand. layer.quantize / model.quantize and their errors (which change nothing),
// Keras configs and weight files, DTypePolicyMap, training an int8 model's bias, a float8 model
// on both kinds, skipped steps and frozen layers.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <type_traits>
#include <vector>

#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>
#include <mixprec/training.hpp>

#include "model_weights.hpp"

using namespace mixprec;

namespace {

using int8_float32 = QuantizedPolicy<quantization::int8, policies::float32>;
using int8_mixed_bfloat16 = QuantizedPolicy<quantization::int8, policies::mixed_bfloat16>;

// The layer type says it is int8: an int8 kernel, from the policy, at compile time.
static_assert(Dense<64, int8_mixed_bfloat16>::policy::name == "int8_from_mixed_bfloat16");
static_assert(std::is_same_v<decltype(Dense<64, int8_mixed_bfloat16>::int8_kernel)::true_dtype, std::int8_t>);
static_assert(std::is_same_v<Dense<64, int8_mixed_bfloat16>::compute_dtype, bfloat16>);
static_assert(quantization_mode_of_v<int8_mixed_bfloat16> == quantization_mode::int8);
static_assert(quantization_mode_of_v<policies::mixed_bfloat16> == quantization_mode::none);
static_assert(kind_quantizes<layer_kinds::dense>(quantization_mode::int8));
static_assert(!kind_quantizes<layer_kinds::conv2d>(quantization_mode::int8));

struct temp_file {
  std::string path;
  explicit temp_file(const char* name) : path((std::filesystem::temp_directory_path() / name).string()) {}
  ~temp_file() { std::filesystem::remove(path); }
};

template <class T, std::size_t... E>
Tensor<T, dynamic, E...> wave(std::size_t batch, double phase = 0.0) {
  Tensor<T, dynamic, E...> x(batch);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = cast<T>(std::sin(0.37 * static_cast<double>(i) + phase) * 2.5);
  return x;
}

template <class Values>
std::vector<double> as_doubles(const Values& values) {
  std::vector<double> out;
  for (const auto& v : values) out.push_back(static_cast<double>(cast<double>(v)));
  return out;
}

/// Keras' abs-max quantization of one row, written out in float64 from the formula: the scale
/// is 127 / (max |x| + 1e-7) rounded to float, the products rounded as `Product` (the dtype the
/// layer multiplies in), then round-half-even and the clip.
template <class Product>
std::vector<std::int64_t> quantize_row(const std::vector<double>& row, float& scale) {
  double amax = 0.0;
  for (double v : row) amax = std::max(amax, std::abs(v));
  scale = std::is_same_v<Product, double> ? static_cast<float>(127.0 / (amax + 1e-7))
                                          : 127.0f / (static_cast<float>(amax) + 1e-7f);
  std::vector<std::int64_t> q;
  for (double v : row) {
    const double product = static_cast<double>(static_cast<Product>(v) * static_cast<Product>(scale));
    q.push_back(static_cast<std::int64_t>(std::clamp(std::nearbyint(product), -127.0, 127.0)));
  }
  return q;
}

}  // namespace

TEST_CASE("the spec's example: per-column scales, and the 1e-7 that turns 63.49999 into 63") {
  Dense<2, int8_float32, no_bias> layer("dense");
  Dense<2, policies::float32, no_bias> source("dense");
  source(wave<float, 2>(1));
  source.kernel.assign(Tensor<float, dynamic, 2>(std::vector<float>{0.25f, 1.0f, -2.0f, 0.5f}));
  source.quantize("int8");
  CHECK(source.dtype_policy().name() == "int8_from_float32");
  const auto q = source.int8_kernel.value().values();
  CHECK(std::vector<int>(q.begin(), q.end()) == std::vector<int>{16, 127, -127, 63});
  CHECK(source.kernel_scale.value()[0] == 127.0f / (2.0f + 1e-7f));
  CHECK(source.kernel_scale.value()[1] == 127.0f / (1.0f + 1e-7f));
  CHECK(source.kernel.size() == 0);  // the float kernel is gone, as in Keras
  // The layer quantized by its policy has the same weights in the same order.
  layer(wave<float, 2>(1));
  std::vector<std::string> names;
  layer.for_each_weight([&](const auto& w) { names.push_back(w.name()); });
  CHECK(names == std::vector<std::string>{"kernel", "kernel_scale"});
}

TEST_CASE("int8 Dense equals an independent emulation: exact int32 sums, one rounding of the compute dtype") {
  constexpr std::size_t in = 37, units = 19, batch = 5;
  const auto check = [&]<class P>(P) {
    using C = typename Dense<units, P>::compute_dtype;
    Dense<units, P, activations::linear> layer("dense");
    const auto x = wave<float, in>(batch, 0.3);
    layer(x);
    layer.quantize("int8");
    const auto y = layer(x);
    const auto kernel = layer.int8_kernel.value().values();
    const auto kernel_scale = as_doubles(layer.kernel_scale.value().values());
    const auto bias = as_doubles(layer.bias.compute_value().values());
    const auto x_in_c = as_doubles(tensor_cast<C>(x).values());
    using Product = std::conditional_t<std::is_same_v<C, double>, double, float>;
    for (std::size_t r = 0; r < batch; ++r) {
      float scale = 0.0f;
      const auto q = quantize_row<Product>({x_in_c.begin() + r * in, x_in_c.begin() + (r + 1) * in}, scale);
      for (std::size_t u = 0; u < units; ++u) {
        std::int64_t sum = 0;
        for (std::size_t i = 0; i < in; ++i) sum += q[i] * kernel[i * units + u];
        const double exact = static_cast<double>(sum) / (static_cast<double>(scale) * kernel_scale[u]) + bias[u];
        const double got = static_cast<double>(cast<double>(y[r * units + u]));
        // float32 arithmetic, then one rounding to C: within one unit in the last place of C
        // (float32's few roundings are far below bfloat16's).
        const double ulp = std::is_same_v<C, double> ? 1e-6 : std::is_same_v<C, float> ? 0x1p-21 : 0x1p-7;
        INFO("row " << r << " unit " << u);
        CHECK(std::abs(got - exact) <= ulp * std::abs(exact) + 1e-6);
      }
    }
  };
  check(policies::float32{});
  check(policies::mixed_bfloat16{});
  check(policies::bfloat16{});
  check(policies::float64{});
}

TEST_CASE("int8 Dense stays close to the float layer it came from") {
  Dense<64, policies::float32, activations::relu> layer("dense");
  const auto x = wave<float, 128>(16, 1.0);
  const auto y_float = layer(x);
  layer.quantize("int8");
  const auto y_int8 = layer(x);
  double worst = 0.0, largest = 0.0;
  for (std::size_t i = 0; i < y_float.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(y_float[i] - y_int8[i])));
    largest = std::max(largest, static_cast<double>(std::abs(y_float[i])));
  }
  CHECK(worst <= 0.02 * largest);  // two 8-bit roundings per product
}

TEST_CASE("quantize's errors are Keras', and change nothing") {
  Dense<3, policies::float32> unbuilt("dense");
  CHECK_THROWS_WITH_AS(unbuilt.quantize("int8"), "Cannot quantize a layer that isn't yet built.", std::invalid_argument);

  Dense<3, policies::float32> layer("dense");
  const auto x = wave<float, 4>(2);
  const auto before = layer(x);
  CHECK_THROWS_WITH_AS(layer.quantize("int4"),
                       "Invalid quantization mode. Expected one of ('int8', 'float8'). Received: mode=int4",
                       std::invalid_argument);
  CHECK(layer.quantization() == quantization_mode::none);
  CHECK(layer(x) == before);

  Dense<3, policies::mixed_float16> half("dense");
  half(x);
  CHECK_THROWS_WITH_AS(half.quantize("int8"), "Quantization mode='int8' doesn't work well with compute_dtype='float16'.",
                       std::invalid_argument);

  layer.quantize("int8");
  const auto quantized = layer(x);
  CHECK_THROWS_WITH_AS(layer.quantize("int8"),
                       "Layer 'dense' is already quantized with dtype_policy='int8_from_float32'. Received: mode=int8",
                       std::invalid_argument);
  CHECK(layer(x) == quantized);
}

TEST_CASE("model.quantize on both model kinds: the same bits, configs and weight files that round-trip") {
  using model_type = Sequential<policies::mixed_bfloat16, Input<24>, Dense<32, activations::relu>, Dropout<>,
                                Dense<16, activations::gelu>, Dense<5>>;
  model_type model;
  RuntimeModel runtime = RuntimeModel::from_config(model.get_config());
  test::copy_weights(model, runtime);
  const auto x = wave<float, 24>(7, 0.5);

  model.quantize("int8");
  runtime.quantize("int8");
  CHECK(runtime.layer(0).dtype_policy().name() == "int8_from_mixed_bfloat16");
  CHECK(runtime.layer(1).dtype_policy().name() == "mixed_bfloat16");  // Dropout has no int8 form
  CHECK(model.layer<0>().dtype_policy().name() == "int8_from_mixed_bfloat16");
  const auto expected = model(x);
  CHECK(test::weight_bytes(model) == test::weight_bytes(runtime));
  const auto got = runtime(x).to_tensor<bfloat16, dynamic, 5>();
  CHECK(got == expected);

  // Keras' variable order and dtypes; the int8 kernel takes a quarter of the float32 bytes.
  std::vector<std::string> paths, dtypes;
  for (const auto& w : model.weights()) {
    paths.push_back(w.path);
    dtypes.emplace_back(w.dtype);
  }
  CHECK(paths == std::vector<std::string>{"dense/kernel", "dense/bias", "dense/kernel_scale", "dense_1/kernel",
                                          "dense_1/bias", "dense_1/kernel_scale", "dense_2/kernel", "dense_2/bias",
                                          "dense_2/kernel_scale"});
  CHECK(dtypes[0] == "int8");
  CHECK(dtypes[2] == "float32");
  CHECK(model.weights()[0].bytes.size() == 24 * 32);

  // The config says int8; a model built from it (quantized from the start) loads the file.
  temp_file file("mixprec_test_quantized.weights");
  model.save_weights(file.path);
  RuntimeModel rebuilt = RuntimeModel::from_config(model.get_config());
  CHECK(rebuilt.layer(0).dtype_policy().class_name() == "QuantizedDTypePolicy");
  rebuilt.load_weights(file.path);
  CHECK(rebuilt(x).to_tensor<bfloat16, dynamic, 5>() == expected);
  // So does a compile-time model whose Dense layers have the int8 policy in their type.
  Sequential<int8_mixed_bfloat16, Input<24>, Dense<32, activations::relu>, Dropout<policies::mixed_bfloat16>,
             Dense<16, activations::gelu>, Dense<5>>
      typed;
  typed.load_weights(file.path);
  CHECK(typed(x) == expected);

  // A float file does not load into the int8 model (its kernel would not be int8).
  model_type float_model;
  temp_file float_file("mixprec_test_float.weights");
  float_model.save_weights(float_file.path);
  CHECK_THROWS_WITH_AS(rebuilt.load_weights(float_file.path), doctest::Contains("is float32 in the file but int8 in the model"),
                       std::invalid_argument);
  CHECK(rebuilt(x).to_tensor<bfloat16, dynamic, 5>() == expected);

  // Quantizing again is an error for the first Dense, and nothing changes anywhere.
  CHECK_THROWS_WITH_AS(runtime.quantize("int8"), doctest::Contains("is already quantized"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(float_model.quantize("int2"), doctest::Contains("Invalid quantization mode"), std::invalid_argument);
  CHECK(float_model.layer<0>().quantization() == quantization_mode::none);
}

TEST_CASE("a DTypePolicyMap drives quantized runtime layers; a kind without an int8 form is an error naming it") {
  DTypePolicyMap map(DTypePolicy("float32"));
  map.set("layer/dense_1", QuantizedDTypePolicy("int8", "bfloat16"));  // seed 003
  RuntimeModel model({8}, {layer_configs::dense(6, "relu"), layer_configs::dense(4)}, "layer", map);
  CHECK(model.layer(0).dtype_policy().name() == "float32");
  CHECK(model.layer(1).dtype_policy().name() == "int8_from_bfloat16");
  std::vector<std::string> dtypes;
  for (const auto& w : model.weights()) dtypes.emplace_back(w.dtype);
  CHECK(dtypes == std::vector<std::string>{"float32", "float32", "int8", "bfloat16", "bfloat16"});
  CHECK(model(wave<float, 8>(3)).dtype() == "bfloat16");

  CHECK_THROWS_WITH_AS(RuntimeModel({6, 6, 1}, {layer_configs::conv2d(2, 3, 3, "linear", "valid", 1, 1, dtype_policies::serialize(QuantizedDTypePolicy("int8", "float32")))}),
                       doctest::Contains("is quantized (int8), which Conv2D layers do not support"), std::invalid_argument);
}

TEST_CASE("an int8 model trains its biases; its kernels stay frozen") {
  using model_type = Sequential<policies::float32, Input<12>, Dense<16, activations::tanh>, Dense<3>>;
  model_type model;
  model.compile(optimizers::SGD(0.05), losses::SparseCategoricalCrossentropy(true));
  model.quantize("int8");
  const auto x = wave<float, 12>(8);
  Tensor<std::int32_t, dynamic> y(std::vector<std::int32_t>{0, 1, 2, 0, 1, 2, 0, 1});
  CHECK_THROWS_WITH_AS(model.train_on_batch(x, y), doctest::Contains("compile"), std::logic_error);  // quantize uncompiles
  model.compile(optimizers::SGD(0.05), losses::SparseCategoricalCrossentropy(true));
  CHECK(model.trainable_weights().size() == 2);  // the two biases
  const auto kernel = model.layer<0>().int8_kernel.value();
  const auto bias = model.layer<0>().bias.value();
  const double first = model.train_on_batch(x, y).at("loss");
  for (int step = 0; step < 20; ++step) model.train_on_batch(x, y);
  CHECK(model.train_on_batch(x, y).at("loss") < first);
  CHECK(model.layer<0>().int8_kernel.value() == kernel);
  CHECK_FALSE(model.layer<0>().bias.value() == bias);  // the input gradient reached the first layer
}

// ---- float8 (delayed scaling) ----

namespace {

/// Keras' quantize_and_dequantize to F with a scale, written out in float64: x / scale clipped to
/// F's range, rounded to F (mixprec's codec, tested exhaustively elsewhere), times the scale.
template <class F>
double qdq(double x, double scale, double fp8_max) {
  const double scaled = std::clamp(static_cast<double>(static_cast<float>(x) / static_cast<float>(scale)), -fp8_max, fp8_max);
  return static_cast<double>(cast<float>(cast<F>(static_cast<float>(scaled)))) * scale;
}

template <class Values>
double max_abs(const Values& values) {
  double m = 0.0;
  for (const auto& v : values) m = std::max(m, std::abs(static_cast<double>(cast<double>(v))));
  return m;
}

}  // namespace

TEST_CASE("float8 Dense computes on float8-rounded inputs and kernel; inference leaves its scales alone") {
  Dense<6, QuantizedFloat8Policy<policies::float32, 4>, activations::linear> layer("dense");
  static_assert(quantization_mode_of_v<Dense<6, QuantizedFloat8Policy<policies::float32, 4>>::policy> == quantization_mode::float8);
  const auto x = wave<float, 10>(3, 0.2);
  layer(x);  // builds: scales 1, histories of 4 zeros
  CHECK(layer.inputs_amax_history.size() == 4);
  CHECK(layer.dtype_policy().class_name() == "QuantizedFloat8DTypePolicy");
  Dense<6, policies::float32> source("dense");
  source(x);
  layer.kernel.assign(source.kernel.value());
  const auto y = layer.training_call(x);  // a training-mode call is not a training step: no update
  CHECK(layer.inputs_scale.value()[0] == 1.0f);
  CHECK(max_abs(layer.inputs_amax_history.value().values()) == 0.0);
  const auto k = layer.kernel.value();
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t u = 0; u < 6; ++u) {
      double sum = 0.0;
      for (std::size_t i = 0; i < 10; ++i)
        sum += qdq<float8_e4m3fn>(x[r * 10 + i], 1.0, 448.0) * qdq<float8_e4m3fn>(k[i * 6 + u], 1.0, 448.0);
      CHECK(std::abs(y[r * 6 + u] - sum) <= 1e-5 * (1.0 + std::abs(sum)));
    }
}

TEST_CASE("float8 scales and amax histories after 3 steps equal the formulas computed by hand") {
  using model_type = Sequential<QuantizedFloat8Policy<policies::float32, 3>, Input<5>, Dense<4>>;
  model_type model;
  model.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
  auto& dense = model.layer<0>();
  std::vector<double> inputs_history(3, 0.0), kernel_history(3, 0.0), grad_history(3, 0.0);
  double inputs_scale = 1.0, kernel_scale = 1.0, grad_scale = 1.0;
  const auto roll = [](std::vector<double>& history, double amax) {
    std::rotate(history.begin(), history.begin() + 1, history.end());
    history[0] = amax;
  };
  const auto next_scale = [](double scale, const std::vector<double>& history, double fp8_max) {
    const double amax = *std::max_element(history.begin(), history.end());
    return amax > 0 ? static_cast<double>(1.0f / (static_cast<float>(fp8_max) / static_cast<float>(amax))) : scale;
  };
  for (int step = 0; step < 3; ++step) {
    const auto x = wave<float, 5>(6, step);
    Tensor<float, dynamic, 4> target(6);
    for (std::size_t i = 0; i < target.size(); ++i) target[i] = static_cast<float>(i % 3) - 1.0f;
    // The output gradient MSE hands the layer: 2 (y - t) / size, from the forward pass the step
    // will run (inference computes the same product with the same scales).
    const auto y = model(x);
    double grad_amax = 0.0;
    for (std::size_t i = 0; i < y.size(); ++i)
      grad_amax = std::max(grad_amax, std::abs(2.0 * (static_cast<double>(y[i]) - target[i]) / static_cast<double>(y.size())));
    const double kernel_amax = max_abs(dense.kernel.value().values());
    inputs_scale = next_scale(inputs_scale, inputs_history, 448.0);
    kernel_scale = next_scale(kernel_scale, kernel_history, 448.0);
    grad_scale = next_scale(grad_scale, grad_history, 57344.0);
    roll(inputs_history, max_abs(x.values()));
    roll(kernel_history, kernel_amax);
    roll(grad_history, grad_amax);
    model.train_on_batch(x, target);
    INFO("step " << step + 1);
    CHECK(dense.inputs_scale.value()[0] == static_cast<float>(inputs_scale));
    CHECK(dense.kernel_scale.value()[0] == static_cast<float>(kernel_scale));
    CHECK(dense.outputs_grad_scale.value()[0] == doctest::Approx(grad_scale).epsilon(1e-6));
    CHECK(as_doubles(dense.inputs_amax_history.value().values()) == inputs_history);
    CHECK(as_doubles(dense.kernel_amax_history.value().values()) == kernel_history);
    for (std::size_t i = 0; i < 3; ++i)
      CHECK(dense.outputs_grad_amax_history.value()[i] == doctest::Approx(grad_history[i]).epsilon(1e-6));
  }
  CHECK(inputs_scale != 1.0);  // step 3 used a delayed scale
}

TEST_CASE("float8 trains the same bits on both model kinds; a skipped step leaves scales and histories alone") {
  using model_type = Sequential<policies::mixed_float16, Input<8>, Dense<6, activations::relu>, Dense<3>>;
  model_type model;
  model.quantize("float8");
  RuntimeModel runtime = RuntimeModel::from_config(model.get_config());
  test::copy_weights(model, runtime);
  CHECK(runtime.layer(0).dtype_policy().name() == "float8_from_mixed_float16");
  model.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true));
  runtime.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true));
  Tensor<std::int32_t, dynamic> y(std::vector<std::int32_t>{0, 1, 2, 0, 1});
  for (int step = 0; step < 4; ++step) {
    const auto x = wave<float, 8>(5, step * 0.7);
    CHECK(model.train_on_batch(x, y).at("loss") == runtime.train_on_batch(AnyTensor(x), AnyTensor(y)).at("loss"));
  }
  CHECK(test::weight_bytes(model) == test::weight_bytes(runtime));
  CHECK(model.loss_scale_optimizer() != nullptr);  // float16 compute: loss scaling on

  // An overflowing step is skipped: nothing changes, the float8 state included. (A loss scale of
  // 2^100 overflows float16 in the loss gradient; float8's clipping does not hide it, since the
  // bias gradient comes from the unrounded output gradient.)
  model.compile(optimizers::LossScaleOptimizer(optimizers::Adam(1e-2), std::ldexp(1.0, 100)),
                losses::SparseCategoricalCrossentropy(true));
  const auto before = test::weight_bytes(model);
  const Logs logs = model.train_on_batch(wave<float, 8>(5), y);
  CHECK(logs.at("skipped") == 1.0);
  CHECK(test::weight_bytes(model) == before);
}

TEST_CASE("a layer whose policy is no quantization source is not quantized, and keeps its weights") {
  Dense<3, Policy<float, bfloat16>> layer("dense");  // compute float32, variables bfloat16: no Keras policy
  const auto x = wave<float, 4>(2);
  const auto before = layer(x);
  CHECK_THROWS_WITH_AS(layer.quantize("int8"), doctest::Contains("Quantization needs a floating source policy"),
                       std::invalid_argument);
  CHECK(layer.quantization() == quantization_mode::none);
  CHECK(layer(x) == before);
}

TEST_CASE("model.quantize checks the mode first, and a model without Dense stays compiled") {
  using model_type = Sequential<policies::float32, Input<4>, Dropout<>>;
  model_type model;
  model.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
  CHECK_THROWS_WITH_AS(model.quantize("int4"), doctest::Contains("Invalid quantization mode"), std::invalid_argument);
  model.quantize("int8");  // nothing to quantize: nothing changes
  const auto x = wave<float, 4>(2);
  CHECK_NOTHROW(model.train_on_batch(x, x));

  RuntimeModel runtime({4}, {layer_configs::layer("Dropout", {{"rate", 0.5}}, {}, "dropout")});
  runtime.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
  CHECK_THROWS_WITH_AS(runtime.quantize("int4"), doctest::Contains("Invalid quantization mode"), std::invalid_argument);
  runtime.quantize("float8");
  CHECK_NOTHROW(runtime.train_on_batch(AnyTensor(x), AnyTensor(x)));
  CHECK_THROWS_WITH_AS(runtime.layer(0).quantize("int8"), "Layer 'dropout' (Dropout) has no quantized form; Dense layers do.",
                       std::invalid_argument);
}

TEST_CASE("Keras' order of quantize's checks; float8 layers are quantized once") {
  Dense<3, policies::float32> unbuilt("dense");
  CHECK_THROWS_WITH_AS(unbuilt.quantize("int4"), "Cannot quantize a layer that isn't yet built.", std::invalid_argument);
  Dense<3, policies::float32> layer("dense");
  layer(wave<float, 4>(2));
  layer.quantize("float8");
  CHECK_THROWS_WITH_AS(layer.quantize("int8"),
                       "Layer 'dense' is already quantized with dtype_policy='float8_from_float32'. Received: mode=int8",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(layer.quantize("int4"), doctest::Contains("is already quantized"), std::invalid_argument);
}

TEST_CASE("an int8 kernel's depth is limited to what int32 sums hold: refused before anything changes") {
  Dense<2, policies::float32> layer("dense");
  const Tensor<float, dynamic, 140000> x(1);
  const auto before = layer(x);
  CHECK_THROWS_WITH_AS(layer.quantize("int8"), doctest::Contains("an int8 kernel takes at most 131071 input features"),
                       std::invalid_argument);
  CHECK(layer.quantization() == quantization_mode::none);
  CHECK(layer(x) == before);
}

TEST_CASE("a model whose later layer is too deep for int8 is refused whole: no layer is quantized, it stays compiled") {
  using model_type = Sequential<policies::float32, Input<4>, Dense<140000>, Dense<2>>;
  model_type model;
  RuntimeModel runtime = RuntimeModel::from_config(model.get_config());
  test::copy_weights(model, runtime);
  const auto x = wave<float, 4>(2);
  const auto y = wave<float, 2>(2);
  const auto before = model(x);
  const auto runtime_before = runtime(x).to_tensor<float, dynamic, 2>();
  model.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
  runtime.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
  const char* const refusal = "an int8 kernel takes at most 131071 input features";
  CHECK_THROWS_WITH_AS(model.quantize("int8"), doctest::Contains(refusal), std::invalid_argument);
  CHECK(model.layer<0>().quantization() == quantization_mode::none);
  CHECK(model.layer<0>().dtype_policy().name() == "float32");
  CHECK(model(x) == before);
  CHECK(model.trainable_weights().size() == 4);
  CHECK_NOTHROW(model.train_on_batch(x, y));

  CHECK_THROWS_WITH_AS(runtime.quantize("int8"), doctest::Contains(refusal), std::invalid_argument);
  CHECK(runtime.layer(0).dtype_policy().name() == "float32");
  CHECK(runtime(x).to_tensor<float, dynamic, 2>() == runtime_before);
  CHECK(runtime.trainable_weights().size() == 4);
  CHECK_NOTHROW(runtime.train_on_batch(AnyTensor(x), AnyTensor(y)));
}

TEST_CASE("float8 without bias and with an activation that keeps its pre-activation; a frozen float8 layer keeps its scales") {
  using model_type = Sequential<policies::float32, Input<6>, Dense<5, activations::gelu, no_bias>, Dense<3>>;
  model_type model;
  model.quantize("float8");
  RuntimeModel runtime = RuntimeModel::from_config(model.get_config());
  test::copy_weights(model, runtime);
  model.compile(optimizers::SGD(0.05), losses::SparseCategoricalCrossentropy(true));
  runtime.compile(optimizers::SGD(0.05), losses::SparseCategoricalCrossentropy(true));
  Tensor<std::int32_t, dynamic> y(std::vector<std::int32_t>{0, 1, 2, 1});
  for (int step = 0; step < 3; ++step) {
    const auto x = wave<float, 6>(4, step);
    CHECK(model.train_on_batch(x, y).at("loss") == runtime.train_on_batch(AnyTensor(x), AnyTensor(y)).at("loss"));
  }
  CHECK(test::weight_bytes(model) == test::weight_bytes(runtime));
  CHECK(model.layer<0>().inputs_scale.value()[0] != 1.0f);  // scales move with training

  model.layer<0>().set_trainable(false);
  model.compile(optimizers::SGD(0.05), losses::SparseCategoricalCrossentropy(true));
  std::vector<std::vector<std::byte>> frozen;
  model.layer<0>().for_each_weight([&](const auto& w) {
    const auto bytes = std::as_bytes(w.value().values());
    frozen.emplace_back(bytes.begin(), bytes.end());
  });
  model.train_on_batch(wave<float, 6>(4, 9.0), y);
  std::size_t i = 0;
  model.layer<0>().for_each_weight([&](const auto& w) {
    const auto bytes = std::as_bytes(w.value().values());
    CHECK(std::vector<std::byte>(bytes.begin(), bytes.end()) == frozen[i++]);
  });
}
