// Loss scaling: tf.keras 2.2's loss scales and experimental Policy, Keras 3's LossScaleOptimizer
// (with tf.keras' floor and growth guard, and mixprec's stall error), compile() choosing it from
// the model's policy, and train_on_batch with it on both model kinds: skipped steps change
// nothing, the scale moves as the rules say, and loss scaling rescues float16 gradients that
// would underflow.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>
#include <mixprec/runtime.hpp>
#include <mixprec/training.hpp>

#include "model_weights.hpp"

using namespace mixprec;
using mixed_precision::experimental::DynamicLossScale;
using mixed_precision::experimental::FixedLossScale;
using mixed_precision::experimental::LossScale;
using mixprec::test::copy_weights;
using mixprec::test::weight_bytes;

namespace {

template <class T>
std::string text_of(const T& value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

/// A float32 variable and its gradient, for the optimizer tests.
struct variable {
  std::vector<float> value, gradient;
  gradient_and_variable pair() { return gradient_and_variable_of<float>{gradient, value}; }
};

/// The slots and iterations of an Adam optimizer, to compare bit for bit.
std::vector<float> adam_state(const optimizers::Optimizer& adam) {
  std::vector<float> state;
  for (const char* name : {"momentum", "velocity"})
    for (float v : adam.slot<float>(0, name)) state.push_back(v);
  state.push_back(static_cast<float>(adam.iterations()));
  return state;
}

/// The policy type of a model that names its loss scale.
struct fixed_1024 : policies::mixed_float16 {
  using loss_scale = loss_scales::fixed<1024>;
};
struct unscaled_float16 : policies::mixed_float16 {
  using loss_scale = loss_scales::none;
};
struct small_dynamic : policies::mixed_float16 {
  using loss_scale = loss_scales::dynamic<256, 3>;
};

template <class P>
using mlp = Sequential<P, Input<4>, Dense<6, activations::relu>, BatchNormalization<>, Dense<3>>;

Tensor<float, dynamic, 4> inputs() {
  return Tensor<float, dynamic, 4>(value_buffer<float>{0.5f, -1.0f, 2.0f, 0.25f, 1.0f, 0.0f, -0.5f, 3.0f, 0.1f, 0.2f, -2.0f, 1.5f});
}
Tensor<std::int32_t, dynamic> labels() { return Tensor<std::int32_t, dynamic>(std::vector<std::int32_t>{0, 2, 1}); }

}  // namespace

TEST_CASE("FixedLossScale: tf.keras 2.2's rules, config and repr") {
  FixedLossScale scale(128);
  CHECK(scale() == 128.0f);
  CHECK(scale.update(false));  // never skips
  CHECK(scale() == 128.0f);
  CHECK(scale.get_config().dump() == R"({"loss_scale_value":128.0})");
  CHECK(text_of(scale) == "FixedLossScale(128.0)");
  CHECK_THROWS_WITH_AS(FixedLossScale(0.5), "loss_scale_value must be at least 1.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(FixedLossScale(1e39), doctest::Contains("finite float32"), std::invalid_argument);
}

TEST_CASE("DynamicLossScale: growth after increment_period finite steps, halving, floor, growth guard") {
  DynamicLossScale scale(8, 3);
  CHECK(scale() == 8.0f);
  CHECK(scale.update(true));
  CHECK(scale.update(true));
  CHECK(scale() == 8.0f);
  CHECK(scale.num_good_steps() == 2);
  CHECK(scale.update(true));  // the third in a row
  CHECK(scale() == 16.0f);
  CHECK(scale.num_good_steps() == 0);
  CHECK(scale.update(true));
  CHECK_FALSE(scale.update(false));  // skipped: halves, restarts the count
  CHECK(scale() == 8.0f);
  CHECK(scale.num_good_steps() == 0);
  for (int i = 0; i < 10; ++i) scale.update(false);
  CHECK(scale() == 1.0f);  // tf.keras' floor

  DynamicLossScale floor(8, 3, 2.0, 0.25);
  for (int i = 0; i < 10; ++i) floor.update(false);
  CHECK(floor() == 0.25f);
  CHECK(floor.at_minimum());

  // Growth only when the product is finite in float32.
  DynamicLossScale huge(0x1p127, 1);
  CHECK(huge.update(true));
  CHECK(huge() == 0x1p127f);
  CHECK(huge.num_good_steps() == 0);

  DynamicLossScale three(27, 1, 3.0);
  three.update(true);
  CHECK(three() == 81.0f);
  three.update(false);
  CHECK(three() == 27.0f);

  CHECK(DynamicLossScale().get_config().dump() ==
        R"({"initial_loss_scale":32768.0,"increment_period":2000,"multiplier":2.0})");
  CHECK(DynamicLossScale(4, 5, 2, 0.5).get_config().dump() ==
        R"({"initial_loss_scale":4.0,"increment_period":5,"multiplier":2.0,"minimum_scale":0.5})");
  CHECK(text_of(scale) ==
        "DynamicLossScale(current_loss_scale=1.0, num_good_steps=0, initial_loss_scale=8.0, increment_period=3, "
        "multiplier=2.0)");
  CHECK_THROWS_WITH_AS(DynamicLossScale(0), doctest::Contains("`initial_loss_scale` must be a finite float32 number > 0"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(DynamicLossScale(8, 0), doctest::Contains("`increment_period` must be an integer >= 1. Received: 0"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(DynamicLossScale(8, 5, 1.0), doctest::Contains("`multiplier` must be a finite number > 1"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(DynamicLossScale(8, 5, 2.0, 16), doctest::Contains("`minimum_scale` must be a float32 number > 0 and at most"),
                       std::invalid_argument);
  // The scale lives in float32: a floor that rounds to 0 there is rejected.
  CHECK_THROWS_WITH_AS(DynamicLossScale(8, 5, 2.0, 1e-50), doctest::Contains("`minimum_scale`"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(DynamicLossScale(1e-50), doctest::Contains("`initial_loss_scale`"), std::invalid_argument);
}

TEST_CASE("loss scale identifiers") {
  using mixed_precision::experimental::get;
  CHECK_FALSE(get(nullptr).has_value());
  CHECK(std::get<FixedLossScale>(*get(1024))() == 1024.0f);
  CHECK(std::get<DynamicLossScale>(*get("dynamic")) == DynamicLossScale());
  const LossScale round_trip = *get(mixed_precision::experimental::serialize(DynamicLossScale(64, 10, 4.0, 2.0)));
  CHECK(std::get<DynamicLossScale>(round_trip) == DynamicLossScale(64, 10, 4.0, 2.0));
  CHECK(std::get<FixedLossScale>(*get(nlohmann::json::parse(
            R"({"class_name": "FixedLossScale", "config": {"loss_scale_value": 8}})")))() == 8.0f);
  for (const char* bad : {R"("static")", "true", "[1]", R"({"class_name": "LossScale", "config": {}})"})
    CHECK_THROWS_WITH_AS(get(nlohmann::json::parse(bad)),
                         doctest::Contains(("Could not interpret loss scale identifier: " + nlohmann::json::parse(bad).dump()).c_str()),
                         std::invalid_argument);
  CHECK_THROWS_WITH_AS(get(nlohmann::json::parse(R"({"class_name": "DynamicLossScale", "config": {"period": 3}})")),
                       doctest::Contains("unknown config key 'period'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(get(nlohmann::json::parse(R"({"class_name": "DynamicLossScale", "config": {"increment_period": 2.5}})")),
                       doctest::Contains("'increment_period' must be an integer"), std::invalid_argument);
}

TEST_CASE("the experimental Policy: auto, explicit, none, config, repr, warning, serialization") {
  using mixed_precision::experimental::Policy;
  std::ostringstream warnings;
  std::ostream* const saved = mixed_precision::experimental::warning_stream();
  mixed_precision::experimental::warning_stream() = &warnings;

  const Policy automatic("mixed_float16");
  REQUIRE(automatic.loss_scale().has_value());
  CHECK(std::get<DynamicLossScale>(*automatic.loss_scale()) == DynamicLossScale());
  CHECK(automatic.using_default_loss_scale());
  CHECK(automatic.get_config().dump() == R"({"name":"mixed_float16"})");
  CHECK(text_of(automatic) ==
        "<Policy \"mixed_float16\", loss_scale=DynamicLossScale(current_loss_scale=32768.0, num_good_steps=0, "
        "initial_loss_scale=32768.0, increment_period=2000, multiplier=2.0)>");
  CHECK_FALSE(Policy("mixed_bfloat16").loss_scale().has_value());
  CHECK_FALSE(Policy("float32").loss_scale().has_value());
  CHECK(text_of(Policy("float32")) == "<Policy \"float32\", loss_scale=None>");
  CHECK(warnings.str().empty());

  const Policy fixed("mixed_float16", 1024);
  CHECK(std::get<FixedLossScale>(*fixed.loss_scale())() == 1024.0f);
  CHECK(fixed.get_config().dump() ==
        R"({"name":"mixed_float16","loss_scale":{"class_name":"FixedLossScale","config":{"loss_scale_value":1024.0}}})");
  CHECK(text_of(fixed) == "<Policy \"mixed_float16\", loss_scale=FixedLossScale(1024.0)>");
  const Policy none("mixed_float16", nullptr);
  CHECK_FALSE(none.loss_scale().has_value());
  CHECK(none.get_config().dump() == R"({"name":"mixed_float16","loss_scale":null})");
  CHECK(std::get<DynamicLossScale>(*Policy("float16", "dynamic").loss_scale()) == DynamicLossScale());
  CHECK(Policy("mixed_float16", DynamicLossScale(4, 7)).get_config()["loss_scale"]["config"]["increment_period"] == 7);

  for (const Policy& p : {automatic, fixed, none}) {
    const Policy back = Policy::from_config(p.get_config());
    CHECK(back.get_config() == p.get_config());
    CHECK(text_of(back) == text_of(p));
    // tf.keras 2.2's serialized form; read as a plain policy, the loss scale is dropped (seed 002).
    CHECK(p.serialize()["class_name"] == "Policy");
    CHECK(dtype_policies::deserialize(nlohmann::json(p.serialize())) == DTypePolicy("mixed_float16"));
  }
  CHECK_THROWS_WITH_AS(Policy("mixed_float16", "static"), doctest::Contains("Could not interpret loss scale identifier"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(Policy::from_config(nlohmann::json::parse(R"({"name": "float32", "scale": 2})")),
                       doctest::Contains("unknown key 'scale'"), std::invalid_argument);
  CHECK(warnings.str().empty());

  const Policy useless("mixed_bfloat16", 128);
  CHECK(warnings.str() ==
        "WARNING: Creating a Policy with a loss scale is only useful for float16 policies. You passed "
        "loss_scale=FixedLossScale(128.0) for policy mixed_bfloat16. Consider not passing any loss_scale instead.\n");
  CHECK(std::get<FixedLossScale>(*useless.loss_scale())() == 128.0f);  // kept, as tf.keras does
  mixed_precision::experimental::warning_stream() = saved;
}

TEST_CASE("set_policy: the global policy and its loss scale; set_dtype_policy forgets the loss scale") {
  using mixed_precision::experimental::Policy;
  const DTypePolicy before = dtype_policy();
  mixed_precision::experimental::set_policy(Policy("mixed_float16", 512));
  CHECK(dtype_policy() == DTypePolicy("mixed_float16"));
  CHECK(std::get<FixedLossScale>(*mixed_precision::experimental::global_policy().loss_scale())() == 512.0f);
  {
    policy_scope scope("float32");  // a scope restores the loss scale too
    CHECK_FALSE(mixed_precision::experimental::global_policy().loss_scale().has_value());
  }
  CHECK(std::get<FixedLossScale>(*mixed_precision::experimental::global_policy().loss_scale())() == 512.0f);
  {
    // A quantized global policy: models whose layers name their dtype still build.
    policy_scope scope("int8_from_mixed_bfloat16");
    CHECK(mixed_precision::experimental::global_policy().name() == "int8_from_mixed_bfloat16");
    CHECK_FALSE(mixed_precision::experimental::global_policy().loss_scale().has_value());
    RuntimeModel model({4}, {layer_configs::dense(3, "linear", "float32")});
    CHECK(model.dtype_policy().name() == "int8_from_mixed_bfloat16");
  }
  set_dtype_policy("mixed_float16");
  CHECK(mixed_precision::experimental::global_policy().using_default_loss_scale());
  CHECK(std::holds_alternative<DynamicLossScale>(*mixed_precision::experimental::global_policy().loss_scale()));
  set_dtype_policy(before);
}

TEST_CASE("LossScaleOptimizer: a finite step unscales with the scale before the update, then applies") {
  optimizers::LossScaleOptimizer opt(optimizers::SGD(0.5), 4.0, 2);
  variable w{{1.0f, 2.0f}, {4.0f, -8.0f}};  // gradients of 4 x the loss
  CHECK(opt.apply({w.pair()}));
  CHECK(w.value == std::vector<float>{0.5f, 3.0f});  // w - 0.5 * g / 4
  CHECK(opt.dynamic_scale() == 4.0f);
  CHECK(opt.iterations() == 1);
  CHECK(opt.attempted_steps() == 1);
  w.gradient = {4.0f, 4.0f};
  CHECK(opt.apply({w.pair()}));  // second finite step in a row: the scale doubles AFTER unscaling
  CHECK(w.value == std::vector<float>{0.0f, 2.5f});
  CHECK(opt.dynamic_scale() == 8.0f);
  CHECK(opt.scale_loss(0.25f) == 2.0f);
}

TEST_CASE("LossScaleOptimizer: a non-finite step changes nothing, halves the scale and restarts the count") {
  optimizers::LossScaleOptimizer opt(optimizers::Adam(0.1), 1024.0, 3);
  variable w{{1.0f, -1.0f, 0.5f}, {1.0f, 2.0f, 3.0f}};
  opt.apply({w.pair()});
  opt.apply({w.pair()});
  CHECK(opt.loss_scale().num_good_steps() == 2);
  const std::vector<float> values = w.value, state = adam_state(opt.inner_optimizer());
  for (const float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()}) {
    w.gradient = {1.0f, bad, 3.0f};
    CHECK_FALSE(opt.apply({w.pair()}));
    CHECK(std::memcmp(w.value.data(), values.data(), values.size() * sizeof(float)) == 0);
    CHECK(adam_state(opt.inner_optimizer()) == state);
    CHECK(opt.loss_scale().num_good_steps() == 0);
  }
  CHECK(opt.dynamic_scale() == 128.0f);
  CHECK(opt.iterations() == 2);
  CHECK(opt.attempted_steps() == 5);
  CHECK(opt.skipped_steps() == 3);
  CHECK(opt.consecutive_skipped_steps() == 3);
  // A finite gradient that overflows float32 only after... never: unscaling divides. But one
  // that is finite in the scaled loss and the count restarts: growth needs 3 new finite steps.
  w.gradient = {1.0f, 1.0f, 1.0f};
  opt.apply({w.pair()});
  opt.apply({w.pair()});
  CHECK(opt.dynamic_scale() == 128.0f);
  CHECK(opt.consecutive_skipped_steps() == 0);
  opt.apply({w.pair()});
  CHECK(opt.dynamic_scale() == 256.0f);
}

TEST_CASE("LossScaleOptimizer: skipped steps at the minimum scale end in a clear error, changing nothing") {
  optimizers::LossScaleOptimizer opt(optimizers::SGD(0.1, 0.9), 4.0, 2000, {.minimum_scale = 1.0, .max_skipped_steps_at_minimum = 3});
  variable w{{1.0f}, {std::numeric_limits<float>::quiet_NaN()}};
  CHECK_FALSE(opt.apply({w.pair()}));  // 4 -> 2
  CHECK_FALSE(opt.apply({w.pair()}));  // 2 -> 1
  CHECK_FALSE(opt.apply({w.pair()}));  // skipped at the minimum: 1
  CHECK_FALSE(opt.apply({w.pair()}));  // 2
  CHECK(opt.dynamic_scale() == 1.0f);
  CHECK(opt.consecutive_skipped_steps() == 4);
  CHECK(opt.consecutive_skipped_steps_at_minimum() == 2);
  const auto attempted = opt.attempted_steps();
  const auto state = opt.state();
  w.gradient = {std::numeric_limits<float>::infinity()};
  CHECK_THROWS_WITH_AS(opt.apply({w.pair()}),
                       doctest::Contains("3 training steps in a row had non-finite (inf or NaN) gradients with the loss "
                                         "scale at its minimum (1)"),
                       std::runtime_error);
  CHECK(opt.attempted_steps() == attempted);
  CHECK(opt.state() == state);
  CHECK(w.value == std::vector<float>{1.0f});
  CHECK(opt.inner_optimizer().iterations() == 0);
  // 0 turns the error off.
  optimizers::LossScaleOptimizer patient(optimizers::SGD(0.1), 1.0, 2000, {.max_skipped_steps_at_minimum = 0});
  for (int i = 0; i < 50; ++i) CHECK_FALSE(patient.apply({w.pair()}));
  CHECK(patient.skipped_steps() == 50);
}

TEST_CASE("LossScaleOptimizer: gradients the inner optimizer would reject are rejected before unscaling, finite or not") {
  {
    optimizers::LossScaleOptimizer opt(optimizers::SGD(0.1), 4.0);
    std::vector<float> w{1, 2};
    CHECK_THROWS_WITH_AS(opt.apply({optimizers::gradient_and_variable_of<float>{w, w}}),
                         doctest::Contains("its gradient and the variable overlap"), std::invalid_argument);
    CHECK(w == std::vector<float>{1, 2});  // not unscaled through the aliased gradient
    CHECK(opt.attempted_steps() == 0);
  }
  optimizers::LossScaleOptimizer opt(optimizers::SGD(0.1), 4.0);
  variable w{{1.0f}, {4.0f}};
  opt.apply({w.pair()});
  variable a{{1.0f}, {std::numeric_limits<float>::quiet_NaN()}}, b{{1.0f}, {1.0f}};
  // A non-finite step with a variable more than the optimizer was built for: rejected, not skipped.
  CHECK_THROWS_WITH_AS(opt.apply({a.pair(), b.pair()}), doctest::Contains("received 2 variables, but the optimizer was built for 1"),
                       std::invalid_argument);
  CHECK(opt.dynamic_scale() == 4.0f);
  CHECK(opt.attempted_steps() == 1);
  CHECK(b.gradient == std::vector<float>{1.0f});
  // No variables: nothing to do, nothing counted.
  CHECK(opt.apply(std::span<const optimizers::gradient_and_variable>{}));
  CHECK(opt.attempted_steps() == 1);
}

TEST_CASE("LossScaleOptimizer over an inner optimizer that has stepped counts its steps as attempted") {
  optimizers::Adam adam(0.1);
  variable w{{1.0f}, {1.0f}};
  adam.apply({w.pair()});
  optimizers::LossScaleOptimizer opt(adam);
  CHECK(opt.iterations() == 1);
  CHECK(opt.attempted_steps() == 1);
  CHECK(opt.skipped_steps() == 0);
  optimizers::LossScaleOptimizer restored(adam);
  restored.restore_state(nlohmann::json(opt.state()));  // its own state loads back
  CHECK(restored.attempted_steps() == 1);
}

TEST_CASE("LossScaleOptimizer: config round trip, state, and its errors") {
  const optimizers::LossScaleOptimizer opt(optimizers::Adam(1e-3), 1024.0, 100);
  const auto config = opt.get_config();
  CHECK(config["inner_optimizer"]["class_name"] == "Adam");
  CHECK(config["initial_scale"] == 1024.0);
  CHECK(config["dynamic_growth_steps"] == 100);
  CHECK_FALSE(config.contains("minimum_scale"));
  const auto back = optimizers::LossScaleOptimizer::from_config(nlohmann::json(config));
  CHECK(back.get_config() == config);
  CHECK(back.dynamic_scale() == 1024.0f);
  const auto custom = optimizers::LossScaleOptimizer(optimizers::SGD(), 64.0, 10, {.minimum_scale = 2.0, .max_skipped_steps_at_minimum = 5});
  CHECK(optimizers::LossScaleOptimizer::from_config(nlohmann::json(custom.get_config())).get_config() == custom.get_config());
  nlohmann::json unknown = config;
  unknown["use_ema"] = true;
  CHECK_THROWS_WITH_AS(optimizers::LossScaleOptimizer::from_config(unknown), doctest::Contains("`use_ema` is not supported"),
                       std::invalid_argument);
  unknown = config;
  unknown["scale"] = 3;
  CHECK_THROWS_WITH_AS(optimizers::LossScaleOptimizer::from_config(unknown), doctest::Contains("unknown setting"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(optimizers::LossScaleOptimizer(optimizers::SGD(0.1, 0.0, false, {.loss_scale_factor = 8.0})),
                       doctest::Contains("use either fixed loss scaling"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(optimizers::LossScaleOptimizer(optimizers::SGD(), 0.0), doctest::Contains("initial_loss_scale"),
                       std::invalid_argument);

  optimizers::LossScaleOptimizer running(optimizers::SGD(0.1), 16.0, 4);
  variable w{{1.0f}, {1.0f}};
  running.apply({w.pair()});
  w.gradient = {std::numeric_limits<float>::infinity()};
  running.apply({w.pair()});
  w.gradient = {1.0f};
  running.apply({w.pair()});
  CHECK(running.state().dump() ==
        R"({"scale":8.0,"good_steps":1,"attempted_steps":3,"consecutive_skipped_steps":0,"consecutive_skipped_steps_at_minimum":0})");
  optimizers::LossScaleOptimizer restored(optimizers::SGD(0.1), 16.0, 4);
  restored.restore_state(running.state());
  CHECK(restored.state() == running.state());
  nlohmann::json bad = running.state();
  bad["consecutive_skipped_steps"] = 4;
  CHECK_THROWS_WITH_AS(restored.restore_state(bad), doctest::Contains("do not fit 0 applied"), std::invalid_argument);
  bad = running.state();
  bad["good_steps"] = 4;
  CHECK_THROWS_WITH_AS(restored.restore_state(bad), doctest::Contains("cannot restore scale 8 with 4 good steps"),
                       std::invalid_argument);
  CHECK(restored.state() == running.state());
  // A minimum_scale that float32 rounds down (1.3): the floor the optimizer reaches loads back.
  optimizers::LossScaleOptimizer floor(optimizers::SGD(0.1), 1.3, 4, {.minimum_scale = 1.3});
  optimizers::LossScaleOptimizer floor_copy(optimizers::SGD(0.1), 1.3, 4, {.minimum_scale = 1.3});
  floor_copy.restore_state(floor.state());
  CHECK(floor_copy.state() == floor.state());
}

TEST_CASE("compile() chooses loss scaling from the model's policy") {
  mlp<policies::mixed_float16> f16;
  f16.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  REQUIRE(f16.loss_scale_optimizer() != nullptr);
  CHECK(f16.loss_scale_optimizer()->dynamic_scale() == 32768.0f);
  CHECK(&f16.optimizer() == &f16.loss_scale_optimizer()->inner_optimizer());

  mlp<policies::mixed_float16> off;
  off.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true), {}, {.auto_scale_loss = false});
  CHECK(off.loss_scale_optimizer() == nullptr);
  CHECK(off.train_on_batch(inputs(), labels()).count("loss_scale") == 0);

  mlp<policies::mixed_bfloat16> bf16;
  bf16.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  CHECK(bf16.loss_scale_optimizer() == nullptr);
  const Logs bf16_logs = bf16.train_on_batch(inputs(), labels());
  CHECK(bf16_logs.count("loss_scale") == 0);
  CHECK(bf16_logs.count("skipped") == 0);

  mlp<fixed_1024> fixed;
  fixed.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  CHECK(fixed.loss_scale_optimizer() == nullptr);
  CHECK(fixed.optimizer().settings().loss_scale_factor == 1024.0);
  const Logs fixed_logs = fixed.train_on_batch(inputs(), labels());
  CHECK(fixed_logs.at("loss_scale") == 1024.0);
  CHECK(fixed_logs.at("skipped") == 0.0);

  mlp<unscaled_float16> none;
  none.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  CHECK(none.loss_scale_optimizer() == nullptr);

  mlp<small_dynamic> small;
  small.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  CHECK(small.loss_scale_optimizer()->dynamic_scale() == 256.0f);
  CHECK(small.loss_scale_optimizer()->loss_scale().increment_period() == 3);

  // A given LossScaleOptimizer is left as it is, on a float32 model too.
  mlp<policies::float32> f32;
  f32.compile(optimizers::LossScaleOptimizer(optimizers::SGD(0.1), 8.0), losses::SparseCategoricalCrossentropy(true));
  CHECK(f32.loss_scale_optimizer()->dynamic_scale() == 8.0f);
  // An optimizer with its own loss_scale_factor keeps it.
  mlp<policies::mixed_float16> own;
  own.compile(optimizers::SGD(0.1, 0.0, false, {.loss_scale_factor = 64.0}), losses::SparseCategoricalCrossentropy(true));
  CHECK(own.loss_scale_optimizer() == nullptr);
  CHECK(own.train_on_batch(inputs(), labels()).at("loss_scale") == 64.0);

  // RuntimeModel: the policy it was built under (tf.keras 2.2: set_policy), or its layers.
  using mixed_precision::experimental::Policy;
  const DTypePolicy before = dtype_policy();
  const auto layers = std::vector<nlohmann::json>{layer_configs::dense(3)};
  mixed_precision::experimental::set_policy(Policy("mixed_float16", 1024));
  RuntimeModel runtime_fixed({4}, layers);
  mixed_precision::experimental::set_policy(Policy("mixed_float16", nullptr));
  RuntimeModel runtime_none({4}, layers);
  mixed_precision::experimental::set_policy(Policy("mixed_float16"));
  RuntimeModel runtime_auto({4}, layers);
  set_dtype_policy("mixed_bfloat16");
  RuntimeModel runtime_bf16({4}, layers);
  set_dtype_policy(before);
  for (RuntimeModel* m : {&runtime_fixed, &runtime_none, &runtime_auto, &runtime_bf16})
    m->compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  CHECK(runtime_fixed.optimizer().settings().loss_scale_factor == 1024.0);
  CHECK(runtime_none.loss_scale_optimizer() == nullptr);
  CHECK_FALSE(runtime_none.optimizer().settings().loss_scale_factor.has_value());
  CHECK(runtime_auto.loss_scale_optimizer() != nullptr);
  CHECK(runtime_bf16.loss_scale_optimizer() == nullptr);
  // A float32 model whose layers compute in float16 (a DTypePolicyMap, a config) scales too.
  RuntimeModel mixed_layers({4}, {layer_configs::dense(3, "linear", "mixed_float16")});
  mixed_layers.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  CHECK(mixed_layers.loss_scale_optimizer() != nullptr);
}

TEST_CASE("train_on_batch with loss scaling: logs, the unscaled loss, growth, and the same bits on both model kinds") {
  mlp<small_dynamic> compiled;
  RuntimeModel runtime = RuntimeModel::from_config(compiled.get_config());
  copy_weights(compiled, runtime);
  mlp<unscaled_float16> reference;
  copy_weights(compiled, reference);
  compiled.compile(optimizers::SGD(0.1, 0.9), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  runtime.compile(optimizers::LossScaleOptimizer(optimizers::SGD(0.1, 0.9), 256.0, 3),
                  losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  reference.compile(optimizers::SGD(0.1, 0.9), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  const std::vector<float> expected_scales{256, 256, 256, 512, 512, 512, 1024};
  for (std::size_t step = 0; step < expected_scales.size(); ++step) {
    const Logs a = compiled.train_on_batch(inputs(), labels());
    const Logs b = runtime.train_on_batch(AnyTensor(inputs()), AnyTensor(labels()));
    const Logs plain = reference.train_on_batch(inputs(), labels());
    CHECK(a == b);
    CHECK(a.at("loss_scale") == expected_scales[step]);
    CHECK(a.at("skipped") == 0.0);
    // The unscaled loss: from the same weights, the very value of an unscaled step; later the
    // weights differ by the roundings of the unscaled float16 gradients.
    if (step == 0) CHECK(a.at("loss") == plain.at("loss"));
    else CHECK(a.at("loss") == doctest::Approx(plain.at("loss")).epsilon(0.05));
    CHECK(a.size() == 4);
  }
  CHECK(weight_bytes(compiled) == weight_bytes(runtime));
  CHECK(compiled.loss_scale_optimizer()->iterations() == 7);
}

TEST_CASE("an injected overflow skips the step: weights, moving statistics, slots and iterations bit-identical") {
  mlp<policies::mixed_float16> model;
  RuntimeModel runtime = RuntimeModel::from_config(model.get_config());
  copy_weights(model, runtime);
  model.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true));
  runtime.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true));
  model.train_on_batch(inputs(), labels());
  runtime.train_on_batch(AnyTensor(inputs()), AnyTensor(labels()));
  const auto weights = weight_bytes(model);  // includes BatchNormalization's moving statistics
  const auto slots = adam_state(model.optimizer());
  auto huge = inputs();
  huge[5] = 1e30f;  // finite in float32, infinite in float16
  for (int skipped = 1; skipped <= 2; ++skipped) {
    const Logs a = model.train_on_batch(huge, labels());
    const Logs b = runtime.train_on_batch(AnyTensor(huge), AnyTensor(labels()));
    CHECK(a.at("skipped") == 1.0);
    CHECK(a.at("loss_scale") == 32768.0f / static_cast<float>(1 << (skipped - 1)));
    CHECK(b.at("skipped") == 1.0);
    CHECK(weight_bytes(model) == weights);
    CHECK(adam_state(model.optimizer()) == slots);
    CHECK(model.optimizer().iterations() == 1);
    CHECK(model.loss_scale_optimizer()->attempted_steps() == 1 + skipped);
  }
  CHECK(model.loss_scale_optimizer()->dynamic_scale() == 8192.0f);
  const Logs next = model.train_on_batch(inputs(), labels());
  CHECK(next.at("skipped") == 0.0);
  CHECK(next.at("loss_scale") == 8192.0);
  runtime.train_on_batch(AnyTensor(inputs()), AnyTensor(labels()));
  CHECK(weight_bytes(model) == weight_bytes(runtime));
}

TEST_CASE("a regularizer's gradient is scaled with the loss, so scaling does not change the update") {
  using model_type = Sequential<policies::float32, Input<4>, Dense<3>>;
  const auto make = [] {
    return model_type(Dense<3>("dense", weight_settings{.kernel_regularizer = regularizers::l1_l2{0.01, 0.02}}));
  };
  model_type plain = make(), scaled = make();
  copy_weights(plain, scaled);
  plain.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  scaled.compile(optimizers::LossScaleOptimizer(optimizers::SGD(0.1), 1024.0), losses::SparseCategoricalCrossentropy(true));
  for (int step = 0; step < 3; ++step) {
    plain.train_on_batch(inputs(), labels());
    scaled.train_on_batch(inputs(), labels());
  }
  CHECK(weight_bytes(plain) == weight_bytes(scaled));  // a power of two scales exactly
}

// Small targets: float16 gradients of the loss underflow to zero long before the model fits
// them. With loss scaling the same model keeps learning.
TEST_CASE("without loss scaling float16 gradients underflow; with it training goes on") {
  using model_type = Sequential<policies::mixed_float16, Input<8>, Dense<4>>;
  constexpr std::size_t rows = 256;
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  value_buffer<float> x(rows * 8), y(rows * 4);
  for (auto& v : x) v = normal(rng);
  std::vector<float> true_kernel(8 * 4);
  for (auto& v : true_kernel) v = 1e-3f * normal(rng);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < 4; ++c) {
      double sum = 0.0;
      for (std::size_t k = 0; k < 8; ++k) sum += double(x[r * 8 + k]) * true_kernel[k * 4 + c];
      y[r * 4 + c] = static_cast<float>(sum);
    }
  const Tensor<float, dynamic, 8> inputs_(std::move(x));
  const Tensor<float, dynamic, 4> targets(std::move(y));
  const auto fresh = [] { return model_type(Dense<4>("dense", weight_settings{.kernel_initializer = initializers::zeros{}})); };
  model_type unscaled = fresh(), scaled = fresh();
  unscaled.compile(optimizers::SGD(0.5), losses::MeanSquaredError(), {}, {.auto_scale_loss = false});
  scaled.compile(optimizers::SGD(0.5), losses::MeanSquaredError());
  const auto zero_fraction = [&](model_type& m) {
    const Gradients g = m.compute_gradients(inputs_, targets);  // unscaled: what a float16 step sees without scaling
    std::size_t zeros = 0, total = 0;
    g.gradients.front().visit([&](auto values) {
      for (auto v : values) zeros += static_cast<float>(v) == 0.0f;
      total = values.size();
    });
    return static_cast<double>(zeros) / static_cast<double>(total);
  };
  for (int step = 0; step < 200; ++step) {
    unscaled.train_on_batch(inputs_, targets);
    scaled.train_on_batch(inputs_, targets);
  }
  const double unscaled_loss = unscaled.test_on_batch(inputs_, targets).at("loss");
  const double scaled_loss = scaled.test_on_batch(inputs_, targets).at("loss");
  MESSAGE("MSE after 200 steps: without loss scaling " << unscaled_loss << ", with " << scaled_loss
                                                       << "; zero kernel gradients without scaling: "
                                                       << 100.0 * zero_fraction(unscaled) << "%");
  CHECK(zero_fraction(unscaled) > 0.9);
  CHECK(scaled_loss < 0.1 * unscaled_loss);
}

using dropping = Sequential<policies::mixed_float16, Input<4>, Dense<6, activations::relu>, Dropout<>, BatchNormalization<>, Dense<3>>;

TEST_CASE_TEMPLATE("a checkpoint resumes training to the same bits, on both model kinds", Model, dropping, RuntimeModel) {
  const dropping prototype(Dense<6, activations::relu>(), Dropout<>(0.3, "dropout", 5), BatchNormalization<>(), Dense<3>());
  const auto make = [&] {
    if constexpr (std::is_same_v<Model, RuntimeModel>) return RuntimeModel::from_config(prototype.get_config());
    else return Model(prototype);
  };
  auto straight = make(), first = make(), resumed = make();
  copy_weights(straight, first);
  copy_weights(straight, resumed);
  for (auto* m : {&straight, &first, &resumed})
    m->compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  auto huge = inputs();
  huge[2] = 1e30f;
  const auto step = [&](auto& m, bool overflow) {
    if constexpr (std::is_same_v<Model, RuntimeModel>) return m.train_on_batch(AnyTensor(overflow ? huge : inputs()), AnyTensor(labels()));
    else return m.train_on_batch(overflow ? huge : inputs(), labels());
  };
  const std::string file = "checkpoint_test_" + std::string(std::is_same_v<Model, RuntimeModel> ? "runtime" : "sequential") + ".mpxw";
  for (int i = 0; i < 3; ++i) {
    step(straight, i == 1);
    step(first, i == 1);
  }
  save_checkpoint(first, file);
  load_checkpoint(resumed, file);
  CHECK(resumed.loss_scale_optimizer()->state() == first.loss_scale_optimizer()->state());
  CHECK(resumed.layer_states() == first.layer_states());
  for (int i = 0; i < 3; ++i) CHECK(step(straight, false) == step(resumed, false));
  CHECK(weight_bytes(straight) == weight_bytes(resumed));
  CHECK(straight.loss_scale_optimizer()->state() == resumed.loss_scale_optimizer()->state());
  CHECK(adam_state(straight.optimizer()) == adam_state(resumed.optimizer()));

  // load_weights reads a checkpoint's weights alone; a weights file is not a checkpoint.
  auto inference = make();
  inference.load_weights(file);
  CHECK(weight_bytes(inference) == weight_bytes(first));
  const std::string weights_only = file + ".weights";
  first.save_weights(weights_only);
  const auto before = weight_bytes(resumed);
  const auto scale_before = resumed.loss_scale_optimizer()->state();
  CHECK_THROWS_WITH_AS(load_checkpoint(resumed, weights_only), doctest::Contains("not a training checkpoint"),
                       std::invalid_argument);
  // Another optimizer, loss scaling on one side only, or a corrupted byte: rejected, nothing changed.
  auto sgd = make();
  sgd.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  CHECK_THROWS_WITH_AS(load_checkpoint(sgd, file), doctest::Contains("saved with the optimizer Adam, but the model is compiled with SGD"), std::invalid_argument);
  auto unscaled = make();
  unscaled.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true), {}, {.auto_scale_loss = false});
  CHECK_THROWS_WITH_AS(load_checkpoint(unscaled, file), doctest::Contains("saved with a LossScaleOptimizer"),
                       std::invalid_argument);
  {
    std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(-3, std::ios::end);
    char byte = 0;
    io.read(&byte, 1);
    io.seekp(-3, std::ios::end);
    byte = static_cast<char>(byte ^ 0x40);
    io.write(&byte, 1);
  }
  CHECK_THROWS_WITH_AS(load_checkpoint(resumed, file), doctest::Contains("checksum mismatch"), std::invalid_argument);
  CHECK(weight_bytes(resumed) == before);
  CHECK(resumed.loss_scale_optimizer()->state() == scale_before);
  std::remove(file.c_str());
  std::remove(weights_only.c_str());
}

TEST_CASE("fit with dynamic loss scaling: skipped steps in History and the progress bar; resuming a fit from a checkpoint") {
  // 12 rows in batches of 3; rows 6..8 (the third batch of an unshuffled epoch) overflow float16.
  value_buffer<float> values(12 * 4);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((i * 7) % 11) / 11.0f - 0.5f;
  values[6 * 4 + 1] = 1e30f;
  const Tensor<float, dynamic, 4> x(std::move(values));
  const Tensor<std::int32_t, dynamic> y(std::vector<std::int32_t>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2});
  mlp<policies::mixed_float16> model;
  model.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  std::ostringstream bar;
  const History history = model.fit(
      x, y,
      {.batch_size = 3, .epochs = 2, .verbose = 2,
       .callbacks = {std::make_shared<callbacks::ProgbarLogger>(bar)}, .shuffle = false});
  CHECK(history.history.at("skipped") == std::vector<double>{1.0, 1.0});
  CHECK(history.history.at("loss_scale") == std::vector<double>{16384.0, 8192.0});
  CHECK(model.loss_scale_optimizer()->attempted_steps() == 8);
  CHECK(model.optimizer().iterations() == 6);
  CHECK(bar.str().find("loss_scale: 16384.0000 - skipped: 1") != std::string::npos);

  // Two epochs straight, or one, a checkpoint, and the second in a fresh model: the same bits.
  value_buffer<float> clean(x.values().begin(), x.values().end());
  clean[6 * 4 + 1] = 0.25f;
  const Tensor<float, dynamic, 4> data(std::move(clean));
  mlp<policies::mixed_float16> straight, first, resumed;
  copy_weights(straight, first);
  copy_weights(straight, resumed);
  for (auto* m : {&straight, &first, &resumed})
    m->compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  const History whole = straight.fit(data, y, {.batch_size = 4, .epochs = 2, .verbose = 0, .seed = 9});
  first.fit(data, y, {.batch_size = 4, .epochs = 1, .verbose = 0, .seed = 9});
  save_checkpoint(first, "fit_resume_test.mpxw");
  load_checkpoint(resumed, "fit_resume_test.mpxw");
  const History second = resumed.fit(data, y, {.batch_size = 4, .epochs = 2, .verbose = 0, .initial_epoch = 1, .seed = 9});
  CHECK(second.history.at("loss").front() == whole.history.at("loss").back());
  CHECK(weight_bytes(straight) == weight_bytes(resumed));
  CHECK(adam_state(straight.optimizer()) == adam_state(resumed.optimizer()));

  // A learning rate a callback changed is state: the resumed run halves the rate it was left
  // with (Keras' LearningRateScheduler example), not the one compile() set.
  const auto halving = [] {
    return std::make_shared<callbacks::LearningRateScheduler>([](int, double rate) { return rate * 0.5; });
  };
  mlp<policies::mixed_float16> straight_lr, first_lr, resumed_lr;
  copy_weights(straight_lr, first_lr);
  copy_weights(straight_lr, resumed_lr);
  for (auto* m : {&straight_lr, &first_lr, &resumed_lr})
    m->compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(true));
  straight_lr.fit(data, y, {.batch_size = 4, .epochs = 3, .verbose = 0, .callbacks = {halving()}, .seed = 9});
  first_lr.fit(data, y, {.batch_size = 4, .epochs = 2, .verbose = 0, .callbacks = {halving()}, .seed = 9});
  save_checkpoint(first_lr, "fit_resume_test.mpxw");
  load_checkpoint(resumed_lr, "fit_resume_test.mpxw");
  CHECK(resumed_lr.optimizer().current_learning_rate() == 0.025f);
  resumed_lr.fit(data, y, {.batch_size = 4, .epochs = 3, .verbose = 0, .callbacks = {halving()}, .initial_epoch = 2, .seed = 9});
  CHECK(resumed_lr.optimizer().current_learning_rate() == 0.0125f);
  CHECK(weight_bytes(straight_lr) == weight_bytes(resumed_lr));
  // A schedule is the resuming compile()'s; a float on one side and a schedule on the other is
  // an error, nothing changed.
  mlp<policies::mixed_float16> scheduled;
  scheduled.compile(optimizers::SGD(schedules::ExponentialDecay(0.1, 10, 0.5)), losses::SparseCategoricalCrossentropy(true));
  const auto untouched = weight_bytes(scheduled);
  CHECK_THROWS_WITH_AS(load_checkpoint(scheduled, "fit_resume_test.mpxw"),
                       doctest::Contains("it was saved with a float learning rate, but the model's optimizer has a schedule."),
                       std::invalid_argument);
  CHECK(weight_bytes(scheduled) == untouched);
  CHECK(scheduled.optimizer().iterations() == 0);
  std::remove("fit_resume_test.mpxw");
}

TEST_CASE("the stall error through train_on_batch changes nothing") {
  dropping model(Dense<6, activations::relu>(), Dropout<>(0.3, "dropout", 5), BatchNormalization<>(), Dense<3>());
  model.compile(optimizers::LossScaleOptimizer(optimizers::Adam(1e-2), 1.0, 2000, {.max_skipped_steps_at_minimum = 2}),
                losses::SparseCategoricalCrossentropy(true), {"accuracy"});
  model.train_on_batch(inputs(), labels());
  auto huge = inputs();
  huge[0] = 1e30f;
  CHECK(model.train_on_batch(huge, labels()).at("skipped") == 1.0);  // the first skip at the minimum scale
  const auto weights = weight_bytes(model);
  const auto states = model.layer_states();
  const auto slots = adam_state(model.optimizer());
  const auto scale = model.loss_scale_optimizer()->state();
  CHECK_THROWS_WITH_AS(model.train_on_batch(huge, labels()), doctest::Contains("2 training steps in a row"), std::runtime_error);
  CHECK(weight_bytes(model) == weights);
  CHECK(model.layer_states() == states);
  CHECK(adam_state(model.optimizer()) == slots);
  CHECK(model.loss_scale_optimizer()->state() == scale);
  CHECK(model.train_on_batch(inputs(), labels()).at("skipped") == 0.0);  // good data trains on
}

TEST_CASE("load_checkpoint: a rejection after the training state was read changes nothing; fixed scaling; no step yet") {
  const auto train = [](auto& m) { return m.train_on_batch(inputs(), labels()); };
  mlp<policies::mixed_float16> saved;
  saved.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true));
  train(saved);
  save_checkpoint(saved, "reject_test.mpxw");
  // Another model (other weights), the same optimizer: the weights are checked after the section.
  using other = Sequential<policies::mixed_float16, Input<4>, Dense<5>, BatchNormalization<>, Dense<3>>;
  other different;
  different.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true));
  train(different);
  train(different);
  const auto weights = weight_bytes(different);
  const auto slots = adam_state(different.optimizer());
  const auto scale = different.loss_scale_optimizer()->state();
  CHECK_THROWS_WITH_AS(load_checkpoint(different, "reject_test.mpxw"), doctest::Contains("shape"), std::invalid_argument);
  CHECK(weight_bytes(different) == weights);
  CHECK(adam_state(different.optimizer()) == slots);
  CHECK(different.loss_scale_optimizer()->state() == scale);
  // Other loss-scale settings, another slot set.
  mlp<policies::mixed_float16> slower;
  slower.compile(optimizers::LossScaleOptimizer(optimizers::Adam(1e-2), 32768.0, 100), losses::SparseCategoricalCrossentropy(true));
  CHECK_THROWS_WITH_AS(load_checkpoint(slower, "reject_test.mpxw"), doctest::Contains("its loss scale was"), std::invalid_argument);
  mlp<policies::mixed_float16> amsgrad;
  amsgrad.compile(optimizers::Adam(1e-2, 0.9, 0.999, 1e-7, true), losses::SparseCategoricalCrossentropy(true));
  CHECK_THROWS_WITH_AS(load_checkpoint(amsgrad, "reject_test.mpxw"), doctest::Contains("keeps the slots"), std::invalid_argument);
  // A corrupted training section.
  {
    std::fstream io("reject_test.mpxw", std::ios::in | std::ios::out | std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(io)), std::istreambuf_iterator<char>());
    const auto at = bytes.find("\"iterations\":1");
    REQUIRE(at != std::string::npos);
    io.seekp(static_cast<std::streamoff>(at + 13));
    io.put('7');
  }
  mlp<policies::mixed_float16> target;
  target.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true));
  CHECK_THROWS_WITH_AS(load_checkpoint(target, "reject_test.mpxw"), doctest::Contains("training state is corrupted"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(target.load_weights("reject_test.mpxw"), doctest::Contains("training state is corrupted"),
                       std::invalid_argument);

  // Fixed scaling (loss_scale_factor) and an optimizer that has not stepped yet: a fresh model's
  // checkpoint puts a trained one back to the start.
  mlp<fixed_1024> fresh, trained;
  copy_weights(fresh, trained);
  fresh.compile(optimizers::SGD(0.1, 0.9), losses::SparseCategoricalCrossentropy(true));
  trained.compile(optimizers::SGD(0.1, 0.9), losses::SparseCategoricalCrossentropy(true));
  save_checkpoint(fresh, "reject_test.mpxw");
  train(trained);
  load_checkpoint(trained, "reject_test.mpxw");
  CHECK(trained.optimizer().iterations() == 0);
  CHECK(weight_bytes(trained) == weight_bytes(fresh));
  CHECK(train(trained) == train(fresh));
  CHECK(weight_bytes(trained) == weight_bytes(fresh));
  std::remove("reject_test.mpxw");
}

TEST_CASE("load_checkpoint: a training section of the wrong JSON types or out of range is rejected naming the key; nothing changes") {
  const auto train = [](auto& m) { return m.train_on_batch(inputs(), labels()); };
  mlp<policies::mixed_float16> saved, target;
  for (auto* m : {&saved, &target}) {
    m->compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy(true));
    train(*m);
  }
  train(target);
  const std::string file = "typed_checkpoint_test.mpxw";
  save_checkpoint(saved, file);
  std::string content;
  {
    std::ifstream in(file, std::ios::binary);
    content.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::uint64_t header_length = 0;
  std::memcpy(&header_length, content.data() + 8, sizeof header_length);
  // The section changed and its checksum recomputed, as a forger would.
  const auto write_with = [&](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json header = nlohmann::json::parse(content.substr(16, header_length));
    change(header["training"]);
    header["training_fnv1a64"] = mixprec::detail::json_checksum(header["training"]);
    const std::string text = header.dump();
    const std::uint64_t length = text.size();
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << content.substr(0, 8);
    out.write(reinterpret_cast<const char*>(&length), sizeof length);
    out << text << content.substr(16 + header_length);
  };
  const auto weights = weight_bytes(target);
  const auto slots = adam_state(target.optimizer());
  const auto scale = target.loss_scale_optimizer()->state();
  const auto states = target.layer_states();
  using nlohmann::json;
  for (const auto& entry : std::vector<std::pair<std::function<void(json&)>, std::string>>{
           {[](json& t) { t["optimizer"] = "Adam"; }, "`optimizer` must be an object with a string `class_name`. Received: \"Adam\""},
           {[](json& t) { t["optimizer"]["class_name"] = 1; }, "`optimizer` must be an object with a string `class_name`"},
           {[](json& t) { t.erase("optimizer"); }, "the checkpoint's training state: `optimizer` is missing."},
           {[](json& t) { t["optimizer"]["class_name"] = "Ad\u0001am"; }, "saved with the optimizer Ad\\x01am, but"},
           {[](json& t) { t["slot_names"] = "momentum"; }, "`slot_names` must be a list of strings. Received: \"momentum\""},
           {[](json& t) { t["slot_names"] = {"momentum", 2}; }, "`slot_names` must be a list of strings. Received: [\"momentum\",2]"},
           {[](json& t) { t["layer_states"] = {"", nullptr, ""}; }, "`layer_states` must be a list of strings"},
           {[](json& t) { t["layer_states"] = {"", "", "", ""}; }, "4 layer states for 3 layers"},
           {[](json& t) { t["slots"] = "yes"; }, "`slots` must be true or false. Received: \"yes\""},
           {[](json& t) { t["iterations"] = 1.5; }, "`iterations` must be an integer in [-2^63, 2^63). Received: 1.5"},
           {[](json& t) { t["iterations"] = -1; }, "iterations must be in [0, 2^63 - 1). Received: -1"},
           {[](json& t) { t["iterations"] = std::numeric_limits<std::int64_t>::max(); },
            "iterations must be in [0, 2^63 - 1). Received: 9223372036854775807"},
           {[](json& t) { t["loss_scale"]["attempted_steps"] = std::numeric_limits<std::int64_t>::max(); },
            "`attempted_steps` must be below 2^63 - 1. Received: 9223372036854775807"},
           {[](json& t) { t["optimizer"]["config"].erase("learning_rate"); }, "`optimizer` must have a `config` with a `learning_rate`."},
           {[](json& t) { t["optimizer"]["config"]["learning_rate"] = 1e39; }, "`learning_rate` must be a float32 number. Received: 1e+39"},
           {[](json& t) { t["optimizer"]["config"]["learning_rate"] = "abc"; },
            "learning_rate: expected a number or a serialized schedule. Received: \"abc\""},
           {[](json& t) { t["optimizer"]["config"]["learning_rate"] = -1.0; },
            "Argument `learning_rate` must be a finite number >= 0 or a schedule. Received: learning_rate=-1"},
           {[](json& t) { t["optimizer"]["config"]["learning_rate"] = schedules::LearningRate(schedules::ExponentialDecay(0.1, 10, 0.5)).get_config(); },
            "it was saved with a learning rate schedule, but the model's optimizer has a float rate."},
           {[](json& t) { t["iterations"] = 18446744073709551615ull; }, "`iterations` must be an integer in [-2^63, 2^63). Received: 18446744073709551615"},
           {[](json& t) { t["loss_scale"] = 5; }, "LossScaleOptimizer state: its config must be an object. Received: 5"},
           {[](json& t) { t["loss_scale"]["scale"] = 1e300; }, "`scale` must be a float32 number from minimum_scale (1) up. Received: 1e+300"},
           {[](json& t) { t["loss_scale"]["scale"] = -2.0; }, "`scale` must be a float32 number from minimum_scale (1) up. Received: -2"},
           {[](json& t) { t["loss_scale"]["scale"] = 0.25; }, "`scale` must be a float32 number from minimum_scale (1) up. Received: 0.25"},
           {[](json& t) { t["loss_scale"]["scale"] = 1000.1; }, "`scale` must be a float32 number from minimum_scale (1) up. Received: 1000.1"},
           {[](json& t) { t["loss_scale"]["good_steps"] = "3"; }, "`good_steps` must be an integer in [-2^63, 2^63). Received: \"3\""},
           {[](json& t) { t["loss_scale"]["attempted_steps"] = 18446744073709551615ull; }, "`attempted_steps` must be an integer in [-2^63, 2^63)"},
           {[](json& t) { t["loss_scale_settings"] = json::array(); }, "its loss scale was [], the model's is {"},
           {[](json& t) { t["extra"] = {1, 2}; }, "unknown setting `\"extra\"` (value [1,2])"},
           {[](json& t) { t = json::array(); }, "its training state is corrupted"}}) {
    const auto& change = std::get<0>(entry);  // not a binding: lambdas (doctest's INFO) capture it
    const auto& message = std::get<1>(entry);
    CAPTURE(message);
    write_with(change);
    CHECK_THROWS_WITH_AS(load_checkpoint(target, file), doctest::Contains(("Cannot load weights from '" + file + "': ").c_str()),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(load_checkpoint(target, file), doctest::Contains(message.c_str()), std::invalid_argument);
    CHECK(weight_bytes(target) == weights);
    CHECK(adam_state(target.optimizer()) == slots);
    CHECK(target.loss_scale_optimizer()->state() == scale);
    CHECK(target.layer_states() == states);
  }
  write_with([](json&) {});
  load_checkpoint(target, file);  // the untouched section loads
  CHECK(weight_bytes(target) == weight_bytes(saved));
  std::remove(file.c_str());
}
