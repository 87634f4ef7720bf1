// Optimizers and learning-rate schedules: steps computed by hand from Keras' formulas, the order
// of loss-scale division, clipping and weight decay, slots in the variable dtype, configs, and
// every error leaving variables, slots and iterations as they were.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <string_view>
#include <numbers>
#include <vector>

#include <mixprec/core/float16.hpp>
#include <mixprec/training/optimizers.hpp>

using namespace mixprec;
using optimizers::gradient_and_variable;
using optimizers::gradient_and_variable_of;

namespace {

template <class V>
gradient_and_variable pair_of(std::vector<V>& gradient, std::vector<V>& variable) {
  return gradient_and_variable_of<V>{gradient, variable};
}

}  // namespace

TEST_CASE("SGD: Keras' example, momentum and nesterov by hand") {
  // Keras 3's optimizer test: lr 0.5, vars [1, 2, 3, 4], grads [1, 6, 7, 2].
  std::vector<float> w{1, 2, 3, 4}, g{1, 6, 7, 2};
  optimizers::SGD sgd(0.5);
  sgd.apply({pair_of(g, w)});
  CHECK(w == std::vector<float>{0.5f, -1.0f, -0.5f, 3.0f});
  CHECK(sgd.iterations() == 1);
  CHECK(sgd.slot_names().empty());

  // lr 0.1, momentum 0.9, gradient 1 twice: v = -0.1 then -0.19; nesterov moves by 0.19 then 0.271.
  for (bool nesterov : {false, true}) {
    std::vector<double> x{0.0}, grad{1.0};
    optimizers::SGD momentum(0.1, 0.9, nesterov);
    momentum.apply({pair_of(grad, x)});
    CHECK(x[0] == doctest::Approx(nesterov ? -0.19 : -0.1));
    grad = {1.0};
    momentum.apply({pair_of(grad, x)});
    CHECK(x[0] == doctest::Approx(nesterov ? -0.19 - 0.271 : -0.1 - 0.19));
    CHECK(momentum.slot<double>(0, "momentum")[0] == doctest::Approx(-0.19));
  }
}

TEST_CASE("Adam and AdamW: the first steps by hand, epsilon outside the square root") {
  // Step 1 from w = 1, g = 0.5: m = 0.05, v = 0.00025, alpha = lr sqrt(1 - 0.999) / (1 - 0.9).
  const double lr = 1e-3, m1 = 0.05, v1 = 0.00025, alpha1 = lr * std::sqrt(1 - 0.999) / (1 - 0.9);
  const double step1 = m1 * alpha1 / (std::sqrt(v1) + 1e-7);
  std::vector<float> w{1.0f}, g{0.5f};
  optimizers::Adam adam(lr);
  adam.apply({pair_of(g, w)});
  CHECK(w[0] == doctest::Approx(1.0 - step1).epsilon(1e-7));
  CHECK(adam.slot<float>(0, "momentum")[0] == doctest::Approx(m1));
  CHECK(adam.slot<float>(0, "velocity")[0] == doctest::Approx(v1));

  // Step 2 with g = -0.25.
  const double m2 = m1 + (-0.25 - m1) * 0.1, v2 = v1 + (0.0625 - v1) * 0.001;
  const double alpha2 = lr * std::sqrt(1 - 0.999 * 0.999) / (1 - 0.9 * 0.9);
  g = {-0.25f};
  adam.apply({pair_of(g, w)});
  CHECK(w[0] == doctest::Approx(1.0 - step1 - m2 * alpha2 / (std::sqrt(v2) + 1e-7)).epsilon(1e-7));

  // AdamW decays first, with the same learning rate: w (1 - wd lr), then Adam's step.
  std::vector<float> wd_w{1.0f}, wd_g{0.5f};
  optimizers::AdamW adamw(lr);
  adamw.apply({pair_of(wd_g, wd_w)});
  CHECK(wd_w[0] == doctest::Approx(1.0 - 1.0 * 0.004 * lr - step1).epsilon(1e-7));
  CHECK(adamw.settings().weight_decay == 0.004);

  // AMSGrad keeps the largest velocity: a large gradient, then a small one.
  std::vector<float> a_w{0.0f}, a_g{1.0f};
  optimizers::Adam ams(lr, 0.9, 0.999, 1e-7, /*amsgrad=*/true);
  ams.apply({pair_of(a_g, a_w)});
  const float first_velocity = ams.slot<float>(0, "velocity")[0];
  CHECK(ams.slot<float>(0, "velocity_hat")[0] == first_velocity);
  a_g = {0.0f};
  ams.apply({pair_of(a_g, a_w)});
  CHECK(ams.slot<float>(0, "velocity")[0] < first_velocity);
  CHECK(ams.slot<float>(0, "velocity_hat")[0] == first_velocity);
}

