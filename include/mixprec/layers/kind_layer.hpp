// KindLayer<Derived, Kind, Policy, Autocast>: a compile-time layer built from a layer kind's
// description (layers/kind.hpp). Derived (Dense<64, ...>) says, in types, which options it takes,
// its output type for an input type, the types of its weights (weights_of) and the compile-time
// checks on its input (check_input<X>); everything else -- building the weights, the call, the
// training step's forward and backward passes, the Keras config -- comes from the kind, through
// the same layer_engine the runtime model uses.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/layers/detail/layer_engine.hpp>
#include <mixprec/layers/kind.hpp>
#include <mixprec/layers/layer.hpp>
#include <mixprec/layers/quantization.hpp>
#include <mixprec/layers/tensor.hpp>

namespace mixprec {

namespace detail {
/// The extents of X after the batch (all of them for an unbatched tensor).
template <class X>
std::vector<std::size_t> features_of() {
  const auto extents = X::shape_type::extents;
  return {extents.begin() + (X::batched ? 1 : 0), extents.end()};
}
}  // namespace detail

template <class Derived, class Kind, class PolicyOption, bool Autocast>
class KindLayer : public Layer<Derived, PolicyOption, Autocast> {
  using base = Layer<Derived, PolicyOption, Autocast>;

 public:
  using typename base::compute_dtype;
  using typename base::policy;
  using typename base::variable_dtype;
  using kind = Kind;
  using engine_type = detail::layer_engine<Kind, compute_dtype, variable_dtype>;
  using weight_ref = detail::weight_ref<variable_dtype>;

  const typename Kind::settings& settings() const { return engine_.settings(); }
  /// Keras' layer.trainable: false freezes every weight of the layer (and runs a
  /// BatchNormalization in inference mode).
  bool trainable() const { return engine_.trainable(); }
  void set_trainable(bool trainable) { engine_.set_trainable(trainable); }

  template <class X>
  void build(const X&) {
    Derived::template check_input<X>();
    build_for_features(detail::features_of<X>());
  }

 private:
  /// build's work past the input's type: compiled once per layer class, not once per input type.
  void build_for_features(const std::vector<std::size_t>& features) {
    std::vector<detail::weight_spec> specs;
    try {
      specs = engine_.build(features, this->name());
    } catch (const std::invalid_argument& error) {  // a size over the caps (core/limits.hpp)
      throw std::invalid_argument("layer '" + detail::quote_for_message(this->name()) + "' (" + std::string(Kind::keras_class) + "): " + error.what());
    }
    std::size_t i = 0;
    this->for_each_weight([&](auto& weight) {
      weight = detail::make_variable<std::remove_cvref_t<decltype(weight)>>(this->name(), specs.at(i++));
    });
    if (i != specs.size()) throw std::logic_error(std::string(Kind::keras_class) + ": the layer lists another number of weights than its kind.");
  }

 public:
  /// Which quantized form the layer runs (none, or the mode of its policy or of quantize()).
  quantization_mode quantization() const { return engine_.quantization(); }
  /// The layer's policy as a runtime DTypePolicy; "int8_from_<policy>" once quantize("int8") ran.
  DTypePolicy dtype_policy() const {
    if (QuantizedDTypePolicyType<policy> || quantization() == quantization_mode::none) return base::dtype_policy();
    return detail::quantized_policy(quantization(), policy::name);
  }

  /// The mode quantize(mode) would quantize in; throws as it would, changing nothing.
  quantization_mode checked_quantization(std::string_view mode) const
    requires requires { Kind::quantizable_modes; }
  {
    const quantization_mode m = detail::checked_quantize(
        {this->name(), this->built(), quantization(), dtype_policy().name(), dtype_name_v<compute_dtype>}, mode);
    engine_.quantized_specs(m);
    return m;
  }
  /// Keras' layer.quantize(mode) on a built layer of a kind with a quantized form: its float
  /// weights become the quantized ones and it runs the quantized arithmetic from then on. Every
  /// check (layers/quantization.hpp) runs before anything changes.
  void quantize(std::string_view mode)
    requires requires { Kind::quantizable_modes; }
  {
    const quantization_mode m = checked_quantization(mode);
    std::vector<std::span<const variable_dtype>> float_weights;
    this->for_each_weight([&](const auto& weight) {
      if constexpr (std::is_same_v<typename std::remove_cvref_t<decltype(weight)>::true_dtype, variable_dtype>)
        float_weights.push_back(weight.value().values());
    });
    auto quantized = engine_.quantized_weights(m, float_weights);  // (specs, values); no binding: lambdas use it
    // Strong guarantee: the mode is adopted (the weights the layer walks are then the quantized
    // ones) and every new variable made, which allocates and may throw, undoing the mode if it
    // does; only then are the variables moved in, which cannot throw.
    auto previous = engine_.adopt_quantization(m);
    std::vector<std::function<void()>> move_in;
    try {
      std::size_t i = 0;
      this->for_each_weight([&](auto& weight) {
        using W = std::remove_cvref_t<decltype(weight)>;
        static_assert(std::is_nothrow_move_assignable_v<W>);
        auto made = std::make_shared<W>(detail::make_variable<W>(quantized.first[i], std::move(quantized.second[i])));
        move_in.emplace_back([&weight, made] { weight = std::move(*made); });
        ++i;
      });
    } catch (...) {
      engine_.undo_quantization(std::move(previous));
      throw;
    }
    for (const auto& assign : move_in) assign();
    derived().release_float_weights();
  }

