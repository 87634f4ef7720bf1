// policy_tour: what a policy string means, at run time and at compile time.
//
//   policy_tour                          # a built-in tour
//   policy_tour mixed_bfloat16 "p=f32,c=bf16,o=f32" int8_from_float32
//
// For each string: the policy's name, dtypes and Keras config, and the compile-time type that
// DTypePolicy::visit hands to code written against Policy<...>. A bad string prints Keras'
// message and makes the exit status non-zero.
#include <array>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include <mixprec/mixprec.hpp>

namespace {

/// The C++ spelling of each registry dtype, for printing types.
std::string cpp_dtype(std::string_view keras_name) {
  constexpr std::array<std::pair<std::string_view, std::string_view>, 5> spelled{
      {{"float32", "float"}, {"float64", "double"}, {"bool", "bool"},
       {"complex64", "std::complex<float>"}, {"complex128", "std::complex<double>"}}};
  for (const auto& [keras, cpp] : spelled)
    if (keras == keras_name) return std::string(cpp);
  if (keras_name.find("int") != std::string_view::npos) return "std::" + std::string(keras_name) + "_t";
  return std::string(keras_name);
}

template <class P>
std::string policy_type_name(const P& policy) {
  using namespace mixprec;
  if constexpr (QuantizedDTypePolicyType<P>) {
    const std::string source = policy_type_name(typename P::source_policy{});
    if constexpr (QuantizedFloat8DTypePolicyType<P>)
      return "QuantizedFloat8Policy<" + source + "> with amax_history_length " +
             std::to_string(policy.amax_history_length);
    else
      return "QuantizedPolicy<quantization::" + std::string(*P::quantization_mode) + ", " + source + ">";
  } else {
    std::string name = "Policy<" + cpp_dtype(dtype_name_v<typename P::compute_dtype>);
    constexpr bool output_differs = !std::is_same_v<typename P::output_dtype, typename P::compute_dtype>;
    if (P::should_cast_variables || output_differs) name += ", " + cpp_dtype(dtype_name_v<typename P::variable_dtype>);
    if (output_differs) name += ", " + cpp_dtype(dtype_name_v<typename P::output_dtype>);
    return name + ">";
  }
}

void describe(const mixprec::DTypePolicy& policy) {
  std::cout << policy << '\n'
            << "  compute dtype:   " << policy.compute_dtype() << '\n'
            << "  variable dtype:  " << policy.variable_dtype() << '\n'
            << "  output dtype:    " << policy.output_dtype() << '\n'
            << "  casts variables: " << (policy.should_cast_variables() ? "yes" : "no") << '\n';
  if (auto mode = policy.quantization_mode()) std::cout << "  quantization:    " << *mode << '\n';
  std::cout << "  get_config():    " << policy.get_config().dump() << '\n'
            << "  serialized:      " << mixprec::dtype_policies::serialize(policy).dump() << '\n'
            << "  visits:          mixprec::" << policy.visit([](const auto& p) { return policy_type_name(p); })
            << "\n\n";
}

void global_policy_example() {
  // Seed 001: keras.config.set_dtype_policy("mixed_float16"); Dense(10).dtype_policy; ...
  std::cout << "The global policy (seed 001):\n";
  mixprec::set_dtype_policy("mixed_float16");
  const mixprec::DTypePolicy layer1;  // a layer without its own dtype takes the global policy
  std::cout << "  set_dtype_policy(\"mixed_float16\"); layer1 policy: " << layer1 << '\n';
  const mixprec::DTypePolicy layer2("float32");
  std::cout << "  layer2 with dtype=\"float32\":                  " << layer2 << '\n';
  mixprec::set_dtype_policy("float32");
  std::cout << "  set back:                                     " << mixprec::dtype_policy() << "\n\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> names(argv + 1, argv + argc);
  const bool tour = names.empty();
  if (tour)
    names = {"mixed_float16", "mixed_bfloat16", "float64", "p=f32,c=bf16,o=f32",
             "int8_from_mixed_bfloat16", "float8_from_float32", "mixed_float15"};

  int failures = 0;
  for (const auto& name : names) {
    try {
      describe(mixprec::dtype_policies::get(name));
    } catch (const std::invalid_argument& error) {
      std::cout << '"' << name << "\" is rejected:\n  " << error.what() << "\n\n";
      ++failures;
    }
  }
  if (tour) {
    global_policy_example();
    std::cout << "(the tour's last name is rejected on purpose; bad names make the exit status non-zero "
                 "when you pass them yourself)\n";
    return 0;
  }
  return failures == 0 ? 0 : 1;
}
