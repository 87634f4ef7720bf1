// Why float16 training needs loss scaling: a regression whose targets are small (|y| ~ 1e-3), as
// the last layers of a deep model see. Its loss gradients, 2 (y_pred - y) / n in float16, fall
// below float16's smallest subnormal (6e-8) once the errors are ~1e-5: the gradients become
// exactly zero and a float16 model stops learning long before a float32 one. The same model under
// mixed_float16 with dynamic loss scaling (what compile() gives it by default) keeps learning.
//
//   float16_underflow [--steps 300]
//
// Prints, every 50 steps, each run's loss, the fraction of the unscaled run's kernel gradients
// that are exactly zero, and the scaled run's loss scale.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>
#include <mixprec/training.hpp>

using namespace mixprec;

namespace {

constexpr std::size_t rows = 256, features = 16, outputs = 8;

template <class P>
using regression = Sequential<P, Input<features>, Dense<outputs>>;

struct data {
  Tensor<float, dynamic, features> x;
  Tensor<float, dynamic, outputs> y;
};

/// y = x W with W ~ N(0, 1e-3^2): targets of about 4e-3.
data make_data() {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  value_buffer<float> x(rows * features), y(rows * outputs);
  for (auto& v : x) v = normal(rng);
  std::vector<double> kernel(features * outputs);
  for (auto& v : kernel) v = 1e-3 * normal(rng);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < outputs; ++c) {
      double sum = 0.0;
      for (std::size_t k = 0; k < features; ++k) sum += double(x[r * features + k]) * kernel[k * outputs + c];
      y[r * outputs + c] = static_cast<float>(sum);
    }
  return {Tensor<float, dynamic, features>(std::move(x)), Tensor<float, dynamic, outputs>(std::move(y))};
}

/// The fraction of the kernel's gradient that is exactly zero (unscaled, as a step without loss
/// scaling computes it).
template <class Model>
double zero_gradients(Model& model, const data& d) {
  const Gradients g = model.compute_gradients(d.x, d.y);
  double zeros = 0.0, total = 0.0;
  g.gradients.front().visit([&](auto values) {
    for (auto v : values) zeros += static_cast<float>(v) == 0.0f ? 1.0 : 0.0;
    total = static_cast<double>(values.size());
  });
  return zeros / total;
}

template <class P>
regression<P> make_model(bool loss_scaling) {
  regression<P> model(Dense<outputs>("dense", weight_settings{.kernel_initializer = initializers::zeros{}}));
  model.compile(optimizers::SGD(0.5), losses::MeanSquaredError(), {}, {.auto_scale_loss = loss_scaling});
  return model;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::size_t steps = 300;
    for (int i = 1; i < argc; ++i) {
      if (std::string_view(argv[i]) == "--steps" && i + 1 < argc) steps = std::stoul(argv[++i]);
      else throw std::invalid_argument("unknown option " + std::string(argv[i]) + "; known: --steps N");
    }
    const data d = make_data();
    auto f32 = make_model<policies::float32>(true);
    auto unscaled = make_model<policies::mixed_float16>(false);
    auto scaled = make_model<policies::mixed_float16>(true);
    std::printf("Linear regression, %zu x %zu -> %zu, targets ~4e-3, SGD(0.5), MSE, full batch\n", rows, features, outputs);
    std::printf("%6s | %12s | %12s %13s | %12s %10s\n", "step", "float32", "f16 no scale", "zero grads", "f16 scaled",
                "loss scale");
    double scale = scaled.loss_scale_optimizer()->dynamic_scale();
    for (std::size_t step = 0; step <= steps; ++step) {
      if (step % 50 == 0 || step == steps)
        std::printf("%6zu | %12.4e | %12.4e %12.1f%% | %12.4e %10.0f\n", step, f32.test_on_batch(d.x, d.y).at("loss"),
                    unscaled.test_on_batch(d.x, d.y).at("loss"), 100.0 * zero_gradients(unscaled, d),
                    scaled.test_on_batch(d.x, d.y).at("loss"), scale);
      if (step == steps) break;
      f32.train_on_batch(d.x, d.y);
      unscaled.train_on_batch(d.x, d.y);
      scale = scaled.train_on_batch(d.x, d.y).at("loss_scale");
    }
    const double without = unscaled.test_on_batch(d.x, d.y).at("loss"), with = scaled.test_on_batch(d.x, d.y).at("loss");
    std::printf("After %zu steps, mixed_float16 without loss scaling ends at %.2fx the loss with it.\n", steps, without / with);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "float16_underflow: %s\n", e.what());
    return 1;
  }
}
