// The layer base (CRTP) and the call context.
//
// A layer's policy is a type: compute_dtype, variable_dtype, dtype (the variable dtype, as in
// Keras) and dtype_policy() (the same policy as a runtime DTypePolicy). Calling a layer casts
// every floating tensor argument, nested ones included, to the compute dtype (autocast.hpp) and
// hands the layer's call a call_context through which its weights read in the compute dtype:
//
//   template <class Policy>
//   struct Scale : Layer<Scale<Policy>, Policy> {
//     Variable... factor = this->template add_weight<4>("factor", initializers::ones{});
//     template <class X>
//     auto call(const call_context<Policy>& ctx, const X& x) { return x * ctx.read(factor)...; }
//   };
//
// Outside call there is no context, so a weight can only be read in its true dtype (value()):
// Keras' "inside call / outside call" rule, enforced by the types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <mixprec/core/cast.hpp>
#include <mixprec/core/infer_policy.hpp>
#include <mixprec/core/policy.hpp>
#include <mixprec/core/quantized_policy.hpp>
#include <mixprec/layers/autocast.hpp>
#include <mixprec/layers/initializers.hpp>
#include <mixprec/layers/options.hpp>
#include <mixprec/layers/regularizers.hpp>
#include <mixprec/layers/tensor.hpp>
#include <mixprec/layers/variable.hpp>
#include <mixprec/runtime/dtype_policy.hpp>

namespace mixprec {

template <class Derived, class PolicyOption, bool Autocast>
class Layer;

/// A policy option with model_policy resolved (standalone layers: float32).
template <class PolicyOption>
using standalone_policy_t =
    std::conditional_t<std::is_same_v<PolicyOption, model_policy>, model_policy::resolved, PolicyOption>;

/// What a layer's call receives besides its inputs. Only Layer::operator() creates one.
template <class Policy>
class call_context {
 public:
  using policy = Policy;
  using compute_dtype = typename Policy::compute_dtype;

  /// A weight as the call sees it: in the compute dtype (or its own dtype for a weight added
  /// with no_autocast). A reference when it is stored in that dtype; else a tensor rounded from
  /// its value on each read, as Keras' AutoCastVariable does: keep the tensor (`const auto& w =
  /// ctx.read(kernel);`), not a span of a temporary.
  template <class V, class C, std::size_t... E>
  decltype(auto) read(const AutoCastVariable<V, C, E...>& weight) const {
    return weight.compute_value();
  }

  /// Training mode (Dropout drops, BatchNormalization uses batch statistics).
  bool training() const { return training_; }

  /// A tensor shaped like `like`, filled with `value`, in the compute dtype.
  template <TensorType X>
  rebind_tensor_t<X, compute_dtype> constant_like(const X& like, double value) const {
    std::vector<compute_dtype> values(like.size(), cast<compute_dtype>(value));
    return rebind_tensor_t<X, compute_dtype>(std::move(values));
  }
  /// Normal(mean, stddev) draws shaped like `like`, in the compute dtype (seed 000's
  /// tf.random.normal(shape=inputs.shape, dtype=inputs.dtype)).
  template <TensorType X>
  rebind_tensor_t<X, compute_dtype> random_normal_like(const X& like, double mean = 0.0, double stddev = 1.0,
                                                       std::uint64_t seed = 0) const {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(mean, stddev);
    std::vector<compute_dtype> values(like.size());
    for (auto& v : values) v = cast<compute_dtype>(normal(rng));
    return rebind_tensor_t<X, compute_dtype>(std::move(values));
  }

 private:
  template <class, class, bool>
  friend class Layer;
  explicit call_context(bool training) : training_(training) {}
  bool training_;
};

template <class Derived, class PolicyOption, bool Autocast = true>
class Layer {
 public:
  using policy = standalone_policy_t<PolicyOption>;
  static_assert(DTypePolicyType<policy> || std::is_same_v<policy, InferPolicy>,
                "A layer's policy must be a dtype policy type such as policies::mixed_bfloat16.");
  static_assert(!std::is_same_v<policy, InferPolicy>,
                "The infer policy is a model policy (Sequential<policies::infer, ...>), resolved from each layer's "
                "input dtype; give a layer a concrete policy such as policies::float32.");

 private:
  // After either report above, float32's dtypes stand in, so that no other error follows.
  using dtypes_of = std::conditional_t<DTypePolicyType<policy>, policy, policies::float32>;

 public:
  using compute_dtype = typename dtypes_of::compute_dtype;
  using variable_dtype = typename dtypes_of::variable_dtype;
  /// Keras: a layer's dtype is its variable dtype.
  using dtype = variable_dtype;
  static constexpr bool autocast = Autocast;
  /// False when the layer takes its model's policy.
  static constexpr bool has_own_policy = !std::is_same_v<PolicyOption, model_policy>;

  /// The layer's policy as a runtime DTypePolicy: <DTypePolicy "mixed_float16"> (a layer that
  /// quantize() changed says "int8_from_..."; to_dtype_policy<L::policy>() is the type's own).
  DTypePolicy dtype_policy() const { return to_dtype_policy(policy{}); }

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  /// Inference: casts the inputs (unless the layer opts out), builds on first use, calls.
  /// An rvalue input that needs no cast reaches call as an rvalue, so a layer that takes its
  /// input by value (Flatten, Activation, Dropout) reuses the buffer: Sequential hands each
  /// layer's output on this way.
  template <class... Inputs>
  decltype(auto) operator()(Inputs&&... inputs) {
    return invoke(false, std::forward<Inputs>(inputs)...);
  }
  /// The same in training mode.
  template <class... Inputs>
  decltype(auto) training_call(Inputs&&... inputs) {
    return invoke(true, std::forward<Inputs>(inputs)...);
  }

