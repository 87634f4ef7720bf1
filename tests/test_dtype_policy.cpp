// The runtime-string adapter: DTypePolicy names, errors, equality, repr, configs and visit.
// (keras-semantics.md sections 1 and 2)
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <mixprec/mixprec.hpp>

using namespace mixprec;

namespace {

std::string repr(const DTypePolicy& policy) {
  std::ostringstream out;
  out << policy;
  return out.str();
}

const std::string cannot_convert_tail =
    "' to a mixed precision DTypePolicy. Valid policies include 'mixed_float16', 'mixed_bfloat16', and the "
    "name of any float dtype such as 'float32'.";

}  // namespace

TEST_CASE("mixed_float16 and mixed_bfloat16") {
  const DTypePolicy f16("mixed_float16");
  CHECK(f16.name() == "mixed_float16");
  CHECK(f16.compute_dtype() == "float16");
  CHECK(f16.variable_dtype() == "float32");
  CHECK(f16.output_dtype() == "float16");
  CHECK(f16.should_cast_variables());
  CHECK_FALSE(f16.quantization_mode());
  CHECK(f16.class_name() == "DTypePolicy");
  const DTypePolicy bf16("mixed_bfloat16");
  CHECK(bf16.compute_dtype() == "bfloat16");
  CHECK(bf16.variable_dtype() == "float32");
}

TEST_CASE("every Keras dtype name is a policy with compute == variable") {
  for (std::string_view name : {"float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2", "int8",
                                "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
                                "complex64", "complex128"}) {
    CAPTURE(name);
    const DTypePolicy policy(name);
    CHECK(policy.name() == name);
    CHECK(policy.compute_dtype() == name);
    CHECK(policy.variable_dtype() == name);
    CHECK_FALSE(policy.should_cast_variables());
  }
}

TEST_CASE("rejected names carry Keras' message and name the bad value") {
  const std::string long_name(5000, 'x');
  // The message shows control characters and bytes that are not UTF-8 escaped.
  for (const auto& entry : std::vector<std::pair<std::string_view, std::string_view>>{
           {"", ""}, {"mixed_float15", "mixed_float15"}, {"@mixed_float16!", "@mixed_float16!"}, {"float", "float"},
           {"Float32", "Float32"}, {" float32", " float32"}, {"mixed_float16 ", "mixed_float16 "},
           {"float32\n", "float32\\x0a"}, {"float32\xff", "float32\\xff"}}) {
    const auto& name = std::get<0>(entry);  // not a binding: lambdas (doctest's INFO) capture it
    const auto& shown = std::get<1>(entry);
    CAPTURE(name);
    CHECK_THROWS_WITH_AS(DTypePolicy{name}, ("Cannot convert '" + std::string(shown) + cannot_convert_tail).c_str(),
                         std::invalid_argument);
  }
  // A very long name is rejected, and the message quotes it cut short.
  try {
    DTypePolicy{long_name};
    FAIL("accepted a 5000-character name");
  } catch (const std::invalid_argument& error) {
    const std::string message = error.what();
    CHECK(message.find("Cannot convert 'xxxx") == 0);
    CHECK(message.find("(5000 characters)") != std::string::npos);
    CHECK(message.size() < 600);
  }
}