TEST_CASE("loss_scale_factor, then clipping, then weight decay") {
  {  // clipnorm per tensor: [3, 4] has norm 5 -> [0.6, 0.8]; [0.3, 0.4] is inside the norm.
    std::vector<float> w1{0, 0}, g1{3, 4}, w2{0, 0}, g2{0.3f, 0.4f};
    optimizers::SGD sgd(1.0, 0.0, false, {.clipnorm = 1.0});
    sgd.apply({pair_of(g1, w1), pair_of(g2, w2)});
    CHECK(w1[0] == doctest::Approx(-0.6));
    CHECK(w1[1] == doctest::Approx(-0.8));
    CHECK(w2[0] == doctest::Approx(-0.3));
  }
  {  // global_clipnorm: [3] and [4] together have norm 5.
    std::vector<float> w1{0}, g1{3}, w2{0}, g2{4};
    optimizers::SGD sgd(1.0, 0.0, false, {.global_clipnorm = 1.0});
    sgd.apply({pair_of(g1, w1), pair_of(g2, w2)});
    CHECK(w1[0] == doctest::Approx(-0.6));
    CHECK(w2[0] == doctest::Approx(-0.8));
  }
  {  // clipvalue clamps; the loss scale factor divides first: 8 / 4 = 2 -> clamped to 1.5; -2 / 4 stays.
    std::vector<float> w{0, 0}, g{8, -2};
    optimizers::SGD sgd(1.0, 0.0, false, {.clipvalue = 1.5, .loss_scale_factor = 4.0});
    sgd.apply({pair_of(g, w)});
    CHECK(w == std::vector<float>{-1.5f, 0.5f});
  }
  {  // Decoupled weight decay on SGD: w - w wd lr - g lr.
    std::vector<double> w{2.0}, g{1.0};
    optimizers::SGD sgd(0.1, 0.0, false, {.weight_decay = 0.5});
    sgd.apply({pair_of(g, w)});
    CHECK(w[0] == doctest::Approx(2.0 - 2.0 * 0.5 * 0.1 - 0.1));
  }
}

TEST_CASE("a clip of 0 clips nothing, as in Keras") {
  // Keras clips only `if self.clipnorm and self.clipnorm > 0` (the same for the other two): the
  // steps are the unclipped ones, and an all-zero gradient stays finite (0 / 0 would be NaN).
  for (const optimizers::options& settings : {optimizers::options{.clipnorm = 0.0}, optimizers::options{.clipvalue = 0.0},
                                             optimizers::options{.global_clipnorm = 0.0}}) {
    std::vector<float> w{1, 1}, g{3, 4}, w_zero{1, 1}, g_zero{0, 0};
    optimizers::SGD sgd(0.1, 0.0, false, settings);
    sgd.apply({pair_of(g, w), pair_of(g_zero, w_zero)});
    CHECK(w == std::vector<float>{1.0f - 0.1f * 3.0f, 1.0f - 0.1f * 4.0f});
    CHECK(w_zero == std::vector<float>{1, 1});
    CHECK(sgd.get_config()[settings.clipnorm ? "clipnorm" : settings.clipvalue ? "clipvalue" : "global_clipnorm"] == 0.0);
  }
}

