// Which compiled layer a runtime layer config becomes: the declaration, and where a layer sits
// (for error messages). The definition instantiates every layer for every float policy, which
// is most of the runtime model's compile time: header-only mode compiles it in each translation
// unit that builds a RuntimeModel; single-TU mode (MIXPREC_SEPARATE_KERNELS) compiles it once,
// in cmake/mixprec_runtime_layers.cpp, next to the kernels.
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include <mixprec/models/runtime_layers.hpp>
#include <mixprec/runtime/detail/message_text.hpp>
#include <mixprec/runtime/dtype_policy.hpp>

namespace mixprec::detail {

/// Where a layer sits, for error messages.
struct layer_site {
  std::size_t position;
  std::string name;
  std::string class_name;
  /// How messages name the layer: layer 2 ('dense_1', Dense), its text escaped.
  std::string owner() const {
    return "layer " + std::to_string(position) + " ('" + quote_for_message(name) + "', " + quote_for_message(class_name) + ")";
  }
  std::invalid_argument error(const std::string& what) const { return std::invalid_argument(owner() + ": " + what); }
};

/// The compiled layer for a config's class and settings, in the given policy; a bad setting or
/// an unsupported policy is a std::invalid_argument that names the layer.
///
/// A template only so that its instantiation, every layer kind for every policy, happens where a
/// model is built: header-only mode compiles it in the translation units that construct a
/// RuntimeModel (RuntimeModel's constructors are templates for the same reason), and single-TU
/// mode instantiates it once, explicitly, in make_runtime_layer.hpp.
template <class Deferred = void>
std::unique_ptr<RuntimeLayer> make_runtime_layer(const nlohmann::json& config, const DTypePolicy& policy,
                                                 const layer_site& site);

}  // namespace mixprec::detail

#ifndef MIXPREC_SEPARATE_KERNELS
#include <mixprec/models/detail/make_runtime_layer.hpp>
#endif
