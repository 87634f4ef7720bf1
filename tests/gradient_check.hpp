// The gradient checks shared by test_gradients.cpp and test_gradients_policies.cpp (split in
// two translation units so that they compile in parallel): data, a float64 reference loss,
// the models, the finite-difference and unit-roundoff checkers.
//
// float64: every layer kind and every loss, each gradient entry against the central difference
//   (L(w + h) - L(w - h)) / 2h of a float64 loss written out here (the library's losses compute
//   in float32, as Keras' do, so differencing their value could not resolve 1e-6).
// Other policies: the gradients of the same model at the same (rounded) weights against the
//   float64 gradients, within a bound made of the compute dtype's unit roundoff; the checker
//   itself must reject a gradient with a wrong sign or a missing term.
// Also: the dtypes and shapes of the gradients, the RuntimeModel built from the same config gives
// the same bits, nothing changes when gradients are computed, the errors.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>
#include <mixprec/runtime.hpp>
#include <mixprec/training.hpp>

#include "model_weights.hpp"



namespace gradient_check {

using namespace mixprec;
using mixprec::test::copy_weights;
using mixprec::test::weight_bytes;

constexpr std::size_t classes = 3;  // every model below ends in 3 columns

// ---------------------------------------------------------------------------------------------
// Data. Inputs and float targets are rounded to bfloat16, so that every policy sees the same
// values (a bfloat16 number of moderate size is exact in float16, float32 and float64).

inline std::vector<float> normal_values(std::size_t n, std::mt19937_64& rng, double scale = 1.0) {
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<float> values(n);
  for (auto& v : values) v = static_cast<float>(cast<bfloat16>(normal(rng)));
  return values;
}

enum class target_kind { regression, binary, one_hot, class_ids };

struct labels {
  target_kind kind = target_kind::regression;
  std::vector<float> floats;         // rows x classes, unless class ids
  std::vector<std::int32_t> ids;     // one per row
};

inline labels make_labels(target_kind kind, std::size_t rows, std::mt19937_64& rng) {
  labels t{kind, {}, {}};
  std::uniform_int_distribution<std::int32_t> pick(0, static_cast<std::int32_t>(classes) - 1);
  switch (kind) {
    case target_kind::regression: t.floats = normal_values(rows * classes, rng); break;
    case target_kind::binary:
      t.floats.resize(rows * classes);
      for (auto& v : t.floats) v = static_cast<float>(pick(rng) % 2);
      break;
    case target_kind::one_hot:
      t.floats.assign(rows * classes, 0.0f);
      for (std::size_t r = 0; r < rows; ++r) t.floats[r * classes + static_cast<std::size_t>(pick(rng))] = 1.0f;
      break;
    case target_kind::class_ids:
      for (std::size_t r = 0; r < rows; ++r) t.ids.push_back(pick(rng));
      break;
  }
  return t;
}

struct loss_case {
  const char* name;
  losses::Loss loss;
  target_kind targets;
};

/// The loss in float64, written from Keras' definitions (see losses.hpp's table): the reference
/// that the finite differences difference. y is rows x classes.
inline double reference_loss(const losses::Loss& loss, std::span<const double> y, const labels& t) {
  const std::size_t rows = y.size() / classes;
  const double s = loss.label_smoothing();
  double total = 0.0;
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<double> p(y.begin() + static_cast<std::ptrdiff_t>(r * classes),
                          y.begin() + static_cast<std::ptrdiff_t>((r + 1) * classes));
    std::vector<double> target(classes, 0.0);
    if (t.kind == target_kind::class_ids) target[static_cast<std::size_t>(t.ids[r])] = 1.0;
    else for (std::size_t c = 0; c < classes; ++c) target[c] = t.floats[r * classes + c];
    const auto inside_clip = [](double o) {
      // Keras clips probabilities to [1e-7, 1 - 1e-7] (no gradient there): the data keeps away.
      REQUIRE(o > 1e-6);
      REQUIRE(o < 1.0 - 1e-6);
      return o;
    };
    double row = 0.0;
    switch (loss.kind()) {
      case losses::loss_kind::mean_squared_error:
        for (std::size_t c = 0; c < classes; ++c) row += (p[c] - target[c]) * (p[c] - target[c]) / classes;
        break;
      case losses::loss_kind::mean_absolute_error:
        for (std::size_t c = 0; c < classes; ++c) row += std::abs(p[c] - target[c]) / classes;
        break;
      case losses::loss_kind::binary_crossentropy:
        for (std::size_t c = 0; c < classes; ++c) {
          const double tc = target[c] * (1.0 - s) + s / 2.0;
          if (loss.from_logits()) {
            row += (std::max(p[c], 0.0) - p[c] * tc + std::log1p(std::exp(-std::abs(p[c])))) / classes;
          } else {
            const double o = inside_clip(p[c]);
            row += -(tc * std::log(o) + (1.0 - tc) * std::log(1.0 - o)) / classes;
          }
        }
        break;
      case losses::loss_kind::categorical_crossentropy:
      case losses::loss_kind::sparse_categorical_crossentropy: {
        for (auto& tc : target) tc = tc * (1.0 - s) + s / classes;
        if (loss.from_logits()) {
          const double largest = *std::max_element(p.begin(), p.end());
          double sum = 0.0;
          for (double x : p) sum += std::exp(x - largest);
          const double log_sum_exp = largest + std::log(sum);
          for (std::size_t c = 0; c < classes; ++c) row += target[c] * (log_sum_exp - p[c]);
        } else {
          double sum = 0.0;
          for (double o : p) sum += o;
          for (std::size_t c = 0; c < classes; ++c) row -= target[c] * std::log(inside_clip(p[c] / sum));
        }
        break;
      }
    }
    total += row;
  }
  return total / static_cast<double>(rows);
}