TEST_CASE("the learning rate: a float over a schedule is Keras' TypeError, and changes nothing") {
  optimizers::Adam scheduled(schedules::ExponentialDecay(0.1, 10, 0.5));
  CHECK_THROWS_WITH_AS(scheduled.set_learning_rate(0.01),
                       doctest::Contains("created with a `LearningRateSchedule` object as its `learning_rate` "
                                         "constructor argument, hence its learning rate is not settable"),
                       std::invalid_argument);
  CHECK(scheduled.learning_rate().is_schedule());
  CHECK(scheduled.current_learning_rate() == 0.1f);
  scheduled.set_learning_rate(schedules::ExponentialDecay(0.2, 10, 0.5));  // a schedule over a schedule
  CHECK(scheduled.current_learning_rate() == 0.2f);
  optimizers::SGD plain(0.1);
  plain.set_learning_rate(0.05);  // a float over a float
  CHECK(plain.current_learning_rate() == 0.05f);
  plain.set_learning_rate(schedules::ExponentialDecay(0.3, 10, 0.5));  // a schedule over a float
  CHECK(plain.learning_rate().is_schedule());
}

TEST_CASE("slots live in the variable dtype") {
  std::vector<float16> w16{float16(1.0f)}, g16{float16(0.5f)};
  std::vector<float> w32{1.0f}, g32{0.5f};
  optimizers::Adam adam;
  adam.apply({pair_of(g16, w16), pair_of(g32, w32)});
  CHECK(adam.slot<float16>(0, "momentum").size() == 1);
  CHECK(adam.slot<float>(1, "velocity").size() == 1);
  CHECK_THROWS_WITH_AS(adam.slot<float>(0, "momentum"), doctest::Contains("are not float32"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(adam.slot<float>(1, "velocity_hat"), doctest::Contains("has no slot 'velocity_hat'"),
                       std::invalid_argument);
  // float16 state is the float computation rounded once per stored value.
  CHECK(adam.slot<float16>(0, "momentum")[0].to_bits() == float16(adam.slot<float>(1, "momentum")[0]).to_bits());
}

TEST_CASE("a rejected apply() leaves variables, slots and iterations untouched") {
  std::vector<float> w1{1, 2}, g1{0.5f, 0.5f}, w2{3}, g2{1};
  optimizers::SGD sgd(0.1, 0.9);
  sgd.apply({pair_of(g1, w1), pair_of(g2, w2)});
  const auto w1_before = w1, w2_before = w2;
  const std::vector<float> slot_before(sgd.slot<float>(0, "momentum").begin(), sgd.slot<float>(0, "momentum").end());

  std::vector<float> short_gradient{1};
  CHECK_THROWS_WITH_AS(sgd.apply({pair_of(g1, w1), pair_of(short_gradient, w1)}),
                       doctest::Contains("the gradient of variable 1 has 1 values for a variable of 2"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(sgd.apply({pair_of(g1, w1)}), doctest::Contains("received 1 variables, but the optimizer was built for 2"),
                       std::invalid_argument);
  std::vector<double> w_double{3}, g_double{1};
  CHECK_THROWS_WITH_AS(sgd.apply({pair_of(g1, w1), pair_of(g_double, w_double)}),
                       doctest::Contains("variable 1 is float64 with 1 values, but the optimizer was built for float32"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(sgd.apply({pair_of(w1, w1), pair_of(g2, w2)}), doctest::Contains("SGD: variable 0: its gradient and the variable overlap; they must lie apart."),
                       std::invalid_argument);
  CHECK(w1 == w1_before);
  CHECK(w2 == w2_before);
  CHECK(std::equal(slot_before.begin(), slot_before.end(), sgd.slot<float>(0, "momentum").begin()));
  CHECK(sgd.iterations() == 1);

  // A learning rate that is not finite in float32 is refused before any write.
  optimizers::SGD huge(1e39);
  CHECK_THROWS_WITH_AS(huge.apply({pair_of(g1, w1)}), doctest::Contains("must be finite"), std::invalid_argument);
  CHECK(w1 == w1_before);
  CHECK(huge.iterations() == 0);
}

TEST_CASE("an apply() with no variables (every layer frozen) is a no-op, as in Keras") {
  optimizers::Adam adam(schedules::ExponentialDecay(0.1, 1, 0.5));
  adam.apply(std::span<const gradient_and_variable>{});
  CHECK(adam.iterations() == 0);
  CHECK(adam.current_learning_rate() == 0.1f);  // the schedule did not advance
  std::vector<float> w{1}, g{1};
  adam.apply({pair_of(g, w)});  // not built for 0 variables: builds now
  CHECK(adam.iterations() == 1);
  adam.apply(std::span<const gradient_and_variable>{});  // and once built, still a no-op
  CHECK(adam.iterations() == 1);
}

TEST_CASE("float64 variables read the hyperparameters in double; float32 ones rounded to float") {
  // Keras casts its Python-float hyperparameters to the variable's dtype.
  std::vector<double> w{0.0}, g;
  optimizers::SGD sgd(0.5, 0.9);
  for (int i = 0; i < 2; ++i) {
    g = {1.0};
    sgd.apply({pair_of(g, w)});
  }
  CHECK(w[0] == -0.5 + (0.9 * -0.5 - 0.5));  // v = -0.5, then 0.9 v - 0.5 (lr 0.5 is exact in float32)
  std::vector<double> decayed{1.0}, zero{0.0};
  optimizers::SGD decay(0.5, 0.0, false, {.weight_decay = 0.1});
  decay.apply({pair_of(zero, decayed)});
  CHECK(decayed[0] == 1.0 - 1.0 * 0.1 * 0.5);
  std::vector<double> clipped{0.0, 0.0}, ones{1.0, 1.0};
  optimizers::SGD clip(1.0, 0.0, false, {.clipnorm = 1.0});
  clip.apply({pair_of(ones, clipped)});
  CHECK(clipped[0] == -1.0 / std::sqrt(2.0));  // the norm in double
  std::vector<double> global{0.0, 0.0}, threes{3.0, 4.0};
  optimizers::SGD global_clip(1.0, 0.0, false, {.global_clipnorm = 0.1});
  global_clip.apply({pair_of(threes, global)});
  CHECK(global[0] == -(3.0 * (0.1 * std::min(1.0 / 5.0, 1.0 / 0.1))));
  std::vector<double> adam_w{1.0}, adam_g{0.5};
  optimizers::Adam adam(0.25, 0.9, 0.999, 0.3);  // epsilon 0.3, not float32's 0.300000012
  adam.apply({pair_of(adam_g, adam_w)});
  const double alpha = 0.25 * std::sqrt(1.0 - 0.999) / (1.0 - 0.9);
  const double m = 0.5 * (1.0 - 0.9), v = 0.25 * (1.0 - 0.999);
  CHECK(adam_w[0] == 1.0 - (m * alpha) / (std::sqrt(v) + 0.3));

  // The same settings on a float32 variable: rounded to float, as before.
  std::vector<float> wf{0.0f}, gf;
  optimizers::SGD sgd_f(0.5, 0.9);
  for (int i = 0; i < 2; ++i) {
    gf = {1.0f};
    sgd_f.apply({pair_of(gf, wf)});
  }
  CHECK(wf[0] == -0.5f + (0.9f * -0.5f - 0.5f));
}

TEST_CASE("SGD: a momentum that rounds to 0 in float32 keeps its slot and steps as Keras does") {
  optimizers::SGD sgd(0.1, 1e-46);  // != 0, so Keras builds the slot; float32 reads 0
  CHECK(sgd.slot_names() == std::vector<std::string_view>{"momentum"});
  std::vector<float> w{1}, g{1};
  sgd.apply({pair_of(g, w)});
  sgd.apply({pair_of(g, w)});
  CHECK(w[0] == (1.0f - 0.1f) - 0.1f);
  CHECK(sgd.slot<float>(0, "momentum")[0] == -0.1f);
  CHECK(sgd.iterations() == 2);
}

TEST_CASE("AdamW: the weight decay is the argument or the option's, never silently one of two") {
  CHECK(*optimizers::AdamW().settings().weight_decay == 0.004);
  CHECK(*optimizers::AdamW(1e-3, 0.01).settings().weight_decay == 0.01);
  CHECK(*optimizers::AdamW(1e-3, std::nullopt, 0.9, 0.999, 1e-7, false, {.weight_decay = 0.1}).settings().weight_decay == 0.1);
  CHECK(*optimizers::AdamW(1e-3, 0.1, 0.9, 0.999, 1e-7, false, {.weight_decay = 0.1}).settings().weight_decay == 0.1);
  CHECK_THROWS_WITH_AS(optimizers::AdamW(1e-3, 0.01, 0.9, 0.999, 1e-7, false, {.weight_decay = 0.1}),
                       "AdamW: `weight_decay` is given twice, as 0.01 and as settings.weight_decay=0.1; give it once.",
                       std::invalid_argument);
}

TEST_CASE("constructor errors use Keras' phrases") {
  CHECK_THROWS_WITH_AS(optimizers::SGD(0.1, 1.5), "`momentum` must be a float between [0, 1]. Received: momentum=1.5",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(optimizers::SGD(0.1, 0.0, false, {.clipnorm = 1.0, .clipvalue = 2.0}),
                       "Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set. Received: clipnorm=1, "
                       "clipvalue=2, global_clipnorm=None",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(optimizers::Adam(0.001, 1.0), doctest::Contains("`beta_1` must be in [0, 1)"), std::invalid_argument);
  // A beta that float32 (the update kernels' dtype) rounds to 1 is refused here, not in apply().
  CHECK_THROWS_WITH_AS(optimizers::Adam(0.001, 0.9, 0.99999999), doctest::Contains("`beta_2` must be in [0, 1)"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(optimizers::Adam(-1.0), doctest::Contains("learning_rate=-1"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(optimizers::SGD(0.1, 0.0, false, {.weight_decay = -1.0}), doctest::Contains("`weight_decay` must be"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(optimizers::SGD(0.1, 0.0, false, {.loss_scale_factor = 0.0}),
                       doctest::Contains("`loss_scale_factor` must be a finite number > 0"), std::invalid_argument);
  // 1e-50 is 0 in float32, where the gradients are divided by it.
  CHECK_THROWS_WITH_AS(optimizers::SGD(0.1, 0.0, false, {.loss_scale_factor = 1e-50}),
                       doctest::Contains("`loss_scale_factor` must be a finite number > 0"), std::invalid_argument);
}

TEST_CASE("schedules: Keras' formulas by hand") {
  const schedules::ExponentialDecay decay(0.1, 100, 0.5);
  CHECK(decay(0) == 0.1);
  CHECK(decay(100) == doctest::Approx(0.05));
  CHECK(decay(50) == doctest::Approx(0.1 * std::sqrt(0.5)));
  CHECK(schedules::ExponentialDecay(0.1, 100, 0.5, true)(150) == doctest::Approx(0.05));

  const schedules::CosineDecay cosine(1.0, 100, 0.1);
  CHECK(cosine(0) == doctest::Approx(1.0));
  CHECK(cosine(50) == doctest::Approx(0.9 * 0.5 + 0.1));
  CHECK(cosine(100) == doctest::Approx(0.1));
  CHECK(cosine(1000) == doctest::Approx(0.1));
  const schedules::CosineDecay warm(0.0, 100, 0.0, 1.0, 10);
  CHECK(warm(5) == doctest::Approx(0.5));
  CHECK(warm(10) == doctest::Approx(1.0));
  CHECK(warm(60) == doctest::Approx(0.5 * (1 + std::cos(std::numbers::pi * 0.5))));

  // The optimizer reads its schedule at `iterations`.
  std::vector<double> w{0}, g{1};
  optimizers::SGD sgd(schedules::ExponentialDecay(1.0, 1, 0.5));
  sgd.apply({pair_of(g, w)});
  g = {1};
  sgd.apply({pair_of(g, w)});
  CHECK(w[0] == doctest::Approx(-1.5));
  CHECK(sgd.current_learning_rate() == 0.25f);

  CHECK_THROWS_WITH_AS(schedules::ExponentialDecay(0.1, 0, 0.5), doctest::Contains("`decay_steps` must be > 0"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(schedules::CosineDecay(0.1, 10, 2.0), doctest::Contains("`alpha` must be in [0, 1]"),
                       std::invalid_argument);
}

TEST_CASE("Keras 3 configs round-trip; unsupported and unknown settings are errors") {
  const optimizers::Adam adam(schedules::CosineDecay(0.01, 500, 0.1), 0.8, 0.99, 1e-6, true, {.global_clipnorm = 2.0});
  const auto config = adam.get_config();
  CHECK(config["name"] == "adam");
  CHECK(config["learning_rate"]["class_name"] == "CosineDecay");
  CHECK(config["learning_rate"]["module"] == "keras.optimizers.schedules");
  CHECK(config["amsgrad"] == true);
  CHECK(config["clipnorm"].is_null());
  const auto loaded = optimizers::Optimizer::from_config({{"class_name", "Adam"}, {"config", config}});
  CHECK(loaded.get_config() == config);
  CHECK(loaded.kind() == optimizers::optimizer_kind::adam);

  const auto sgd_config = optimizers::SGD(0.1, 0.9, true, {.clipvalue = 0.5}).get_config();
  CHECK(sgd_config["momentum"] == 0.9);
  CHECK(optimizers::Optimizer::from_config({{"class_name", "SGD"}, {"config", sgd_config}}).get_config() == sgd_config);
  const auto adamw = optimizers::Optimizer::from_config({{"class_name", "AdamW"}, {"config", optimizers::AdamW(0.002, 0.01).get_config()}});
  CHECK(adamw.settings().weight_decay == 0.01);
  auto adamw_config = optimizers::AdamW().get_config();
  adamw_config.erase("weight_decay");  // absent: Keras' default
  CHECK(optimizers::Optimizer::from_config({{"class_name", "AdamW"}, {"config", adamw_config}}).settings().weight_decay ==
        0.004);
  adamw_config["weight_decay"] = nullptr;  // Keras' AdamW(weight_decay=None) raises
  CHECK_THROWS_WITH_AS(optimizers::Optimizer::from_config({{"class_name", "AdamW"}, {"config", adamw_config}}),
                       doctest::Contains("Argument `weight_decay` must be a float. Received: weight_decay=None"),
                       std::invalid_argument);
  CHECK(optimizers::Optimizer::from_config("adam").kind() == optimizers::optimizer_kind::adam);

  auto with = [&](const char* key, nlohmann::json value) {
    auto c = sgd_config;
    c[key] = std::move(value);
    return nlohmann::json{{"class_name", "SGD"}, {"config", c}};
  };
  CHECK_THROWS_WITH_AS(optimizers::Optimizer::from_config(with("use_ema", true)),
                       doctest::Contains("SGD: `use_ema` is not supported by mixprec"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(optimizers::Optimizer::from_config(with("gradient_accumulation_steps", 4)),
                       doctest::Contains("`gradient_accumulation_steps` is not supported"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(optimizers::Optimizer::from_config(with("centered", true)),
                       doctest::Contains("SGD: unknown setting `\"centered\"`"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(optimizers::Optimizer::from_config(with("momentum", "high")),
                       doctest::Contains("`momentum` must be a number. Received: \"high\""), std::invalid_argument);
  CHECK_THROWS_WITH_AS(optimizers::Optimizer::from_config(nlohmann::json{{"class_name", "RMSprop"}, {"config", nlohmann::json::object()}}),
                       doctest::Contains("Accepted class names: SGD, Adam, AdamW"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(optimizers::Optimizer::from_config("adagrad"), doctest::Contains("Could not interpret optimizer identifier"),
                       std::invalid_argument);
  auto bad_schedule = sgd_config;
  bad_schedule["learning_rate"] = {{"class_name", "ExponentialDecay"},
                                   {"config", {{"initial_learning_rate", 0.1}, {"decay_steps", 1.5}, {"decay_rate", 0.5}}}};
  CHECK_THROWS_WITH_AS(optimizers::Optimizer::from_config(nlohmann::json{{"class_name", "SGD"}, {"config", bad_schedule}}),
                       doctest::Contains("ExponentialDecay: `decay_steps` must be an integer"), std::invalid_argument);
}
