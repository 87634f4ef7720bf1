// Losses and metrics: Keras' documented values, float64 references written from the formulas,
// gradients against central finite differences, dtypes of the gradient, loss scaling, errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include <mixprec/core/float16.hpp>
#include <mixprec/training/losses.hpp>
#include <mixprec/training/metrics.hpp>

using namespace mixprec;

namespace {

std::span<const float> floats(const std::vector<float>& v) { return v; }

/// Keras' formulas in double, sample by sample, averaged over the batch. Targets as floats (one-hot for sparse).
double reference_loss(losses::loss_kind kind, bool from_logits, double smoothing, const std::vector<double>& p,
                      std::vector<double> t, std::size_t cols) {
  const std::size_t rows = p.size() / cols;
  const double eps = 1e-7;
  double total = 0.0;
  for (std::size_t r = 0; r < rows; ++r) {
    const double* x = &p[r * cols];
    double* y = &t[r * cols];
    const double uniform = kind == losses::loss_kind::binary_crossentropy ? 0.5 : 1.0 / static_cast<double>(cols);
    for (std::size_t c = 0; c < cols; ++c) y[c] = y[c] * (1.0 - smoothing) + smoothing * uniform;
    double sample = 0.0;
    switch (kind) {
      case losses::loss_kind::mean_squared_error:
        for (std::size_t c = 0; c < cols; ++c) sample += (x[c] - y[c]) * (x[c] - y[c]) / static_cast<double>(cols);
        break;
      case losses::loss_kind::mean_absolute_error:
        for (std::size_t c = 0; c < cols; ++c) sample += std::fabs(x[c] - y[c]) / static_cast<double>(cols);
        break;
      case losses::loss_kind::binary_crossentropy:
        for (std::size_t c = 0; c < cols; ++c) {
          const double prob = from_logits ? 1.0 / (1.0 + std::exp(-x[c])) : std::clamp(x[c], eps, 1.0 - eps);
          sample -= (y[c] * std::log(prob) + (1.0 - y[c]) * std::log(1.0 - prob)) / static_cast<double>(cols);
        }
        break;
      default: {
        double norm = 0.0;
        for (std::size_t c = 0; c < cols; ++c) norm += from_logits ? std::exp(x[c]) : x[c];
        for (std::size_t c = 0; c < cols; ++c) {
          const double prob = from_logits ? std::exp(x[c]) / norm : std::clamp(x[c] / norm, eps, 1.0 - eps);
          sample -= y[c] * std::log(prob);
        }
      }
    }
    total += sample;
  }
  return total / static_cast<double>(rows);
}

struct loss_case {
  losses::Loss loss;
  bool probabilities;  // predictions must be in (0, 1)
};

}  // namespace

TEST_CASE("Keras' documented loss values") {
  // keras.losses docs: MeanSquaredError, BinaryCrossentropy(from_logits=True), CategoricalCrossentropy,
  // SparseCategoricalCrossentropy.
  const std::vector<float> mse_true{0, 1, 0, 0}, mse_pred{1, 1, 1, 0};
  CHECK(losses::MeanSquaredError().compute<float>(floats(mse_true), mse_pred, 2) == doctest::Approx(0.5));
  CHECK(losses::MeanAbsoluteError().compute<float>(floats(mse_true), mse_pred, 2) == doctest::Approx(0.5));

  const std::vector<float> bce_true{0, 1, 0, 0}, bce_logits{-18.6f, 0.51f, 2.94f, -12.8f};
  CHECK(losses::BinaryCrossentropy(true).compute<float>(floats(bce_true), bce_logits, 4) ==
        doctest::Approx(0.865).epsilon(1e-3));

  const std::vector<float> cce_true{0, 1, 0, 0, 0, 1}, cce_pred{0.05f, 0.95f, 0, 0.1f, 0.8f, 0.1f};
  CHECK(losses::CategoricalCrossentropy().compute<float>(floats(cce_true), cce_pred, 3) ==
        doctest::Approx(1.177).epsilon(1e-3));
  const std::vector<std::int32_t> labels{1, 2};
  CHECK(losses::SparseCategoricalCrossentropy().compute<float>(std::span<const std::int32_t>(labels), cce_pred, 3) ==
        doctest::Approx(1.177).epsilon(1e-3));
  const std::vector<std::int64_t> labels64{1, 2};
  CHECK(losses::SparseCategoricalCrossentropy().compute<float>(std::span<const std::int64_t>(labels64), cce_pred, 3) ==
        doctest::Approx(1.177).epsilon(1e-3));
}