// ---------------------------------------------------------------------------------------------
// Models and weights.

/// Every weight's values as float64 (exact: every dtype here widens exactly).
inline std::vector<double> as_doubles(const weight_handle& w) {
  const std::size_t count = w.bytes.size() / detail::dtype_size(w.dtype);
  std::vector<double> out(count);
  with_dtype_at(*find_dtype(w.dtype), [&](auto type) {
    using T = typename decltype(type)::type;
    if constexpr (FloatingDType<T>) {
      std::vector<T> values(count);
      std::memcpy(values.data(), w.bytes.data(), w.bytes.size());
      for (std::size_t i = 0; i < count; ++i) out[i] = cast<double>(values[i]);
    }
  });
  return out;
}
inline std::vector<double> as_doubles(const AnyTensor& t) {
  const value_buffer<double> values = t.values_as<double>();
  return {values.begin(), values.end()};
}
inline void load(const weight_handle& w, const std::vector<double>& values) {
  w.load("float64", std::as_bytes(std::span(values)));
}

/// Random trainable weights, away from the initializers' special values (zero biases, unit
/// gammas), so every term of every gradient is exercised.
template <class Model>
void randomize(Model& model, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (const weight_handle& w : model.trainable_weights()) {
    std::vector<double> values(as_doubles(w).size());
    std::size_t fan_in = 1;
    for (std::size_t i = 0; i + 1 < w.extents.size(); ++i) fan_in *= w.extents[i];
    const bool gamma = w.path.ends_with("/gamma");
    for (auto& v : values) {
      if (w.extents.size() >= 2) v = normal(rng) / std::sqrt(static_cast<double>(fan_in));
      else v = gamma ? 1.0 + 0.25 * normal(rng) : 0.2 * normal(rng);
    }
    load(w, values);
  }
}

/// A batch for a model: inputs and labels, as compile-time tensors and as AnyTensors.
template <class Model>
struct batch {
  using input_type = rebind_tensor_t<typename Model::input_type, float>;
  using float_labels = rebind_tensor_t<typename Model::output_type, float>;
  input_type x;
  labels y;

  batch(input_type inputs, labels targets) : x(std::move(inputs)), y(std::move(targets)) {}
  batch(std::size_t rows, target_kind kind, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::size_t features = 1;
    for (std::size_t i = 1; i < input_type::rank; ++i) features *= input_type::shape_type::extents[i];
    const std::vector<float> values = normal_values(rows * features, rng);
    x = input_type(value_buffer<float>(values.begin(), values.end()));
    y = make_labels(kind, rows, rng);
  }
  /// Drops row r (for the checker's self-test).
  batch without_row(std::size_t r) const {
    batch b = *this;
    const std::size_t features = x.size() / x.batch();
    value_buffer<float> values(x.values().begin(), x.values().end());
    values.erase(values.begin() + static_cast<std::ptrdiff_t>(r * features),
                 values.begin() + static_cast<std::ptrdiff_t>((r + 1) * features));
    b.x = input_type(std::move(values));
    if (y.kind == target_kind::class_ids) {
      b.y.ids.erase(b.y.ids.begin() + static_cast<std::ptrdiff_t>(r));
    } else {
      b.y.floats.erase(b.y.floats.begin() + static_cast<std::ptrdiff_t>(r * classes),
                       b.y.floats.begin() + static_cast<std::ptrdiff_t>((r + 1) * classes));
    }
    return b;
  }
  std::size_t rows() const { return x.batch(); }

