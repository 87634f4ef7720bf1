// The definition of detail::make_runtime_layer: the table of layer kinds, keyed by Keras class
// name. A config is read by its kind (every key it does not know is an error), then the kind is
// instantiated once for the layer's policy (runtime_layer_factory.hpp says where this is compiled).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include <mixprec/core/policy.hpp>
#include <mixprec/layers/kinds/activation.hpp>
#include <mixprec/layers/kinds/batch_normalization.hpp>
#include <mixprec/layers/kinds/conv2d.hpp>
#include <mixprec/layers/kinds/dense.hpp>
#include <mixprec/layers/kinds/dropout.hpp>
#include <mixprec/layers/kinds/flatten.hpp>
#include <mixprec/layers/kinds/max_pooling2d.hpp>
#include <mixprec/layers/quantization.hpp>
#include <mixprec/models/detail/runtime_layer_factory.hpp>
#include <mixprec/models/runtime_layers.hpp>
#include <mixprec/runtime/detail/config_reader.hpp>
#include <mixprec/runtime/dtype_policy.hpp>

namespace mixprec::detail {

/// Every layer kind a runtime model can hold.
using layer_kind_table = std::tuple<layer_kinds::dense, layer_kinds::conv2d, layer_kinds::max_pooling2d,
                                    layer_kinds::batch_normalization, layer_kinds::dropout, layer_kinds::activation,
                                    layer_kinds::softmax, layer_kinds::flatten>;

/// A compute dtype / variable dtype pair layers can run.
template <class P>
concept runtime_layer_policy = FloatDTypePolicyType<P> && ComputeDType<typename P::compute_dtype> &&
                               ComputeDType<typename P::variable_dtype>;

/// A quantized policy over such a pair.
template <class P>
concept runtime_quantized_policy = QuantizedDTypePolicyType<P> && runtime_layer_policy<typename P::source_policy>;

/// The factory's errors, compiled once rather than for every (kind, policy) pair it visits.
[[noreturn]] inline void throw_unquantizable(const layer_site& site, std::string_view policy, quantization_mode mode,
                                            std::string_view keras_class) {
  throw site.error("the dtype policy '" + std::string(policy) + "' is quantized (" +
                   std::string(quantization_mode_name(mode)) + "), which " + std::string(keras_class) +
                   " layers do not support; give it a float policy (int8 is supported by Dense).");
}
[[noreturn]] inline void throw_unsupported_policy(const layer_site& site, std::string_view policy) {
  throw site.error("the dtype policy '" + std::string(policy) +
                   "' is not supported: layers compute in float16, bfloat16, float32 or float64.");
}

template <class Kind>
std::unique_ptr<RuntimeLayer> make_layer_of_kind(const nlohmann::json& config, const DTypePolicy& policy,
                                                 const layer_site& site) {
  config_reader read(config, site.owner());
  for (const char* model_key : {"name", "dtype", "batch_input_shape", "batch_shape"}) read.skip(model_key);
  const bool trainable = read.boolean("trainable", true);
  typename Kind::settings settings = Kind::read_config(read);
  read.finish();
  return policy.visit([&]<class P>(const P&) -> std::unique_ptr<RuntimeLayer> {
    constexpr quantization_mode mode = quantization_mode_of_v<P>;
    if constexpr (mode != quantization_mode::none && !kind_quantizes<Kind>(mode)) {
      throw_unquantizable(site, P::name, mode, Kind::keras_class);
    } else if constexpr (runtime_layer_policy<P> || runtime_quantized_policy<P>) {
      // Tested on Kind first: clang checks a branch that depends on P alone against every kind's
      // settings, and only the kinds with a quantized form have these members.
      if constexpr (requires { Kind::quantizable_modes; }) {
        if constexpr (mode != quantization_mode::none) {
          settings.quantization = mode;
          settings.amax_history_length = policy.amax_history_length().value_or(default_amax_history_length);
        }
      }
      // A kind without weights never touches the variable dtype: one layer per compute dtype
      // serves every variable dtype (its policy, kept by the layer, still names both).
      using C = typename P::compute_dtype;
      using V = std::conditional_t<kind_has_weights<Kind>, typename P::variable_dtype, C>;
      return std::make_unique<runtime_layer_of<Kind, C, V>>(site.name, policy, std::move(settings), trainable);
    } else {
      throw_unsupported_policy(site, P::name);
    }
  });
}

template <class Deferred>
std::unique_ptr<RuntimeLayer> make_runtime_layer(const nlohmann::json& config, const DTypePolicy& policy,
                                                 const layer_site& site) {
  std::unique_ptr<RuntimeLayer> layer;
  std::string known;
  std::apply(
      [&]<class... Kinds>(Kinds...) {
        ((layer || site.class_name != Kinds::keras_class ? void() : void(layer = make_layer_of_kind<Kinds>(config, policy, site))), ...);
        ((known += (known.empty() ? "" : ", ") + std::string(Kinds::keras_class)), ...);
      },
      layer_kind_table{});
  if (!layer) throw site.error("unknown layer class. Known: " + known + " (and InputLayer first).");
  return layer;
}

#ifdef MIXPREC_SEPARATE_KERNELS
template std::unique_ptr<RuntimeLayer> make_runtime_layer<>(const nlohmann::json&, const DTypePolicy&, const layer_site&);
#endif

}  // namespace mixprec::detail
