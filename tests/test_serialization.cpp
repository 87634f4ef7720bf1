// dtype_policies::get / serialize / deserialize (keras-semantics.md section 3).
#include <doctest/doctest.h>

#include <mixprec/mixprec.hpp>

using namespace mixprec;
using nlohmann::json;

TEST_CASE("serialize gives Keras 3's dict") {
  CHECK(dtype_policies::serialize(DTypePolicy("mixed_float16")) ==
        json{{"module", "keras"}, {"class_name", "DTypePolicy"}, {"config", {{"name", "mixed_float16"}}},
             {"registered_name", nullptr}});
  CHECK(dtype_policies::serialize(QuantizedDTypePolicy("int8", "float32")) ==
        json{{"module", "keras.dtype_policies"}, {"class_name", "QuantizedDTypePolicy"},
             {"config", {{"mode", "int8"}, {"source_name", "float32"}}}, {"registered_name", nullptr}});
  CHECK(dtype_policies::serialize(QuantizedFloat8DTypePolicy("float8", "mixed_bfloat16", 32))["config"] ==
        json{{"mode", "float8"}, {"source_name", "mixed_bfloat16"}, {"amax_history_length", 32}});
}

TEST_CASE("deserialize(serialize(p)) == p for every class") {
  for (const auto& policy : {DTypePolicy("bfloat16"), DTypePolicy("mixed_bfloat16"), DTypePolicy("int64"),
                             DTypePolicy("p=f16,c=f32,o=f16"), QuantizedDTypePolicy("int8", "bfloat16"),
                             QuantizedDTypePolicy("float8", "mixed_float16"),
                             QuantizedFloat8DTypePolicy("float8", "float64", 5)}) {
    CAPTURE(policy);
    CHECK(dtype_policies::deserialize(dtype_policies::serialize(policy)) == policy);
    CHECK(dtype_policies::get(dtype_policies::serialize(policy)) == policy);
    CHECK(dtype_policies::get(json::parse(dtype_policies::serialize(policy).dump())) == policy);
  }
}

TEST_CASE("tf.keras 2.x forms load") {
  CHECK(dtype_policies::deserialize(json("mixed_float16")) == DTypePolicy("mixed_float16"));
  CHECK(dtype_policies::deserialize(json{{"class_name", "Policy"}, {"config", {{"name", "mixed_bfloat16"}}}}) ==
        DTypePolicy("mixed_bfloat16"));
  CHECK(dtype_policies::deserialize(json::parse(R"({"module": "keras.mixed_precision", "class_name": "Policy",
                                                   "config": {"name": "float64"}})")) == DTypePolicy("float64"));
  // The experimental policy (seed 002) loads as a plain policy; its loss scale is dropped.
  const json experimental = json::parse(R"({"class_name": "PolicyV1", "config": {"name": "mixed_float16",
      "loss_scale": {"class_name": "DynamicLossScale", "config": {"initial_loss_scale": 32768.0,
                     "increment_period": 2000, "multiplier": 2.0}}}})");
  const DTypePolicy loaded = dtype_policies::deserialize(experimental);
  CHECK(loaded == DTypePolicy("mixed_float16"));
  CHECK(loaded.class_name() == "DTypePolicy");
  CHECK(dtype_policies::deserialize(json{{"class_name", "PolicyV1"}, {"config", {{"name", "float32"}, {"loss_scale", nullptr}}}}) ==
        DTypePolicy("float32"));
  CHECK(dtype_policies::deserialize(json{{"class_name", "FloatDTypePolicy"}, {"config", {{"name", "float16"}}}}) ==
        DTypePolicy("float16"));
}