  template <class M>
  Gradients gradients(M& model) const {
    if constexpr (std::is_same_v<M, RuntimeModel>) {
      if (y.kind == target_kind::class_ids) return model.compute_gradients(AnyTensor(x), AnyTensor({rows()}, y.ids));
      return model.compute_gradients(AnyTensor(x), AnyTensor({rows(), classes}, y.floats));
    } else {
      if (y.kind == target_kind::class_ids) return model.compute_gradients(x, Tensor<std::int32_t, dynamic>(y.ids));
      return model.compute_gradients(x, float_labels(value_buffer<float>(y.floats.begin(), y.floats.end())));
    }
  }
  template <class M>
  Logs train(M& model) const {
    if (y.kind == target_kind::class_ids) return model.train_on_batch(x, Tensor<std::int32_t, dynamic>(y.ids));
    return model.train_on_batch(x, float_labels(value_buffer<float>(y.floats.begin(), y.floats.end())));
  }
};

// ---------------------------------------------------------------------------------------------
// The models: each a tiny Sequential whose weightless layers sit after a Dense or Conv2D, so that
// their input gradients feed an earlier layer's weight gradients. Data and weights are random
// and continuous, so the kinks (relu at 0, ties in a max-pooling window, MAE at p = t, l1 at
// w = 0) lie, with probability ~1, farther than the step h from every point evaluated.

template <class A>
struct dense_activation {
  static constexpr std::size_t rows = 8;
  template <class P>
  using model = Sequential<P, Input<4>, Dense<5, A>, Dense<3, A>, Dense<3>>;
  template <class P>
  static model<P> make() { return {}; }
};

/// The first Conv2D's input gradient is never computed: the Conv2D under test is the second. A
/// linear first one lends its output, over which the second writes its input gradient.
template <class Stride, class Pad, class FirstActivation = activations::tanh>
struct conv2d_case {
  static constexpr std::size_t rows = 3;
  template <class P>
  using model = Sequential<P, Input<6, 6, 2>, Conv2D<3, 2, 2, FirstActivation>,
                           Conv2D<2, 3, 3, activations::sigmoid, Stride, Pad>, Flatten<>, Dense<3>>;
  template <class P>
  static model<P> make() { return {}; }
};

/// Conv2D -> Pool: tanh, not relu, before the pooling (no ties among zeros); linear makes the
/// Conv2D lend its output, over which the pooling's backward writes its pre-activation gradient.
template <class Pool, class ConvActivation = activations::tanh>
struct pooling_case {
  static constexpr std::size_t rows = 3;
  template <class P>
  using model = Sequential<P, Input<6, 6, 2>, Conv2D<3, 2, 2, ConvActivation>, Pool, Flatten<>, Dense<3>>;
  template <class P>
  static model<P> make() { return {}; }
};

/// Pool -> Conv2D: the pooling lends its output to the 1 x 1 Conv2D above, which writes its input
/// gradient over it; the pooling then finds its maxima again from its input.
struct pooling_under_conv_case {
  static constexpr std::size_t rows = 3;
  template <class P>
  using model = Sequential<P, Input<6, 6, 2>, Conv2D<3, 2, 2, activations::tanh>, MaxPooling2D<2>, Conv2D<2, 1, 1>,
                           Flatten<>, Dense<3>>;
  template <class P>
  static model<P> make() { return {}; }
};