TEST_CASE("every loss against a float64 reference, and its gradient against finite differences") {
  const std::vector<loss_case> cases{
      {losses::MeanSquaredError(), false},
      {losses::MeanAbsoluteError(), false},
      {losses::BinaryCrossentropy(false), true},
      {losses::BinaryCrossentropy(true), false},
      {losses::BinaryCrossentropy(true, 0.2f), false},
      {losses::CategoricalCrossentropy(false), true},
      {losses::CategoricalCrossentropy(true), false},
      {losses::CategoricalCrossentropy(true, 0.1f), false},
      {losses::SparseCategoricalCrossentropy(false), true},
      {losses::SparseCategoricalCrossentropy(true), false},
  };
  std::mt19937 rng(5);
  const std::size_t rows = 6, cols = 5;
  for (const auto& entry : cases) {
    const auto& loss = entry.loss;  // not a binding: lambdas (doctest's INFO) capture it
    const bool probabilities = entry.probabilities;
    INFO(loss.class_name(), " from_logits=", loss.from_logits(), " label_smoothing=", loss.label_smoothing());
    std::uniform_real_distribution<float> logits(-3.0f, 3.0f), unit(0.05f, 0.95f);
    std::vector<float> p(rows * cols), t(rows * cols, 0.0f);
    std::vector<std::int64_t> labels(rows);
    for (auto& v : p) v = probabilities ? unit(rng) : logits(rng);
    for (std::size_t r = 0; r < rows; ++r) {
      labels[r] = static_cast<std::int64_t>(rng() % cols);
      if (loss.kind() == losses::loss_kind::categorical_crossentropy || loss.sparse()) {
        t[r * cols + static_cast<std::size_t>(labels[r])] = 1.0f;
      } else {
        for (std::size_t c = 0; c < cols; ++c) t[r * cols + c] = loss.kind() == losses::loss_kind::binary_crossentropy
                                                                     ? static_cast<float>(rng() % 2)
                                                                     : logits(rng);
      }
    }
    const losses::targets y_true = loss.sparse() ? losses::targets(std::span<const std::int64_t>(labels)) : floats(t);
    std::vector<float> gradient(p.size());
    const float value = loss.compute<float>(y_true, p, cols, gradient);

    const std::vector<double> t64(t.begin(), t.end());
    auto f = [&](const std::vector<double>& x) {
      return reference_loss(loss.kind(), loss.from_logits(), loss.label_smoothing(), x, t64, cols);
    };
    std::vector<double> p64(p.begin(), p.end());
    CHECK(value == doctest::Approx(f(p64)).epsilon(1e-5));
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double h = 1e-6;
      std::vector<double> up = p64, down = p64;
      up[i] += h;
      down[i] -= h;
      const double numeric = (f(up) - f(down)) / (2 * h);
      INFO("element ", i);
      CHECK(gradient[i] == doctest::Approx(numeric).epsilon(1e-4).scale(1e-3));
    }
  }
}

TEST_CASE("the gradient is scaled (loss scaling) and rounded once to the predictions' dtype") {
  const losses::SparseCategoricalCrossentropy loss(true);
  const std::vector<std::int32_t> labels{0, 3};
  const std::vector<float> logits{0.5f, -1.0f, 2.0f, 0.25f, 1.0f, 1.5f, -0.5f, 3.0f};
  std::vector<float> g32(logits.size()), scaled(logits.size());
  const float value = loss.compute<float>(std::span<const std::int32_t>(labels), logits, 4, g32);
  CHECK(loss.compute<float>(std::span<const std::int32_t>(labels), logits, 4, scaled, 1024.0f) == value);
  for (std::size_t i = 0; i < g32.size(); ++i) CHECK(scaled[i] == g32[i] * 1024.0f);

  std::vector<float16> h(logits.begin(), logits.end()), gh(logits.size());
  // float16 predictions widen exactly; the gradient is the float one rounded once.
  std::vector<float> widened(h.begin(), h.end()), gw(logits.size());
  const float hv = loss.compute<float16>(std::span<const std::int32_t>(labels), std::span<const float16>(h), 4, gh, 1024.0f);
  CHECK(hv == loss.compute<float>(std::span<const std::int32_t>(labels), widened, 4, gw, 1024.0f));
  for (std::size_t i = 0; i < gh.size(); ++i) CHECK(gh[i].to_bits() == float16(gw[i]).to_bits());

  // Why float16 needs the scale: a gradient below float16's smallest subnormal vanishes unscaled.
  const std::vector<float> confident{20.0f, 0.0f, 0.0f, 0.0f};
  std::vector<float16> tiny(confident.begin(), confident.end()), unscaled(4), with_scale(4);
  const std::vector<std::int32_t> first{0};
  loss.compute<float16>(std::span<const std::int32_t>(first), std::span<const float16>(tiny), 4, unscaled);
  loss.compute<float16>(std::span<const std::int32_t>(first), std::span<const float16>(tiny), 4, with_scale, 32768.0f);
  CHECK(static_cast<float>(unscaled[1]) == 0.0f);
  CHECK(static_cast<float>(with_scale[1]) > 0.0f);
}