  /// Calls f(weight) for each weight, in order. A layer lists its weights in weights_of(self)
  /// (a std::tie of them), or, when which weights it has changes at run time (an int8 Dense),
  /// calls f on each in for_each_weight_of(self, f).
  template <class F>
  void for_each_weight(F&& f) {
    for_each_weight_in(derived(), f);
  }
  template <class F>
  void for_each_weight(F&& f) const {
    for_each_weight_in(derived(), f);
  }
  /// Sum of the weights' regularization losses, each computed in its variable dtype.
  double regularization_loss() const {
    double total = 0.0;
    for_each_weight([&](const auto& weight) { total += static_cast<double>(weight.regularization_loss()); });
    return total;
  }
  /// Layers without weights.
  template <class Self>
  static std::tuple<> weights_of(Self&) {
    return {};
  }

 protected:
  Layer() = default;
  explicit Layer(std::string name) : name_(std::move(name)) {}

  template <std::size_t... E>
  using weight_t = AutoCastVariable<variable_dtype, compute_dtype, E...>;
  template <std::size_t... E>
  using plain_weight_t = Variable<variable_dtype, E...>;

  /// A weight in the variable dtype, read in the compute dtype inside call. For a tensor type
  /// whose first extent is `dynamic` (a weight sized by the input), pass the weight's shape as
  /// Keras reports it (a Conv2D kernel: {kh, kw, in, filters}, stored as (kh * kw * in) x filters).
  /// Options: not_trainable; no_autocast (Keras' experimental_autocast=False: the weight reads
  /// in the variable dtype inside call too); a regularizer (regularizers::l2{0.01}, ...).
  template <std::size_t... E, class Initializer = initializers::glorot_uniform, class... Options>
  auto add_weight(std::string weight_name, std::vector<std::size_t> shape, Initializer initializer = {},
                  Options... options) {
    static_assert(Tensor<variable_dtype, E...>::batched,
                  "add_weight(name, shape, ...) is for tensor types with a dynamic first extent.");
    return make_weight<E...>(std::move(weight_name), std::move(shape), initializer, options...);
  }
  template <std::size_t... E, class Initializer = initializers::glorot_uniform, class... Options>
    requires(!Tensor<float, E...>::batched)
  auto add_weight(std::string weight_name, Initializer initializer = {}, Options... options) {
    return make_weight<E...>(std::move(weight_name), std::vector<std::size_t>{E...}, initializer, options...);
  }

 private:
  Derived& derived() { return static_cast<Derived&>(*this); }
  const Derived& derived() const { return static_cast<const Derived&>(*this); }

  template <class Self, class F>
  static void for_each_weight_in(Self& self, F& f) {
    if constexpr (requires { Derived::for_each_weight_of(self, f); })
      Derived::for_each_weight_of(self, f);
    else
      std::apply([&](auto&... weights) { (f(weights), ...); }, Derived::weights_of(self));
  }

  template <class... Inputs>
  decltype(auto) invoke(bool training, Inputs&&... inputs) {
    const call_context<policy> context(training);
    return call_built(context, cast_argument<Inputs>(inputs)...);
  }
  /// The argument as call receives it: converted (a new value), or the caller's own, forwarded.
  template <class Input>
  decltype(auto) cast_argument(std::remove_reference_t<Input>& input) {
    if constexpr (Autocast && needs_autocast_v<compute_dtype, Input>) return autocast_to<compute_dtype>(input);
    else return std::forward<Input>(input);
  }
  template <class... Inputs>
  decltype(auto) call_built(const call_context<policy>& context, Inputs&&... inputs) {
    // Keras builds a layer from its first input; a layer may also take all of them.
    if constexpr (requires { derived().build(inputs...); }) {
      if (!built_) derived().build(inputs...);
    } else if constexpr (sizeof...(Inputs) > 1 && requires { derived().build(first_of(inputs...)); }) {
      if (!built_) derived().build(first_of(inputs...));
    }
    built_ = true;
    return derived().call(context, std::forward<Inputs>(inputs)...);
  }

  template <class First, class... Rest>
  static const First& first_of(const First& first, const Rest&...) {
    return first;
  }

  template <std::size_t... E, class Initializer, class... Options>
  auto make_weight(std::string weight_name, std::vector<std::size_t> shape, const Initializer& initializer,
                   Options... options) const {
    constexpr bool read_in_compute_dtype = !has_flag_v<no_autocast, Options...>;
    static_assert(((std::is_same_v<Options, no_autocast> || std::is_same_v<Options, not_trainable> ||
                    RegularizerType<Options>) &&
                   ...),
                  "add_weight options are no_autocast, not_trainable and a regularizer (regularizers::l1, l2, l1_l2).");
    auto values = detail::initial_values<variable_dtype>(initializer, shape, name_ + "/" + weight_name);
    using weight = AutoCastVariable<variable_dtype, std::conditional_t<read_in_compute_dtype, compute_dtype, variable_dtype>, E...>;
    weight result(std::move(weight_name), typename weight::value_type(std::move(values)), std::move(shape),
                  !has_flag_v<not_trainable, Options...>);
    (
        [&](const auto& option) {
          if constexpr (RegularizerType<std::remove_cvref_t<decltype(option)>>) result.set_regularizer(option);
        }(options),
        ...);
    return result;
  }

  std::string name_;
  bool built_ = false;

 public:
  /// Whether build() has run (on the first call).
  bool built() const { return built_; }
  /// Builds the weights for inputs of type X without calling (Sequential does this up front,
  /// since it knows every layer's input type).
  template <class X>
  void build_for() {
    if constexpr (requires { derived().build(std::declval<const X&>()); }) {
      if (!built_) derived().build(X{});
    }
    built_ = true;
  }
};

}  // namespace mixprec