/// A batch large enough that Conv2D walks it in several chunks of samples, and adds several
/// chunks per slice and several slices for its weight gradients (the first Conv2D: 8 chunks of 6
/// samples in 4 slices; the second, whose input gradient is computed: 4 chunks). No max pooling:
/// among this many 16-bit values, ties in a window (which rounding makes) are certain.
struct chunked_conv_case {
  static constexpr std::size_t rows = 48;
  template <class P>
  using model = Sequential<P, Input<28, 28, 2>, Conv2D<4, 3, 3, activations::tanh>,
                           Conv2D<3, 3, 3, activations::sigmoid, strides<3>>, Flatten<>, Dense<3>>;
  template <class P>
  static model<P> make() { return {}; }
};

/// chunked_conv_case with only the first Conv2D trained: its chunked, sliced weight gradients,
/// through the second's chunked input gradient. The finite differences cost two forward passes
/// a weight, which over all 766 weights run for minutes under the sanitizers.
struct chunked_conv_first_layer_case : chunked_conv_case {
  template <class P>
  static model<P> make() {
    model<P> frozen;
    frozen.template layer<1>().set_trainable(false);
    frozen.template layer<3>().set_trainable(false);
    return frozen;
  }
};

struct batch_normalization_dense {
  static constexpr std::size_t rows = 8;
  template <class P>
  using model = Sequential<P, Input<4>, Dense<5, activations::gelu>, BatchNormalization<>, Dense<3>>;
  template <class P>
  static model<P> make() { return {}; }
};

struct batch_normalization_conv {
  static constexpr std::size_t rows = 3;
  template <class P>
  using model = Sequential<P, Input<4, 4, 2>, Conv2D<3, 2, 2, activations::tanh>, BatchNormalization<>, Flatten<>,
                           Dense<3>>;
  template <class P>
  static model<P> make() { return {}; }
};

struct dropout_case {
  static constexpr std::size_t rows = 8;
  template <class P>
  using model = Sequential<P, Input<4>, Dense<6, activations::tanh>, Dropout<>, Dense<3>>;
  template <class P>
  static model<P> make() {
    return model<P>(Dense<6, activations::tanh>(), Dropout<>(0.4, "dropout", 3), Dense<3>());
  }
};

template <class A>
struct activation_layer {
  static constexpr std::size_t rows = 8;
  template <class P>
  using model = Sequential<P, Input<4>, Dense<5>, Activation<A>, Dense<3>>;
  template <class P>
  static model<P> make() { return {}; }
};

struct regularized {
  static constexpr std::size_t rows = 8;
  static constexpr bool unregularized = true;  // model<P>() is the same model without its regularizers
  template <class P>
  using model = Sequential<P, Input<4>, Dense<5, activations::tanh>, BatchNormalization<>, Dense<3>>;
  template <class P>
  static model<P> make() {
    BatchNormalization<>::settings_type bn;
    // Factors large enough that the regularizers' terms matter at bfloat16's precision (the
    // checker's self-test drops them).
    bn.gamma_regularizer = regularizers::l2{0.1};
    bn.beta_regularizer = regularizers::l1{0.05};
    return model<P>(Dense<5, activations::tanh>("dense", weight_settings{.kernel_regularizer = regularizers::l2{0.2},
                                                                           .bias_regularizer = regularizers::l1{0.05}}),
                    BatchNormalization<>("batch_normalization", bn),
                    Dense<3>("dense_1", weight_settings{.kernel_regularizer = regularizers::l1_l2{0.05, 0.1}}));
  }
};

/// For the losses: a head that gives logits, probabilities per column, or per row.
template <class Last>
struct loss_model {
  static constexpr std::size_t rows = 8;
  template <class P>
  using model = Sequential<P, Input<4>, Dense<6, activations::tanh>, Dense<3, Last>>;
  template <class P>
  static model<P> make() { return {}; }
};

// ---------------------------------------------------------------------------------------------
// The float64 check.