TEST_CASE("crossentropy from logits: a class with target 0 adds nothing, even at a -inf logit or logits 1e38 apart") {
  // The float64 softmax is [1, 0]: the loss is -log 1 = 0 (0 * inf was NaN). A float16 logit that
  // overflowed to -inf under mixed_float16 is where this happens in training.
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::int32_t> label{0};
  for (const std::vector<float>& logits : {std::vector<float>{5.0f, -inf}, std::vector<float>{2e38f, -2e38f}}) {
    std::vector<float> g(2, 9.0f);
    CHECK(losses::SparseCategoricalCrossentropy(true).compute<float>(std::span<const std::int32_t>(label), logits, 2, g) == 0.0f);
    CHECK(g == std::vector<float>{0.0f, 0.0f});
    const std::vector<float> one_hot{1.0f, 0.0f};
    CHECK(losses::CategoricalCrossentropy(true).compute<float>(floats(one_hot), logits, 2, g) == 0.0f);
  }
  // A target on the -inf class is an infinite loss, as its -log p is.
  const std::vector<float> second{0.0f, 1.0f}, logits{5.0f, -inf};
  std::vector<float> g(2);
  CHECK(losses::CategoricalCrossentropy(true).compute<float>(floats(second), logits, 2, g) == inf);
}

TEST_CASE("clipped probabilities have no gradient") {
  const std::vector<float> t{1.0f, 0.0f}, p{1.0f, 0.0f};
  std::vector<float> g(2, 9.0f);
  const float value = losses::BinaryCrossentropy().compute<float>(floats(t), p, 2, g);
  CHECK(value == doctest::Approx(-std::log(1.0 - 1e-7)).epsilon(1e-3));
  CHECK(g[0] == 0.0f);
  CHECK(g[1] == 0.0f);
}