  /// The call (kinds that write a new output).
  template <class X>
    requires(!requires { Kind::in_place; })
  auto call(const call_context<policy>& context, const X& x) {
    check_dtype<X>();
    engine_.check_batch(batch_of(x));
    typename D<X>::template output_t<X> y(x.batch(), uninitialized);
    run<X>(context.training(), batch_of(x), x.values(), y.values());
    return y;
  }
  /// The call of element-wise kinds (Activation, Dropout, Flatten): x taken by value and worked
  /// on in place, so an rvalue input costs no copy.
  template <class X>
    requires requires { Kind::in_place; }
  auto call(const call_context<policy>& context, X x) {
    check_dtype<X>();
    const std::size_t batch = batch_of(x);
    typename D<X>::template output_t<X> y(std::move(x).release_values());
    run<X>(context.training(), batch, std::as_const(y).values(), y.values());
    return y;
  }

  /// The layer's own Keras config entries (its settings).
  nlohmann::ordered_json keras_config() const {
    nlohmann::ordered_json config = nlohmann::ordered_json::object();
    Kind::write_config(settings(), config);
    return config;
  }
  static constexpr std::string_view keras_class = Kind::keras_class;

  // What a training step drives (models/): the engine, the weights as the kind reads them, and
  // the step's end.
  engine_type& engine() { return engine_; }
  const engine_type& engine() const { return engine_; }
  std::vector<weight_ref> weight_refs() const {
    std::vector<weight_ref> refs;
    this->for_each_weight([&](const auto& weight) { refs.push_back(detail::reference<variable_dtype>(weight)); });
    return refs;
  }
  /// f(variable, index) for every weight.
  template <class F>
  void for_each_indexed_weight(F&& f) {
    std::size_t i = 0;
    this->for_each_weight([&](auto& weight) { f(weight, i++); });
  }
  /// The (gradient, variable) pairs of the trained weights, after backward.
  void collect_gradients(std::vector<gradient_and_variable>& pairs) {
    detail::collect_gradients(engine_, [&](auto f) { for_each_indexed_weight(f); }, pairs);
  }
  /// Ends a training step that succeeded (layer_engine.hpp).
  void finish_step() {
    detail::finish_step(engine_, [&](auto f) { for_each_indexed_weight(f); });
  }
  /// Assigns the new values a forward pass gave non-trainable weights.
  void apply_updates(const std::vector<detail::weight_update<variable_dtype>>& updates) {
    for (const auto& update : updates)
      for_each_indexed_weight([&](auto& weight, std::size_t i) {
        if constexpr (std::is_same_v<typename std::remove_cvref_t<decltype(weight)>::true_dtype, variable_dtype>)
          if (i == update.weight) weight.assign_values(std::span<const variable_dtype>(update.value));
      });
  }

 protected:
  explicit KindLayer(std::string name, typename Kind::settings settings, bool trainable = true)
      : base(std::move(name)), engine_(with_policy_quantization(std::move(settings))) {
    engine_.set_trainable(trainable);
    if constexpr (quantization_mode_of_v<policy> != quantization_mode::none) engine_.use_quantized_arithmetic();
  }

 private:
  /// Derived, named through X so that it is looked up when the call is instantiated (Derived is
  /// incomplete while this base is).
  template <class X>
  using D = std::conditional_t<sizeof(X) != 0, Derived, void>;

  Derived& derived() { return static_cast<Derived&>(*this); }
  const Derived& derived() const { return static_cast<const Derived&>(*this); }

  static_assert(kind_quantizes<Kind>(quantization_mode_of_v<policy>),
                "This layer kind has no quantized form: give a quantized policy (QuantizedPolicy<...>) only to Dense "
                "layers, and a float policy (policies::mixed_bfloat16, ...) to the others.");
  static_assert(quantization_mode_of_v<policy> == quantization_mode::none ||
                    quantizable_pair<compute_dtype, variable_dtype>(quantization_mode_of_v<policy>),
                "A quantized policy's source must be float16, bfloat16, float32, float64, mixed_float16 or "
                "mixed_bfloat16 (as in Keras), and int8 does not compute in float16.");
  static typename Kind::settings with_policy_quantization(typename Kind::settings settings) {
    if constexpr (requires { settings.quantization; }) {
      settings.quantization = quantization_mode_of_v<policy>;
      settings.amax_history_length = amax_history_length_of(policy{});
    }
    return settings;
  }

  template <class X>
  static void check_dtype() {
    static_assert(std::is_same_v<typename X::dtype, compute_dtype>,
                  "A layer with no_autocast received inputs in another dtype than its compute dtype: convert them "
                  "first (tensor_cast<compute_dtype>(x)).");
  }
  template <class X>
  static std::size_t batch_of(const X& x) {
    return X::batched ? x.batch() : 1;
  }
  template <class X>
  void run(bool training, std::size_t batch, std::span<const compute_dtype> x, std::span<compute_dtype> y) {
    static const std::vector<std::size_t> features = detail::features_of<X>();
    const std::vector<weight_ref> refs = weight_refs();
    std::vector<detail::weight_update<variable_dtype>> updates;
    engine_.call({batch, features}, x, refs, y, training, updates);
    apply_updates(updates);
  }

  engine_type engine_;
};

}  // namespace mixprec