/// Central differences of the float64 reference loss (plus the regularization losses) in every
/// trainable weight. The step is h = 1e-6 max(1, |w|): the truncation error h^2 L''' / 6 and the
/// rounding error ~eps |L| / h are then both below 1e-9, far under the tolerance.
template <class Model, class Batch>
std::vector<std::vector<double>> finite_differences(Model& model, const Batch& data, const losses::Loss& loss) {
  const auto evaluate = [&] {
    const std::span<const double> output = model.forward_for_training(data.x);
    return reference_loss(loss, output, data.y) + model.regularization_loss();
  };
  std::vector<std::vector<double>> result;
  for (const weight_handle& w : model.trainable_weights()) {
    std::vector<double> values = as_doubles(w);
    std::vector<double> derivative(values.size());
    for (std::size_t j = 0; j < values.size(); ++j) {
      const double original = values[j];
      const double h = 1e-6 * std::max(1.0, std::abs(original));
      const double up = original + h, down = original - h;
      values[j] = up;
      load(w, values);
      const double plus = evaluate();
      values[j] = down;
      load(w, values);
      const double minus = evaluate();
      values[j] = original;
      derivative[j] = (plus - minus) / (up - down);
    }
    load(w, values);
    result.push_back(std::move(derivative));
  }
  return result;
}

/// Each float64 gradient entry against its central difference:
///   |g - fd| <= 1e-6 (|fd| + max |fd|)
/// (max over the model's entries). The float64 gradients are not exact: the loss and its gradient
/// with respect to the output are computed in float32 (Keras' rule), so every output gradient
/// carries a relative error of a few 2^-24 = 6e-8 (the largest ratio seen below is 6e-8: 1e-6
/// leaves a margin of ~15), and the second term keeps entries near zero from demanding a relative
/// accuracy nothing has.
template <class Case>
void check_float64(const loss_case& lc, std::uint64_t seed) {
  using Model = typename Case::template model<policies::float64>;
  CAPTURE(lc.name);
  Model model = Case::template make<policies::float64>();
  randomize(model, seed);
  model.compile(optimizers::SGD(0.1), lc.loss);
  const batch<Model> data(Case::rows, lc.targets, seed + 1);

  const Gradients g = data.gradients(model);
  const auto fd = finite_differences(model, data, lc.loss);
  const auto handles = model.trainable_weights();
  REQUIRE(g.gradients.size() == handles.size());
  REQUIRE(fd.size() == handles.size());

  // The loss reported is the library's float32 loss plus the regularization: the reference to
  // float32's accuracy.
  const double reference = reference_loss(lc.loss, model.forward_for_training(data.x), data.y) + model.regularization_loss();
  CHECK(std::abs(g.loss - reference) <= 1e-6 * (1.0 + std::abs(reference)));

  double largest = 0.0;
  for (const auto& d : fd)
    for (double v : d) largest = std::max(largest, std::abs(v));
  REQUIRE(largest > 0.0);
  for (std::size_t i = 0; i < handles.size(); ++i) {
    CAPTURE(handles[i].path);
    CHECK(g.gradients[i].dtype() == "float64");
    CHECK(g.gradients[i].extents() == handles[i].extents);
    const std::vector<double> computed = as_doubles(g.gradients[i]);
    REQUIRE(computed.size() == fd[i].size());
    double worst = 0.0;  // the largest |g - fd| / (|fd| + max |fd|)
    std::size_t worst_index = 0;
    for (std::size_t j = 0; j < computed.size(); ++j) {
      const double ratio = std::abs(computed[j] - fd[i][j]) / (std::abs(fd[i][j]) + largest);
      if (ratio > worst) {
        worst = ratio;
        worst_index = j;
      }
    }
    CAPTURE(worst_index);
    CAPTURE(computed[worst_index]);
    CAPTURE(fd[i][worst_index]);
    CHECK(worst <= 1e-6);
  }
}

// ---------------------------------------------------------------------------------------------
// The other policies.

/// What check_policy needs of a policy, as values: one instantiation per case serves every policy.
struct policy_under_test {
  std::string_view name;
  std::string_view variable_dtype;
  double unit_roundoff;  // of the compute dtype

  template <class P>
  static constexpr policy_under_test of() {
    using C = typename P::compute_dtype;
    const double u = std::is_same_v<C, bfloat16> ? 0x1p-8 : std::is_same_v<C, float16> ? 0x1p-11 : 0x1p-24;
    return {P::name, dtype_name_v<typename P::variable_dtype>, u};
  }
};