TEST_CASE("names with no C++ meaning get a hint") {
  CHECK_THROWS_WITH_AS(DTypePolicy("string"), doctest::Contains("'string' is a Keras dtype, but it has no C++ compute type"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(DTypePolicy("_infer"), doctest::Contains("mixprec::policies::infer"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(DTypePolicy("infer_float32_vars"), doctest::Contains("use 'mixed_float16' or 'mixed_bfloat16'"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(DTypePolicy("float16_with_float32_vars"),
                       doctest::Contains("Cannot convert 'float16_with_float32_vars'"), std::invalid_argument);
}

TEST_CASE("jmp-style policy strings") {
  const DTypePolicy full("params=float32,compute=bfloat16,output=float32");
  CHECK(full.variable_dtype() == "float32");
  CHECK(full.compute_dtype() == "bfloat16");
  CHECK(full.output_dtype() == "float32");
  CHECK(full == DTypePolicy("p=f32,c=bf16,o=f32"));
  CHECK(full.name() == "params=float32,compute=bfloat16,output=float32");
  // Output defaults to compute, compute to params; the canonical name is Keras' where one exists.
  CHECK(DTypePolicy("p=f32,c=bf16").name() == "mixed_bfloat16");
  CHECK(DTypePolicy("p=f32,c=half") == DTypePolicy("mixed_float16"));
  CHECK(DTypePolicy("params=full").name() == "float32");
  CHECK(DTypePolicy("p=f64").name() == "float64");
  CHECK(DTypePolicy("c=f16, p=f32 ,o=f32").output_dtype() == "float32");
  CHECK(DTypePolicy("p=bf16,c=f32").name() == "params=bfloat16,compute=float32,output=float32");

  CHECK_THROWS_WITH_AS(DTypePolicy("p=f32,c=bf17"), doctest::Contains("Unknown dtype 'bf17' for 'c'"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(DTypePolicy("p=f32,x=f16"), doctest::Contains("Unknown key 'x'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(DTypePolicy("c=f16"), doctest::Contains("needs 'params'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(DTypePolicy("p=f32,p=f16"), doctest::Contains("given twice"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(DTypePolicy("p=f32,c"), doctest::Contains("key=dtype"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(DTypePolicy("p=f32,c=bf16,o=f16"), doctest::Contains("compute or the params dtype"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(DTypePolicy("p=int32,c=f32"), doctest::Contains("Cannot convert 'p=int32,c=f32'"),
                       std::invalid_argument);
}

TEST_CASE("repr") {
  CHECK(repr(DTypePolicy("mixed_float16")) == "<DTypePolicy \"mixed_float16\">");
  CHECK(repr(QuantizedDTypePolicy("int8", "float32")) == "<QuantizedDTypePolicy \"int8_from_float32\">");
  CHECK(repr(QuantizedFloat8DTypePolicy("float8", "mixed_bfloat16")) ==
        "<QuantizedFloat8DTypePolicy \"float8_from_mixed_bfloat16\">");
}

TEST_CASE("equality: same class and name; quantized also mode, source and amax history") {
  CHECK(DTypePolicy("float32") == DTypePolicy("float32"));
  CHECK(DTypePolicy("float32") != DTypePolicy("float64"));
  CHECK(DTypePolicy("mixed_float16") != DTypePolicy("float16"));
  CHECK(QuantizedDTypePolicy("int8", "float32") == QuantizedDTypePolicy("int8", "float32"));
  CHECK(QuantizedDTypePolicy("int8", "float32") != QuantizedDTypePolicy("int8", "bfloat16"));
  CHECK(QuantizedDTypePolicy("float8", "float32") != QuantizedDTypePolicy("int8", "float32"));
  // Same name, different class.
  CHECK(QuantizedDTypePolicy("float8", "float32") != QuantizedFloat8DTypePolicy("float8", "float32"));
  CHECK(QuantizedFloat8DTypePolicy("float8", "float32", 16) == QuantizedFloat8DTypePolicy("float8", "float32", 16));
  CHECK(QuantizedFloat8DTypePolicy("float8", "float32", 16) != QuantizedFloat8DTypePolicy("float8", "float32"));
  // A policy never equals a plain string: there is no such operator (checked at compile time).
  static_assert(!std::equality_comparable_with<DTypePolicy, std::string>);
  static_assert(!std::equality_comparable_with<DTypePolicy, const char*>);
  static_assert(!std::is_convertible_v<std::string_view, DTypePolicy>);
}

TEST_CASE("quantized policies") {
  const auto q = QuantizedDTypePolicy("int8", "mixed_bfloat16");
  CHECK(q.name() == "int8_from_mixed_bfloat16");
  CHECK(q.compute_dtype() == "bfloat16");
  CHECK(q.variable_dtype() == "float32");
  CHECK(*q.quantization_mode() == "int8");
  CHECK(*q.source_name() == "mixed_bfloat16");
  CHECK(q.class_name() == "QuantizedDTypePolicy");
  CHECK_FALSE(q.amax_history_length());

  const auto f8 = QuantizedFloat8DTypePolicy("float8", "mixed_float16");  // float8 over float16 is fine
  CHECK(f8.name() == "float8_from_mixed_float16");
  CHECK(*f8.amax_history_length() == 1024);
  CHECK(f8.class_name() == "QuantizedFloat8DTypePolicy");
  CHECK(*QuantizedFloat8DTypePolicy("float8", "float32", 7).amax_history_length() == 7);

  // The source is parsed first: a bad source gives Cannot convert, even with a bad mode.
  CHECK_THROWS_WITH_AS(QuantizedDTypePolicy("int4", "mixed_bfloat15"), doctest::Contains("Cannot convert 'mixed_bfloat15'"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(QuantizedDTypePolicy("int4", "float32"),
                       "Invalid quantization mode. Expected one of ('int8', 'float8'). Received: mode=int4",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(QuantizedDTypePolicy("int8", "mixed_float16"),
                       "Quantization mode='int8' doesn't work well with compute_dtype='float16'.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(QuantizedDTypePolicy("int8", "float16"), doctest::Contains("doesn't work well"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(QuantizedFloat8DTypePolicy("int8", "float32"), doctest::Contains("Expected one of ('float8',)"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(QuantizedFloat8DTypePolicy("float8", "float32", 0), doctest::Contains("amax_history_length"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(QuantizedDTypePolicy("int8", "int32"), doctest::Contains("floating source policy"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(QuantizedDTypePolicy("int8", ""), doctest::Contains("Cannot convert ''"), std::invalid_argument);
}

TEST_CASE("policies built without a name take the global policy's") {
  policy_scope scope("mixed_bfloat16");
  CHECK(DTypePolicy().name() == "mixed_bfloat16");
  CHECK(QuantizedDTypePolicy("int8").name() == "int8_from_mixed_bfloat16");
  CHECK(QuantizedFloat8DTypePolicy("float8").name() == "float8_from_mixed_bfloat16");
  set_dtype_policy("mixed_float16");
  CHECK_THROWS_WITH_AS(QuantizedDTypePolicy("int8"), doctest::Contains("doesn't work well"), std::invalid_argument);
}

TEST_CASE("get_config / from_config") {
  CHECK(DTypePolicy("mixed_float16").get_config() == nlohmann::json{{"name", "mixed_float16"}});
  CHECK(QuantizedDTypePolicy("int8", "float32").get_config() ==
        nlohmann::json{{"mode", "int8"}, {"source_name", "float32"}});
  CHECK(QuantizedFloat8DTypePolicy("float8", "bfloat16", 64).get_config() ==
        nlohmann::json{{"mode", "float8"}, {"source_name", "bfloat16"}, {"amax_history_length", 64}});

  for (const auto& policy : {DTypePolicy("float64"), DTypePolicy("p=f32,c=bf16,o=f32"),
                             QuantizedDTypePolicy("int8", "mixed_bfloat16"), QuantizedDTypePolicy("float8", "float32"),
                             QuantizedFloat8DTypePolicy("float8", "float16", 3)}) {
    CAPTURE(policy);
    const DTypePolicy loaded = DTypePolicy::from_config(policy.get_config());
    CHECK(loaded == policy);
    CHECK(loaded.class_name() == policy.class_name());
  }
  {
    policy_scope scope("bfloat16");
    CHECK(DTypePolicy::from_config({{"name", nullptr}}).name() == "bfloat16");
    CHECK(DTypePolicy::from_config({{"mode", "int8"}, {"source_name", nullptr}}).name() == "int8_from_bfloat16");
  }
  CHECK_THROWS_WITH_AS(DTypePolicy::from_config({{"name", 32}}), doctest::Contains("'name' must be a string"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(DTypePolicy::from_config({{"name", "float32"}, {"extra", 1}}),
                       doctest::Contains("unexpected key 'extra'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(DTypePolicy::from_config("float32"), doctest::Contains("a config is a JSON object"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(DTypePolicy::from_config({{"mode", "float8"}, {"source_name", "float32"},
                                                 {"amax_history_length", -3}}),
                       doctest::Contains("positive integer"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(DTypePolicy::from_config({{"name", "mixed_float15"}}), doctest::Contains("Cannot convert"),
                       std::invalid_argument);
}

TEST_CASE("visit gives the compile-time policy type") {
  const auto is = [](const DTypePolicy& policy, auto expected) {
    return policy.visit([](auto visited) { return std::is_same_v<decltype(visited), decltype(expected)>; });
  };
  CHECK(is(DTypePolicy("mixed_float16"), Policy<float16, float>{}));
  CHECK(is(DTypePolicy("mixed_bfloat16"), policies::mixed_bfloat16{}));
  CHECK(is(DTypePolicy("float64"), Policy<double>{}));
  CHECK(is(DTypePolicy("uint8"), Policy<std::uint8_t>{}));
  CHECK(is(DTypePolicy("complex64"), Policy<std::complex<float>>{}));
  CHECK(is(DTypePolicy("p=f32,c=bf16,o=f32"), Policy<bfloat16, float, float>{}));
  CHECK(is(QuantizedDTypePolicy("int8", "mixed_bfloat16"), QuantizedPolicy<quantization::int8, policies::mixed_bfloat16>{}));
  CHECK(is(QuantizedDTypePolicy("float8", "float32"), QuantizedPolicy<quantization::float8, policies::float32>{}));
  CHECK(is(QuantizedFloat8DTypePolicy("float8", "float32"),
           QuantizedFloat8Policy<policies::float32, dynamic_amax_history_length>{}));

  const auto length = QuantizedFloat8DTypePolicy("float8", "mixed_bfloat16", 12).visit([](auto visited) -> std::size_t {
    if constexpr (QuantizedFloat8DTypePolicyType<decltype(visited)>) return visited.amax_history_length;
    else return 0;
  });
  CHECK(length == 12);
}

TEST_CASE("every accepted policy visits the type with the same name and dtypes") {
  for (const auto& entry : detail::policy_table) {
    DTypePolicy policy;
    if (entry.cls == detail::policy_class::dtype_policy) policy = DTypePolicy(entry.name);
    else if (entry.cls == detail::policy_class::quantized) policy = QuantizedDTypePolicy(entry.mode, entry.source_name);
    else policy = QuantizedFloat8DTypePolicy(entry.mode, entry.source_name);
    CAPTURE(policy);
    CHECK(policy.name() == entry.name);
    const auto [name, compute, variable, output, mode] = policy.visit([](auto visited) {
      using P = decltype(visited);
      return std::tuple{P::name, dtype_name_v<typename P::compute_dtype>, dtype_name_v<typename P::variable_dtype>,
                        dtype_name_v<typename P::output_dtype>, P::quantization_mode};
    });
    CHECK(name == policy.name());
    CHECK(compute == policy.compute_dtype());
    CHECK(variable == policy.variable_dtype());
    CHECK(output == policy.output_dtype());
    CHECK(mode == policy.quantization_mode());
  }
  CHECK(detail::policy_table.size() == detail::visitable_policy_count);
}

TEST_CASE("a visitor that accepts only some policies") {
  const auto float_only = [](auto visited)
    requires FloatDTypePolicyType<decltype(visited)> && FloatingDType<typename decltype(visited)::compute_dtype>
  { return sizeof(typename decltype(visited)::compute_dtype); };
  CHECK(DTypePolicy("mixed_bfloat16").visit(float_only) == 2);
  CHECK(DTypePolicy("float64").visit(float_only) == 8);
  CHECK_THROWS_WITH_AS(DTypePolicy("int32").visit(float_only),
                       "DTypePolicy::visit: the visitor does not accept the policy 'int32'.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(QuantizedDTypePolicy("int8", "float32").visit(float_only),
                       doctest::Contains("'int8_from_float32'"), std::invalid_argument);
}

TEST_CASE("to_dtype_policy is the inverse of visit") {
  for (const auto& entry : detail::policy_table) {
    DTypePolicy policy;
    if (entry.cls == detail::policy_class::dtype_policy) policy = DTypePolicy(entry.name);
    else if (entry.cls == detail::policy_class::quantized) policy = QuantizedDTypePolicy(entry.mode, entry.source_name);
    else policy = QuantizedFloat8DTypePolicy(entry.mode, entry.source_name, 77);
    CAPTURE(policy);
    CHECK(policy.visit([](const auto& visited) { return to_dtype_policy(visited); }) == policy);
  }
  CHECK(to_dtype_policy(policies::mixed_bfloat16{}) == DTypePolicy("mixed_bfloat16"));
  CHECK(to_dtype_policy(QuantizedFloat8Policy<policies::float32, 16>{}) == QuantizedFloat8DTypePolicy("float8", "float32", 16));
}