TEST_CASE("loss errors name the bad value and leave the gradient untouched") {
  const std::vector<float> p{0.1f, 0.2f, 0.7f, 0.3f, 0.3f, 0.4f};
  std::vector<float> g(p.size(), 7.0f);
  const losses::SparseCategoricalCrossentropy sparse;
  const std::vector<std::int32_t> out_of_range{1, 3}, negative{-1, 0}, too_many{0, 1, 2};
  CHECK_THROWS_WITH_AS(sparse.compute<float>(std::span<const std::int32_t>(out_of_range), p, 3, g),
                       "Received a label value of 3 which is outside the valid range of [0, 3).", std::invalid_argument);
  CHECK_THROWS_WITH_AS(sparse.compute<float>(std::span<const std::int32_t>(negative), p, 3, g),
                       "Received a label value of -1 which is outside the valid range of [0, 3).", std::invalid_argument);
  CHECK_THROWS_WITH_AS(sparse.compute<float>(std::span<const std::int32_t>(too_many), p, 3, g),
                       doctest::Contains("must have the same shape up until the last dimension"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(sparse.compute<float>(floats(p), p, 3, g), doctest::Contains("takes integer class ids"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(losses::CategoricalCrossentropy().compute<float>(std::span<const std::int32_t>(out_of_range), p, 3, g),
                       doctest::Contains("not class ids"), std::invalid_argument);
  const std::vector<float> short_targets{1.0f};
  CHECK_THROWS_WITH_AS(losses::MeanSquaredError().compute<float>(floats(short_targets), p, 3, g),
                       doctest::Contains("must have the same shape"), std::invalid_argument);
  CHECK_THROWS_AS(losses::MeanSquaredError().compute<float>(floats(p), p, 4, g), std::invalid_argument);
  std::vector<float> short_gradient(2);
  CHECK_THROWS_AS(losses::MeanSquaredError().compute<float>(floats(p), p, 3, short_gradient), std::invalid_argument);
  CHECK(std::all_of(g.begin(), g.end(), [](float v) { return v == 7.0f; }));

  CHECK_THROWS_WITH_AS(losses::CategoricalCrossentropy(false, 1.5f), doctest::Contains("label_smoothing must be in [0, 1]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(losses::get("hinge"), doctest::Contains("Could not interpret loss identifier: hinge"),
                       std::invalid_argument);
}

TEST_CASE("losses by name, and their Keras configs") {
  CHECK(losses::get("mse").kind() == losses::loss_kind::mean_squared_error);
  CHECK(losses::get("mae").kind() == losses::loss_kind::mean_absolute_error);
  CHECK(losses::get("sparse_categorical_crossentropy").sparse());
  CHECK_FALSE(losses::get("SparseCategoricalCrossentropy").from_logits());
  const auto config = losses::CategoricalCrossentropy(true, 0.1f).get_config();
  CHECK(config["name"] == "categorical_crossentropy");
  CHECK(config["reduction"] == "sum_over_batch_size");
  CHECK(config["from_logits"] == true);
  CHECK(config["label_smoothing"].get<float>() == 0.1f);
  CHECK_FALSE(losses::MeanSquaredError().get_config().contains("from_logits"));
}

TEST_CASE("metrics: Keras' accuracy resolution and running means") {
  const std::vector<float> p{0.1f, 0.7f, 0.2f, 0.5f, 0.3f, 0.2f};  // argmax 1, 0
  const std::vector<std::int32_t> labels{1, 1};
  auto accuracy = metrics::get("accuracy", losses::SparseCategoricalCrossentropy());
  CHECK_FALSE(accuracy.kind().has_value());
  accuracy.update<float>(std::span<const std::int32_t>(labels), p, 3);
  CHECK(accuracy.kind() == metrics::metric_kind::sparse_categorical_accuracy);
  CHECK(accuracy.name() == "accuracy");
  CHECK(accuracy.result() == 0.5);
  const std::vector<std::int32_t> both{1, 0};
  accuracy.update<float>(std::span<const std::int32_t>(both), p, 3);
  CHECK(accuracy.result() == 0.75);
  accuracy.reset();
  CHECK(accuracy.result() == 0.0);

  const std::vector<float> one_hot{0, 1, 0, 0, 0, 1};
  auto categorical = metrics::get("acc", losses::CategoricalCrossentropy());
  categorical.update<float>(floats(one_hot), p, 3);
  CHECK(categorical.kind() == metrics::metric_kind::categorical_accuracy);
  CHECK(categorical.result() == 0.5);

  // Binary: from the loss, or from a single output column; Keras' threshold is 0.5 on p as given.
  const std::vector<float> bt{1, 0, 1, 1}, bp{0.9f, 0.6f, 0.4f, 0.51f};
  auto binary = metrics::get("accuracy", losses::BinaryCrossentropy());
  binary.update<float>(floats(bt), bp, 2);
  CHECK(binary.kind() == metrics::metric_kind::binary_accuracy);
  CHECK(binary.result() == 0.5);
  auto single_column = metrics::get("accuracy", losses::MeanSquaredError());
  single_column.update<float>(floats(bt), bp, 1);
  CHECK(single_column.kind() == metrics::metric_kind::binary_accuracy);

  auto mse = metrics::get("mse", losses::MeanSquaredError());
  auto mae = metrics::get("mean_absolute_error", losses::MeanSquaredError());
  mse.update<float>(floats(bt), bp, 2);
  mae.update<float>(floats(bt), bp, 2);
  double squares = 0.0, absolute = 0.0;
  for (std::size_t i = 0; i < bt.size(); ++i) {
    const double d = static_cast<double>(bp[i]) - bt[i];
    squares += d * d;
    absolute += std::fabs(d);
  }
  CHECK(mse.result() == doctest::Approx(squares / 4));
  CHECK(mae.result() == doctest::Approx(absolute / 4));

  // 16-bit predictions are read as their float values.
  const std::vector<bfloat16> pb(p.begin(), p.end());
  auto sparse = metrics::get("sparse_categorical_accuracy", losses::MeanSquaredError());
  sparse.update<bfloat16>(std::span<const std::int32_t>(labels), std::span<const bfloat16>(pb), 3);
  CHECK(sparse.result() == 0.5);
}

TEST_CASE("metric errors") {
  const std::vector<float> p{0.1f, 0.7f, 0.2f};
  auto sparse = metrics::get("sparse_categorical_accuracy", losses::MeanSquaredError());
  CHECK_THROWS_WITH_AS(sparse.update<float>(floats(p), p, 3), doctest::Contains("expects 1 class ids"),
                       std::invalid_argument);
  auto binary = metrics::get("binary_accuracy", losses::MeanSquaredError());
  const std::vector<std::int32_t> labels{1};
  CHECK_THROWS_WITH_AS(binary.update<float>(std::span<const std::int32_t>(labels), p, 3),
                       doctest::Contains("expects 3 float targets"), std::invalid_argument);
  CHECK_THROWS_AS(binary.update<float>(floats(p), p, 2), std::invalid_argument);
  CHECK(binary.result() == 0.0);
  CHECK_THROWS_WITH_AS(metrics::get("f1", losses::MeanSquaredError()),
                       doctest::Contains("Could not interpret metric identifier: f1"), std::invalid_argument);
}