/// The bound on a low-precision gradient g against the float64 gradient g64 at the same weights
/// and data, tensor by tensor (w: one trainable weight, W of them):
///
///   ||g_w - g64_w||_2 <= k (u + u32) (||g64_w||_2 + ||g64||_2 / sqrt(W))
///
/// u is the compute dtype's unit roundoff (2^-24 float32, 2^-8 bfloat16, 2^-11 float16): every
/// activation and activation gradient is rounded to the compute dtype once per layer, so each
/// carries a relative error of a few u, which the backward pass propagates linearly. u32 = 2^-24
/// is added because the loss and its gradient are computed in float32 under every policy, the
/// float64 reference included. ||g64||_2 / sqrt(W), the model's gradient norm spread over its
/// tensors, is the problem's scale: a tensor whose exact gradient nearly cancels still gets the
/// rounding errors of the terms that cancel. k = 12 is the modest constant: over every case and
/// policy below, the largest ||g_w - g64_w|| / ((u + u32) (...)) seen is 3.9 (mixed_bfloat16,
/// exponential activations, whose relative error grows with |x|), while the checker's self-test
/// gradients (one tensor's sign flipped, one sample's term or the regularizers' terms missing)
/// are off by 21 or more in the same units.
struct gradient_bound {
  double u;         // the compute dtype's unit roundoff
  double k = 12.0;  // the modest constant
};
inline constexpr double u32 = 0x1p-24;

