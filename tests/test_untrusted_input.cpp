// JSON and strings from outside, as an attacker would write them: nested 100,000 deep, with bytes
// that are not UTF-8, with members of the wrong JSON type. Every entry point answers with a
// std::invalid_argument (std::out_of_range for a lookup) whose message shows the bad bytes
// escaped; no nlohmann::json exception, no stack overflow. (Weight files and checkpoints:
// test_models.cpp and test_loss_scaling.cpp.)
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <mixprec/mixprec.hpp>
#include <mixprec/models.hpp>
#include <mixprec/training.hpp>

using namespace mixprec;
using nlohmann::json;

namespace {

/// `depth` arrays inside each other around `inner`, built by the (iterative) parser: building it
/// with initializer lists would copy it, recursively.
json nested(std::size_t depth, const std::string& inner = "1") {
  return json::parse(std::string(depth, '[') + inner + std::string(depth, ']'));
}

/// A JSON text with `depth` arrays inside each other where `hole` is.
json with_nested(const std::string& before, std::size_t depth, const std::string& after) {
  return json::parse(before + std::string(depth, '[') + std::string(depth, ']') + after);
}

constexpr std::size_t too_deep = 100'000;

/// The message of the std::invalid_argument `f` throws ("" and a failed check if it throws
/// anything else or nothing). The message must be valid UTF-8: nlohmann dumps it.
std::string invalid_argument_from(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& error) {
    const std::string message = error.what();
    CHECK_NOTHROW((void)json(message).dump());
    return message;
  } catch (const std::exception& error) {
    FAIL_CHECK("not a std::invalid_argument: " << error.what());
    return "";
  }
  FAIL_CHECK("no exception");
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("messages show strings escaped and cut short; JSON values the same, at any depth") {
  using detail::quote_for_message;
  using detail::shown;
  CHECK(quote_for_message("mixed_float16") == "mixed_float16");
  CHECK(quote_for_message("k\xff") == "k\\xff");
  CHECK(quote_for_message("a\nb\x7f") == "a\\x0ab\\x7f");
  CHECK(quote_for_message("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  // Overlong, surrogate, past U+10FFFF, truncated sequences: not UTF-8, each byte escaped.
  CHECK(quote_for_message("\xc0\xaf") == "\\xc0\\xaf");
  CHECK(quote_for_message("\xed\xa0\x80") == "\\xed\\xa0\\x80");
  CHECK(quote_for_message("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");
  CHECK(quote_for_message("\xe2\x82") == "\\xe2\\x82");
  // Long text is cut at a character, never inside one.
  const std::string long_text = std::string(255, 'x') + "\xc3\xa9" + std::string(100, 'y');
  CHECK(quote_for_message(long_text) == std::string(255, 'x') + "\xc3\xa9...(357 characters)");

  CHECK(shown(json("a\"b\\c\n\xff")) == R"("a\"b\\c\u000a\xff")");
  CHECK(shown(json{{"k\xfe", {1, 2.5, true, nullptr}}}) == R"({"k\xfe":[1,2.5,true,null]})");
  CHECK(shown(nlohmann::ordered_json{{"b", 1}, {"a", 2}}) == R"({"b":1,"a":2})");
  CHECK(shown(std::string_view("x\xff")) == R"("x\xff")");
  const std::string deep = shown(nested(too_deep));
  CHECK(deep.size() < 300);
  CHECK(deep.starts_with("[[[["));
  CHECK(deep.ends_with("..."));
  CHECK(shown(json(std::vector<int>(1000, 7))).size() < 300);
}

TEST_CASE("a float8 amax history of any positive length is a policy; a model too large for the caps is rejected at build") {
  const auto huge = json::parse(R"({"mode": "float8", "source_name": "float32", "amax_history_length": 18446744073709551615})");
  const DTypePolicy policy = DTypePolicy::from_config(huge);
  CHECK(policy.amax_history_length() == std::size_t{18446744073709551615ull});
  CHECK(DTypePolicy::from_config(json{{"mode", "float8"}, {"source_name", "float32"}, {"amax_history_length", 3}})
            .amax_history_length() == std::size_t{3});
  for (const json& length : {json(0), json(-1), json(2.5), json("3")})
    CHECK_THROWS_WITH_AS(DTypePolicy::from_config(json{{"mode", "float8"}, {"source_name", "float32"}, {"amax_history_length", length}}),
                         doctest::Contains("'amax_history_length' must be a positive integer"), std::invalid_argument);
  const json dtype = {{"class_name", "QuantizedFloat8DTypePolicy"}, {"config", huge}};
  CHECK_THROWS_WITH_AS(RuntimeModel({4}, {layer_configs::dense(2, "linear", dtype)}), doctest::Contains("amax_history"),
                       std::invalid_argument);
}

TEST_CASE("JSON nesting is checked before anything recursive touches it") {
  // The limit itself: max_json_depth levels load, one more does not.
  CHECK_NOTHROW(detail::check_json_depth(nested(max_json_depth - 1, "{}"), "x"));
  CHECK_THROWS_WITH_AS(detail::check_json_depth(nested(max_json_depth, "{}"), "The value"),
                       "The value nests JSON arrays and objects deeper than 128 levels (mixprec::max_json_depth).",
                       std::invalid_argument);
  CHECK_NOTHROW(detail::check_json_depth(json::parse(R"({"a": [1, {"b": [[]]}], "c": {}})"), "x"));

  const auto deep_is_rejected = [](const std::function<void()>& f) {
    const std::string message = invalid_argument_from(f);
    CAPTURE(message);
    CHECK(contains(message, "deeper than 128 levels"));
  };
  // Policies: every JSON entry point, each with the deep part where a copy or dump would reach it.
  deep_is_rejected([] { DTypePolicy::from_config(with_nested(R"({"name": )", too_deep, "}")); });
  deep_is_rejected([] { dtype_policies::deserialize(with_nested(R"({"class_name": "DTypePolicy", "config": {"name": )", too_deep, "}}")); });
  deep_is_rejected([] { dtype_policies::deserialize(with_nested(R"({"class_name": "Policy", "config": {"name": "float32", "loss_scale": )", too_deep, "}}")); });
  deep_is_rejected([] { (void)with_nested(R"({"class_name": "DTypePolicy", "config": )", too_deep, "}").get<DTypePolicy>(); });
  deep_is_rejected([] { (void)nlohmann::ordered_json::parse(std::string(too_deep, '[') + std::string(too_deep, ']')).get<DTypePolicy>(); });
  deep_is_rejected([] { DTypePolicyMap().set("k", with_nested(R"({"class_name": "DTypePolicy", "config": )", too_deep, "}")); });
  deep_is_rejected([] { DTypePolicyMap::from_config(with_nested(R"({"policy_map": {"k": )", too_deep, "}}")); });
  deep_is_rejected([] { DTypePolicyMap::from_config(nlohmann::ordered_json::parse(R"({"default_policy": )" + std::string(too_deep, '[') + std::string(too_deep, ']') + "}")); });
  deep_is_rejected([] { mixed_precision::experimental::Policy::from_config(with_nested(R"({"name": "float32", "loss_scale": {"class_name": "FixedLossScale", "config": )", too_deep, "}}")); });
  deep_is_rejected([] { mixed_precision::experimental::get(with_nested(R"({"class_name": "FixedLossScale", "config": )", too_deep, "}")); });
  // A deep array is no policy at all: refused, and shown cut short.
  CHECK(contains(invalid_argument_from([] { dtype_policies::get(nested(too_deep)); }), "Received: dtype=[[[["));
  // Training and layer settings.
  deep_is_rejected([] { optimizers::Optimizer::from_config(with_nested(R"({"class_name": "SGD", "config": {"momentum": )", too_deep, "}}")); });
  deep_is_rejected([] { optimizers::LossScaleOptimizer::from_config(with_nested(R"({"inner_optimizer": )", too_deep, "}")); });
  deep_is_rejected([] { schedules::LearningRate::from_config(with_nested(R"({"class_name": "ExponentialDecay", "config": )", too_deep, "}")); });
  deep_is_rejected([] { initializers::get(with_nested(R"({"class_name": "Zeros", "config": )", too_deep, "}")); });
  deep_is_rejected([] { regularizers::get(with_nested(R"({"class_name": "L2", "config": )", too_deep, "}")); });
  // Models: the whole config, and each layer given to the constructor.
  const std::string dense = R"({"class_name": "Dense", "config": {"units": 2, "batch_shape": [null, 3], "bias_regularizer": )";
  deep_is_rejected([&] { RuntimeModel::from_config(with_nested(R"({"class_name": "Sequential", "config": {"layers": [)" + dense, too_deep, "}}]}}")); });
  deep_is_rejected([&] {
    std::vector<json> layers;
    layers.push_back(with_nested(dense, too_deep, "}}"));  // moved: an initializer list would copy it
    RuntimeModel({3}, layers);
  });
}

TEST_CASE("bytes that are not UTF-8 are shown escaped in every message that echoes them") {
  const auto escaped = [](const std::function<void()>& f, const std::string& part) {
    const std::string message = invalid_argument_from(f);
    CAPTURE(message);
    CHECK(contains(message, part));
  };
  // The issue's case: nlohmann's type_error 316 escaped while the message was built.
  escaped([] { DTypePolicyMap().set("k", json("mixed_float16\xff")); },
          "Received: \"mixed_float16\\xff\" for key 'k' (Cannot convert 'mixed_float16\\xff'");
  escaped([] { DTypePolicyMap().set("k\xfe", "mixed_float16\xff"); }, "Received: mixed_float16\\xff for key 'k\\xfe'");
  // A key that is not UTF-8 is no RE2 regex (keys are UTF-8); a control byte is, and is escaped.
  escaped([] { DTypePolicyMap().set("k\xff", "float32"); }, "key 'k\\xff' is not a valid regular expression");
  escaped([] {
    DTypePolicyMap map;
    map.set("k\x01", "float32");
    map.set("k\x01", "float32");
  }, "k\\x01 already exist");
  escaped([] {
    DTypePolicyMap map;
    map.set("a.*", "float32");
    map.set(".*", "float32");
    (void)map.get("a\x01");
  }, "Path 'a\\x01' matches multiple");
  escaped([] { DTypePolicyMap::from_config(json{{"policy_map", {{"k\xff", "float32\xfe"}}}}); }, "for key 'k\\xff'");
  escaped([] { DTypePolicyMap::from_config(json{{"extra\xff", 1}}); }, "unexpected key 'extra\\xff'");
  try {
    DTypePolicyMap().pop("k\xff");
    FAIL("pop of a missing key");
  } catch (const std::out_of_range& error) {
    CHECK(std::string(error.what()) == "'k\\xff' is not a key of the DTypePolicyMap.");
  }
  // Policy names, policy JSON, quantized strings, the global policy.
  escaped([] { DTypePolicy("mixed\xff"); }, "Cannot convert 'mixed\\xff'");
  escaped([] { DTypePolicy::from_config(json{{"name\xff", "float32"}}); }, "unexpected key 'name\\xff'");
  escaped([] { DTypePolicy::from_config(json{{"name", "float32\x01"}}); }, "Cannot convert 'float32\\x01'");
  escaped([] { dtype_policies::deserialize(json{{"class_name", "X\xff"}, {"config", json::object()}}); },
          "Unknown dtype policy class_name 'X\\xff'");
  escaped([] { dtype_policies::deserialize(json{{"class_name", "X\xff"}, {"config", 1}}); }, "the X\\xff: its 'config'");
  escaped([] { dtype_policies::get(json::array({"\xff"})); }, "dtype=[\"\\xff\"]");
  escaped([] { set_dtype_policy("int8_from\xff"); }, "policy=int8_from\\xff");
  escaped([] { QuantizedDTypePolicy("int9\xff", "float32"); }, "mode=int9\\xff");
  escaped([] { mixed_precision::experimental::Policy::from_config(json{{"name", "float32"}, {"x\xff", 1}}); },
          "unknown key 'x\\xff'");
  escaped([] { mixed_precision::experimental::get(json{{"class_name", "FixedLossScale"}, {"config", {{"x\xff", 1}}}}); },
          "unknown config key 'x\\xff'");
  CHECK(dtype_policy() == DTypePolicy("float32"));
  // Layer settings and names, model names.
  escaped([] { RuntimeModel({6, 6, 1}, {layer_configs::conv2d(2, 3, 3, "linear", "same\xff")}); },
          "`padding` must be one of \"valid\", \"same\". Received: \"same\\xff\"");
  escaped([] { RuntimeModel({4}, {layer_configs::dense(3, "relu\xff")}); }, "unknown activation \"relu\\xff\"");
  escaped([] { RuntimeModel({4}, {layer_configs::dense(3, "linear", "float32\xff", "d\xfe")}); },
          "layer 1 ('d\\xfe', Dense): bad dtype policy: Cannot convert 'float32\\xff'");
  escaped([] { RuntimeModel({4}, {layer_configs::dense(3, "linear", nullptr, "d\xfe"), layer_configs::dense(3, "linear", nullptr, "d\xfe")}); },
          "the name 'd\\xfe' is already used");
  escaped([] { RuntimeModel({4}, {layer_configs::layer("Dense\xff", {{"units", 3}}, nullptr, "")}); }, "layer 1 ('dense\\xff', Dense\\xff): unknown layer class");
  escaped([] { RuntimeModel({4}, {json{{"class_name", "Dense"}, {"config", {{"units", 3}, {"x\xff", 1}}}}}); },
          "unknown setting `\"x\\xff\"`");
  escaped([] { optimizers::Optimizer::from_config(json{{"class_name", "SGD\xff"}, {"config", 1}}); }, "SGD\\xff: its config");
  escaped([] { initializers::get(json{{"class_name", "Zeros\xff"}, {"config", 1}}); }, "initializer Zeros\\xff: its config");
  escaped([] { regularizers::get(json{{"class_name", "L2\xff"}, {"config", 1}}); }, "regularizer L2\\xff: its config");
  RuntimeModel model({4}, {layer_configs::dense(3)}, "model\xff");
  escaped([&] { model(Tensor<float, dynamic, 5>(2)); }, "RuntimeModel 'model\\xff' expects inputs");
  try {
    (void)model.layer("x\xff");
    FAIL("a layer that is not there");
  } catch (const std::out_of_range& error) {
    CHECK(std::string(error.what()) == "RuntimeModel 'model\\xff' has no layer 'x\\xff'.");
  }
  // A weight path that is not UTF-8 has no JSON text: saving says so.
  RuntimeModel named({4}, {layer_configs::dense(3, "linear", nullptr, "d\xff")});
  const std::string file = (std::filesystem::temp_directory_path() / "mixprec_untrusted_utf8.weights").string();
  escaped([&] { named.save_weights(file); }, "a weight path or a training setting is not valid UTF-8");
  CHECK(!std::filesystem::exists(file));
}

TEST_CASE("policy JSON with members of the wrong type: std::invalid_argument naming the key") {
  const auto names = [](const std::function<void()>& f, const std::string& part) {
    const std::string message = invalid_argument_from(f);
    CAPTURE(message);
    CHECK(contains(message, part));
  };
  // The issue's case: a map's default_policy {"class_name": 1} (nlohmann's type_error 302 escaped).
  names([] { DTypePolicyMap::from_config(json{{"default_policy", {{"class_name", 1}}}}); },
        "bad 'default_policy': Could not deserialize a dtype policy from {\"class_name\":1}: its 'class_name' must be a string.");
  names([] { DTypePolicyMap::from_config(nlohmann::ordered_json{{"default_policy", {{"class_name", json::array()}}}}); },
        "its 'class_name' must be a string");
  names([] { DTypePolicyMap::from_config(json{{"default_policy", 1}}); }, "bad 'default_policy': Cannot interpret `dtype`");
  names([] { DTypePolicyMap::from_config(json{{"default_policy", {{"class_name", "DTypePolicy"}, {"config", {{"name", 5}}}}}}); },
        "bad 'default_policy': Invalid DTypePolicy config {\"name\":5}: 'name' must be a string.");
  names([] { DTypePolicyMap::from_config(json{{"policy_map", "float32"}}); }, "'policy_map' must be an object");
  names([] { DTypePolicyMap::from_config(json{{"policy_map", {{"dense", {{"class_name", 1}}}}}}); },
        "for key 'dense' (Could not deserialize a dtype policy from {\"class_name\":1}: its 'class_name' must be a string.)");
  names([] { DTypePolicyMap().set("k", json{{"class_name", "DTypePolicy"}, {"config", "float32"}}); },
        "its 'config' must be an object");
  // class_name / config of the wrong type in any policy JSON.
  names([] { dtype_policies::deserialize(json{{"class_name", nullptr}, {"config", json::object()}}); }, "its 'class_name' must be a string");
  names([] { dtype_policies::deserialize(json{{"class_name", "DTypePolicy"}, {"config", json::array()}}); }, "its 'config' must be an object");
  names([] { dtype_policies::deserialize(json{{"class_name", "DTypePolicy"}}); }, "its 'config' must be an object");
  names([] { dtype_policies::deserialize(json::array()); }, "expected a policy name or an object with 'class_name' and 'config'");
  names([] { DTypePolicy::from_config(json{{"name", true}}); }, "'name' must be a string");
  names([] { DTypePolicy::from_config(json{{"mode", "int8"}, {"source_name", 3}}); }, "'source_name' must be a string");
  names([] { DTypePolicy::from_config(json{{"mode", "float8"}, {"source_name", "float32"}, {"amax_history_length", 2.5}}); },
        "'amax_history_length' must be a positive integer");
  names([] { mixed_precision::experimental::Policy::from_config(json{{"name", 1}}); }, "Policy.from_config: expected {\"name\"");
  names([] { (void)json(7).get<DTypePolicy>(); }, "Received: dtype=7");
}