TEST_CASE("bad serialized policies are clear errors") {
  CHECK_THROWS_WITH_AS(dtype_policies::deserialize(json{{"class_name", "Nope"}, {"config", json::object()}}),
                       doctest::Contains("Unknown dtype policy class_name 'Nope'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(dtype_policies::deserialize(json{{"config", {{"name", "float32"}}}}),
                       doctest::Contains("'class_name'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(dtype_policies::deserialize(json{{"class_name", "DTypePolicy"}}),
                       doctest::Contains("'config' must be an object"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(dtype_policies::deserialize(json{{"class_name", "DTypePolicy"}, {"config", {{"name", "f32"}}}}),
                       doctest::Contains("Cannot convert 'f32'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      dtype_policies::deserialize(json{{"class_name", "DTypePolicy"}, {"config", {{"mode", "int8"}, {"source_name", "float32"}}}}),
      doctest::Contains("describes a QuantizedDTypePolicy"), std::invalid_argument);
  // Keras builds the class from the config's keys: a missing amax_history_length is the default.
  const DTypePolicy float8 = dtype_policies::deserialize(
      json{{"class_name", "QuantizedFloat8DTypePolicy"}, {"config", {{"mode", "float8"}, {"source_name", "float32"}}}});
  CHECK(float8 == QuantizedFloat8DTypePolicy("float8", "float32"));
  CHECK(float8.amax_history_length() == 1024);
  CHECK_THROWS_WITH_AS(
      dtype_policies::deserialize(json{{"class_name", "QuantizedFloat8DTypePolicy"}, {"config", {{"name", "float32"}}}}),
      "Could not deserialize a QuantizedFloat8DTypePolicy from the config {\"name\":\"float32\"}, which describes a "
      "DTypePolicy.",
      std::invalid_argument);
  CHECK_THROWS_WITH_AS(dtype_policies::deserialize(json{{"class_name", "DTypePolicyMap"}, {"config", json::object()}}),
                       doctest::Contains("DTypePolicyMap::from_config"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(dtype_policies::deserialize(json(3)), doctest::Contains("Could not deserialize"),
                       std::invalid_argument);
}

TEST_CASE("get: strings, quantized strings, dicts, policies, null; nothing else") {
  CHECK(dtype_policies::get("mixed_bfloat16") == DTypePolicy("mixed_bfloat16"));
  CHECK(dtype_policies::get(std::string("float16")) == DTypePolicy("float16"));
  CHECK(dtype_policies::get("int8_from_mixed_bfloat16") == QuantizedDTypePolicy("int8", "mixed_bfloat16"));
  CHECK(dtype_policies::get("float8_from_float32") == QuantizedFloat8DTypePolicy("float8", "float32"));
  CHECK(dtype_policies::get("float8_from_float32").class_name() == "QuantizedFloat8DTypePolicy");
  const DTypePolicy policy("float64");
  CHECK(dtype_policies::get(policy) == policy);
  CHECK(dtype_policies::get(json{{"class_name", "DTypePolicy"}, {"config", {{"name", "float32"}}}}) ==
        DTypePolicy("float32"));
  {
    policy_scope scope("bfloat16");
    CHECK(dtype_policies::get(json(nullptr)) == DTypePolicy("bfloat16"));
  }
  for (const json& bad : {json(1), json(2.5), json(true), json::array({"float32"})}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(dtype_policies::get(bad),
                         doctest::Contains("Cannot interpret `dtype` argument. Expected a string or an instance of "
                                           "DTypePolicy. Received: dtype="),
                         std::invalid_argument);
  }
}

TEST_CASE("quantized strings that do not split into mode and source") {
  for (const char* bad : {"int8_abc_", "int8", "float8", "int8_from_float32_from_float32"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(dtype_policies::get(bad),
                         (std::string("Cannot convert `policy` into a valid pair (`mode`, `source_name`) to "
                                      "instantiate `QuantizedDTypePolicy`. Received: policy=") + bad).c_str(),
                         std::invalid_argument);
  }
  CHECK_THROWS_WITH_AS(dtype_policies::get("int8_from_"), doctest::Contains("Cannot convert ''"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(dtype_policies::get("int8_from_mixed_bfloat15"), doctest::Contains("Cannot convert 'mixed_bfloat15'"),
                       std::invalid_argument);
  // Python's split: the second "_from_" must start after the first, so this is the pair
  // ("int8", "from_float32"), whose source is no policy.
  CHECK_THROWS_WITH_AS(dtype_policies::get("int8_from_from_float32"), doctest::Contains("Cannot convert 'from_float32'"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(dtype_policies::get("int8x_from_float32"), doctest::Contains("Received: mode=int8x"),
                       std::invalid_argument);
  // A plain policy named like a quantization mode is still reachable through DTypePolicy.
  CHECK(DTypePolicy("int8").compute_dtype() == "int8");
}