inline double norm(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

/// Whether g is within the bound of g64 (see gradient_bound); `report` says by how much.
inline bool gradient_bound_holds(const std::vector<std::vector<double>>& g, const std::vector<std::vector<double>>& g64,
                          const gradient_bound& b, std::string* report = nullptr) {
  REQUIRE(g.size() == g64.size());
  double total = 0.0;
  for (const auto& v : g64) total += norm(v) * norm(v);
  const double scale = std::sqrt(total) / std::sqrt(static_cast<double>(g64.size()));
  bool ok = true;
  for (std::size_t i = 0; i < g.size(); ++i) {
    REQUIRE(g[i].size() == g64[i].size());
    std::vector<double> difference(g[i].size());
    for (std::size_t j = 0; j < g[i].size(); ++j) difference[j] = g[i][j] - g64[i][j];
    const double error = norm(difference);
    const double bound = b.k * (b.u + u32) * (norm(g64[i]) + scale);
    if (report)
      *report += "tensor " + std::to_string(i) + ": ||g - g64|| " + std::to_string(error) + ", bound " +
                 std::to_string(bound) + "\n";
    ok = ok && error <= bound;
  }
  return ok;
}

inline std::vector<std::vector<double>> doubles_of(const Gradients& g) {
  std::vector<std::vector<double>> out;
  for (const auto& t : g.gradients) out.push_back(as_doubles(t));
  return out;
}

inline std::vector<std::vector<std::byte>> bytes_of(const Gradients& g) {
  std::vector<std::vector<std::byte>> out;
  for (const auto& t : g.gradients)
    t.visit([&](auto values) {
      const auto bytes = std::as_bytes(values);
      out.emplace_back(bytes.begin(), bytes.end());
    });
  return out;
}

/// The model of a config with every layer under another dtype policy, as a RuntimeModel: the
/// policies share the runtime model's compiled layers instead of instantiating each case's
/// Sequential once per policy (compile time), and check_runtime_model shows that both model
/// kinds give the same bits.
inline RuntimeModel under_policy(const nlohmann::ordered_json& config, std::string_view policy) {
  nlohmann::ordered_json changed = config;
  for (auto& layer : changed["config"]["layers"])
    if (layer["class_name"] != "InputLayer") layer["config"]["dtype"] = std::string(policy);
  return RuntimeModel::from_config(changed);
}

template <class Case>
void check_policy(const loss_case& lc, std::uint64_t seed, const policy_under_test& policy) {
  using Model64 = typename Case::template model<policies::float64>;
  CAPTURE(lc.name);
  CAPTURE(policy.name);
  Model64 original = Case::template make<policies::float64>();
  randomize(original, seed);
  RuntimeModel model = under_policy(original.get_config(), policy.name);
  copy_weights(original, model);  // rounded to the variable dtype
  Model64 reference = Case::template make<policies::float64>();
  copy_weights(model, reference);  // exact: the float64 gradients at the same point
  model.compile(optimizers::SGD(0.1), lc.loss);
  reference.compile(optimizers::SGD(0.1), lc.loss);
  const batch<Model64> data64(Case::rows, lc.targets, seed + 1);
  const batch<Model64>& data = data64;

  const Gradients g = data.gradients(model);
  const Gradients g64 = data64.gradients(reference);
  const auto handles = model.trainable_weights();
  REQUIRE(g.gradients.size() == handles.size());
  for (std::size_t i = 0; i < handles.size(); ++i) {
    // In the variable dtype (float32 under the mixed policies), with the weight's shape.
    CHECK(g.gradients[i].dtype() == handles[i].dtype);
    CHECK(g.gradients[i].dtype() == policy.variable_dtype);
    CHECK(g.gradients[i].extents() == handles[i].extents);
  }
  const gradient_bound bound{policy.unit_roundoff};
  std::string report;
  const auto computed = doubles_of(g), exact = doubles_of(g64);
  const bool holds = gradient_bound_holds(computed, exact, bound, &report);
  CAPTURE(report);
  CHECK(holds);
  CHECK(std::abs(g.loss - g64.loss) <= bound.k * (bound.u + u32) * (1.0 + std::abs(g64.loss)));

  // The checker's self-test: it rejects the float64 gradient with one tensor's sign flipped
  // (every tensor whose gradient matters at the model's scale)...
  double total = 0.0;
  for (const auto& v : exact) total += norm(v) * norm(v);
  for (std::size_t i = 0; i < exact.size(); ++i) {
    if (norm(exact[i]) < 0.1 * std::sqrt(total / static_cast<double>(exact.size()))) continue;
    auto flipped = exact;
    for (double& v : flipped[i]) v = -v;
    CAPTURE(i);
    CHECK_FALSE(gradient_bound_holds(flipped, exact, bound));
  }
  // ... the gradient lacking one sample's term: that of the other rows, times (rows - 1) / rows
  // (with BatchNormalization or Dropout, whose rows interact, it is merely another wrong gradient;
  // a batch of many rows, chunked_conv_case's, leaves one row's term within the bound)...
  if (data.rows() <= 8) {
    const batch<Model64> fewer = data64.without_row(0);
    auto missing = doubles_of(fewer.gradients(reference));
    const double factor = static_cast<double>(data.rows() - 1) / static_cast<double>(data.rows());
    for (auto& v : missing)
      for (double& x : v) x *= factor;
    CHECK_FALSE(gradient_bound_holds(missing, exact, bound));
  }
  // ... and the gradient without the regularizers' terms.
  if constexpr (requires { Case::unregularized; }) {
    Model64 plain;
    copy_weights(reference, plain);
    plain.compile(optimizers::SGD(0.1), lc.loss);
    CHECK_FALSE(gradient_bound_holds(doubles_of(data64.gradients(plain)), exact, bound));
  }
}

/// The RuntimeModel built from the Sequential's config gives the same gradients, bit for bit.
template <class Case, class P>
void check_runtime_model(const loss_case& lc, std::uint64_t seed) {
  using Model = typename Case::template model<P>;
  CAPTURE(P::name);
  Model model = Case::template make<P>();
  randomize(model, seed);
  RuntimeModel runtime = RuntimeModel::from_config(model.get_config());
  copy_weights(model, runtime);
  model.compile(optimizers::SGD(0.1), lc.loss);
  runtime.compile(optimizers::SGD(0.1), lc.loss);
  const batch<Model> data(Case::rows, lc.targets, seed + 1);
  const Gradients a = data.gradients(model);
  const Gradients b = data.gradients(runtime);
  CHECK(a.loss == b.loss);
  REQUIRE(a.gradients.size() == b.gradients.size());
  REQUIRE(runtime.trainable_weights().size() == b.gradients.size());
  for (std::size_t i = 0; i < a.gradients.size(); ++i) {
    CHECK(a.gradients[i].dtype() == b.gradients[i].dtype());
    CHECK(a.gradients[i].extents() == b.gradients[i].extents());
  }
  CHECK(bytes_of(a) == bytes_of(b));
}

inline const loss_case mse{"MeanSquaredError", losses::MeanSquaredError(), target_kind::regression};
inline const loss_case sparse_logits{"SparseCategoricalCrossentropy(from_logits)", losses::SparseCategoricalCrossentropy(true),
                              target_kind::class_ids};

/// Every loss with the head it needs (logits, or probabilities in (0, 1)).
template <class F>
void for_each_loss(F&& f) {
  using logits = loss_model<activations::linear>;
  using sigmoid = loss_model<activations::sigmoid>;
  using softmax = loss_model<activations::softmax>;
  f.template operator()<logits>(mse);
  f.template operator()<logits>(loss_case{"MeanAbsoluteError", losses::MeanAbsoluteError(), target_kind::regression});
  f.template operator()<logits>(
      loss_case{"BinaryCrossentropy(from_logits)", losses::BinaryCrossentropy(true), target_kind::binary});
  f.template operator()<logits>(
      loss_case{"BinaryCrossentropy(from_logits, 0.1)", losses::BinaryCrossentropy(true, 0.1f), target_kind::binary});
  f.template operator()<sigmoid>(
      loss_case{"BinaryCrossentropy", losses::BinaryCrossentropy(false), target_kind::binary});
  f.template operator()<sigmoid>(
      loss_case{"BinaryCrossentropy(0.2)", losses::BinaryCrossentropy(false, 0.2f), target_kind::binary});
  f.template operator()<logits>(
      loss_case{"CategoricalCrossentropy(from_logits)", losses::CategoricalCrossentropy(true), target_kind::one_hot});
  f.template operator()<logits>(loss_case{"CategoricalCrossentropy(from_logits, 0.1)",
                                          losses::CategoricalCrossentropy(true, 0.1f), target_kind::one_hot});
  f.template operator()<softmax>(
      loss_case{"CategoricalCrossentropy", losses::CategoricalCrossentropy(false), target_kind::one_hot});
  f.template operator()<softmax>(
      loss_case{"CategoricalCrossentropy(0.1)", losses::CategoricalCrossentropy(false, 0.1f), target_kind::one_hot});
  f.template operator()<logits>(sparse_logits);
  f.template operator()<softmax>(loss_case{"SparseCategoricalCrossentropy", losses::SparseCategoricalCrossentropy(false),
                                           target_kind::class_ids});
}

/// Every layer case, with a loss.
template <class F>
void for_each_layer_case(F&& f) {
  f.template operator()<dense_activation<activations::linear>>(mse);
  f.template operator()<dense_activation<activations::relu>>(sparse_logits);
  f.template operator()<dense_activation<activations::gelu>>(mse);
  f.template operator()<dense_activation<activations::gelu_approximate>>(sparse_logits);
  f.template operator()<dense_activation<activations::sigmoid>>(mse);
  f.template operator()<dense_activation<activations::tanh>>(sparse_logits);
  f.template operator()<dense_activation<activations::exponential>>(mse);
  f.template operator()<dense_activation<activations::softmax>>(sparse_logits);
  f.template operator()<conv2d_case<strides<1>, padding::valid>>(mse);
  f.template operator()<conv2d_case<strides<1>, padding::same>>(sparse_logits);
  f.template operator()<conv2d_case<strides<2>, padding::valid>>(mse);
  f.template operator()<conv2d_case<strides<2>, padding::same>>(sparse_logits);
  f.template operator()<conv2d_case<strides<1, 2>, padding::same>>(mse);
  f.template operator()<pooling_case<MaxPooling2D<2>>>(mse);
  f.template operator()<pooling_case<MaxPooling2D<2, 2, padding::same>>>(sparse_logits);
  f.template operator()<pooling_case<MaxPooling2D<3, 3, strides<2>>>>(mse);
  f.template operator()<pooling_case<MaxPooling2D<3, 3, strides<1>, padding::same>>>(sparse_logits);
  f.template operator()<pooling_case<MaxPooling2D<2, 2, strides<1>>>>(mse);
  f.template operator()<pooling_case<MaxPooling2D<2>, activations::linear>>(sparse_logits);
  f.template operator()<pooling_case<MaxPooling2D<3, 3, strides<1>, padding::same>, activations::linear>>(mse);
  f.template operator()<batch_normalization_dense>(mse);
  f.template operator()<batch_normalization_conv>(sparse_logits);
  f.template operator()<dropout_case>(sparse_logits);
  f.template operator()<activation_layer<activations::gelu_approximate>>(mse);
  f.template operator()<activation_layer<activations::exponential>>(sparse_logits);
  f.template operator()<activation_layer<activations::softmax>>(mse);
  f.template operator()<regularized>(mse);
  f.template operator()<conv2d_case<strides<2>, padding::same, activations::linear>>(sparse_logits);
  f.template operator()<pooling_under_conv_case>(mse);
}

}  // namespace gradient_check
