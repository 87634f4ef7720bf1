// DTypePolicyMap (seed 003, keras-semantics.md section 4).
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <mixprec/mixprec.hpp>

using namespace mixprec;

namespace {
template <class T>
std::string repr(const T& value) {
  std::ostringstream out;
  out << value;
  return out.str();
}
}  // namespace

TEST_CASE("the seed's example") {
  DTypePolicyMap map;
  map.set("layer/dense_0", DTypePolicy("bfloat16"));
  map.set("layer/dense_1", QuantizedDTypePolicy("int8", "bfloat16"));
  CHECK(map["layer/dense_0"] == DTypePolicy("bfloat16"));
  CHECK(map["layer/dense_1"] == QuantizedDTypePolicy("int8", "bfloat16"));
  CHECK(map["layer/dense_2"] == dtype_policy());  // no hit
}

TEST_CASE("exact key first, then full-match regexes") {
  DTypePolicyMap map(DTypePolicy("float32"));
  map.set("model/decoder", "bfloat16");
  map.set("model/encoder/.*/query", "mixed_float16");
  map.set("model/encoder/layer_0/query", "float64");
  CHECK(map.get("model/encoder/layer_0/query").name() == "float64");  // exact wins over the regex
  CHECK(map.get("model/encoder/layer_1/query").name() == "mixed_float16");
  CHECK(map.get("model/decoder/layer_0").name() == "float32");      // a full match is needed
  CHECK(map.get("model/encoder/layer_1/query_norm").name() == "float32");
  CHECK(map.get("xmodel/decoder").name() == "float32");
}

TEST_CASE("several matching regexes are an error naming them") {
  DTypePolicyMap map;
  map.set("model/.*/query", "bfloat16");
  map.set("model/block_0/.*", "float16");
  CHECK_THROWS_WITH_AS(map.get("model/block_0/query"),
                       "Path 'model/block_0/query' matches multiple dtype policy specification keys: "
                       "['model/.*/query', 'model/block_0/.*']. Please make sure each path only matches at most one "
                       "dtype policy specification key in the DTypePolicyMap.",
                       std::invalid_argument);
  CHECK(map.get("model/block_1/query").name() == "bfloat16");
}

TEST_CASE("duplicate keys, bad values and bad regexes are rejected; the map is unchanged") {
  DTypePolicyMap map;
  map.set("layer/dense", "bfloat16");
  CHECK_THROWS_WITH_AS(map.set("layer/dense", "float32"),
                       "layer/dense already exist in the DTypePolicyMap with value <DTypePolicy \"bfloat16\">. Please "
                       "make sure to not use duplicated keys.",
                       std::invalid_argument);
  // Keras checks the key first: a present key with a bad value is a duplicate key.
  CHECK_THROWS_WITH_AS(map.set("layer/dense", "float33"), doctest::Contains("already exist in the DTypePolicyMap"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(map.set("layer/dense", nlohmann::json(7)), doctest::Contains("already exist in the DTypePolicyMap"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(map.set("layer/other", "float33"),
                       doctest::Contains("Cannot interpret the assigned value by `keras.dtype_policies.get`"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(map.set("layer/other", nlohmann::json(7)), doctest::Contains("Cannot interpret the assigned value"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(map.set("layer/(unclosed", "float32"),
                       doctest::Contains("The DTypePolicyMap key 'layer/(unclosed' is not a valid regular expression"),
                       std::invalid_argument);
  CHECK(map.size() == 1);
  CHECK(map.get("layer/dense").name() == "bfloat16");
  map.set("layer/json", nlohmann::json{{"class_name", "DTypePolicy"}, {"config", {{"name", "float16"}}}});
  CHECK(map.get("layer/json").name() == "float16");
}

TEST_CASE("keys are RE2 regexes: linear-time matching, whatever the key") {
  DTypePolicyMap map(DTypePolicy("float32"));
  // Backtracking engines (std::regex) take seconds per lookup on 36 a's, doubling every 2 more.
  map.set("(a|aa)*b", "bfloat16");
  CHECK(map.get(std::string(36, 'a')).name() == "float32");
  CHECK(map.get(std::string(36, 'a') + "b").name() == "bfloat16");
  CHECK(map.get(std::string(100000, 'a')).name() == "float32");
  CHECK(map.get(std::string(100000, 'a') + "b").name() == "bfloat16");
}

TEST_CASE("long keys and long layer paths: no recursion, a clear error when a key is too long or too large") {
  DTypePolicyMap map(DTypePolicy("float32"));
  // A layer name of 100K characters, matched by regexes and compared with exact keys.
  const std::string long_path = "model/" + std::string(100000, 'x');
  map.set("model/x+", "bfloat16");
  map.set("model/(x|y)*z", "float16");
  CHECK(map.get(long_path).name() == "bfloat16");
  CHECK(map.get(long_path + "y").name() == "float32");
  // The longest key fits key_regex_memory and matches.
  const std::string long_key = "other/" + std::string(DTypePolicyMap::max_key_length - 6, 'k');
  map.set(long_key, "float64");
  CHECK(map.get(long_key).name() == "float64");
  CHECK(map.get(long_key + "k").name() == "float32");
  // Longer keys, such as a 100 KB one or one nested 50000 deep, are rejected unparsed, named (shortened).
  for (const std::string& key : {long_key + "k", std::string(50000, '(') + std::string(50000, ')')}) {
    CAPTURE(key.size());
    CHECK_THROWS_WITH_AS(map.set(key, "float16"),
                         doctest::Contains(("...(" + std::to_string(key.size()) + " characters)' is too long: " +
                                            std::to_string(key.size()) + " bytes; at most 65536 (max_key_length).")
                                               .c_str()),
                         std::invalid_argument);
  }
  // A short key whose repetitions expand past key_regex_memory.
  std::string expanding;
  for (int i = 0; i < 20; ++i) expanding += ".{1000}";
  CHECK_THROWS_WITH_AS(map.set(expanding, "float16"),
                       ("The DTypePolicyMap key '" + expanding +
                        "' is too large: its compiled regex needs more than 1024 KiB "
                        "(key_regex_memory).")
                           .c_str(),
                       std::invalid_argument);
  CHECK(map.size() == 3);
}

TEST_CASE("keys RE2 rejects: named in the message, the map unchanged") {
  DTypePolicyMap map;
  map.set("layer/dense", "bfloat16");
  // ECMAScript's backreferences and lookaround, which RE2 has not; std::regex overflowed int on \8888...
  for (const std::string key : {"_\\8888888888888888888886", "(a)\\1", "model/(?=dense).*", "model/(?!dense).*",
                                "(?<=a)b", "x{1001}", "[z-a]", "*"}) {
    CAPTURE(key);
    CHECK_THROWS_WITH_AS(map.set(key, "float16"),
                         doctest::Contains(("The DTypePolicyMap key '" + key + "' is not a valid regular expression (").c_str()),
                         std::invalid_argument);
  }
  CHECK_THROWS_WITH_AS(map.set("(a)\\1", "float16"),
                       "The DTypePolicyMap key '(a)\\1' is not a valid regular expression (invalid escape sequence: "
                       "\\1). Keys are RE2 regexes in UTF-8, matched against whole layer paths; RE2 has no "
                       "backreferences and no lookaround.",
                       std::invalid_argument);
  // A key whose view ends in '(' at the very end of its buffer: RE2 reads the view, not past it
  // (under AddressSanitizer an over-read fails here).
  const std::string_view text = "layer/(";
  const auto buffer = std::make_unique<char[]>(text.size());
  std::copy(text.begin(), text.end(), buffer.get());
  CHECK_THROWS_WITH_AS(map.set(std::string_view(buffer.get(), text.size()), "float16"),
                       doctest::Contains("key 'layer/(' is not a valid regular expression (missing ): layer/()"),
                       std::invalid_argument);
  // Invalid UTF-8: rejected with the bytes in the message, which is built without throwing.
  CHECK_THROWS_WITH_AS(map.set("layer/\xff", "float16"),
                       doctest::Contains("key 'layer/\\xff' is not a valid regular expression (invalid UTF-8)"),
                       std::invalid_argument);
  CHECK(map.keys() == std::vector<std::string>{"layer/dense"});
  CHECK(map.get("layer/dense").name() == "bfloat16");
}

TEST_CASE("keys and paths are UTF-8 text: '.' is one character") {
  DTypePolicyMap map(DTypePolicy("float32"));
  map.set("model/caf.", "bfloat16");
  map.set("model/[é]", "float16");
  CHECK(map.get("model/café").name() == "bfloat16");  // é is two bytes, one character
  CHECK(map.get("model/é").name() == "float16");
  CHECK(map.get("model/\xc3").name() == "float32");   // a byte that is not UTF-8 matches no '.'
  CHECK(map.get("model/caf\xff").name() == "float32");
  // Copies share the compiled regexes, which outlive the map they came from.
  auto copy = std::make_unique<DTypePolicyMap>(map);
  map = DTypePolicyMap();
  CHECK(copy->get("model/cafe").name() == "bfloat16");
}

TEST_CASE("pop, contains, size, keys in insertion order") {
  DTypePolicyMap map;
  map.set("c", "float16");
  map.set("a", "bfloat16");
  map.set("b", "float64");
  CHECK(map.keys() == std::vector<std::string>{"c", "a", "b"});
  CHECK(map.contains("a"));
  CHECK_FALSE(map.contains("."));  // contains is exact, never a regex
  CHECK(map.pop("a").name() == "bfloat16");
  CHECK(map.keys() == std::vector<std::string>{"c", "b"});
  CHECK(map.size() == 2);
  CHECK_THROWS_AS(map.pop("a"), std::out_of_range);
  CHECK(map.size() == 2);
}

TEST_CASE("default policy: the global policy when absent; name and dtypes delegate") {
  {
    policy_scope scope("mixed_bfloat16");
    const DTypePolicyMap map;
    CHECK(map.default_policy() == DTypePolicy("mixed_bfloat16"));
    CHECK(map.name() == "map_mixed_bfloat16");
    CHECK(map.compute_dtype() == "bfloat16");
    CHECK(map.variable_dtype() == "float32");
    CHECK_FALSE(map.quantization_mode());
  }
  const DTypePolicyMap quantized(QuantizedDTypePolicy("int8", "float32"));
  CHECK(quantized.name() == "map_int8_from_float32");
  CHECK(*quantized.quantization_mode() == "int8");
}

TEST_CASE("config round trip keeps policies, default and key order") {
  DTypePolicyMap map(DTypePolicy("mixed_float16"));
  map.set("z/dense", "bfloat16");
  map.set("a/.*/query", QuantizedDTypePolicy("int8", "bfloat16"));
  map.set("m/attention", QuantizedFloat8DTypePolicy("float8", "float32", 8));
  const auto config = map.get_config();
  CHECK(config["default_policy"]["config"]["name"] == "mixed_float16");
  CHECK(config["policy_map"]["z/dense"]["class_name"] == "DTypePolicy");
  const auto loaded = DTypePolicyMap::from_config(config);
  CHECK(loaded.keys() == map.keys());
  for (const auto& key : map.keys()) CHECK(loaded.get(key) == map.get(key));
  CHECK(loaded.default_policy() == map.default_policy());
  CHECK(repr(loaded) == repr(map));
  // From text, as Keras writes it.
  const auto from_text = DTypePolicyMap::from_config(nlohmann::ordered_json::parse(config.dump()));
  CHECK(from_text.keys() == map.keys());

  // A null default defers to the global policy at load time.
  const auto deferred = DTypePolicyMap::from_config(nlohmann::json{{"default_policy", nullptr}, {"policy_map", nlohmann::json::object()}});
  CHECK(deferred.default_policy() == dtype_policy());
  CHECK(DTypePolicyMap().get_config()["default_policy"].is_null());
}

TEST_CASE("bad map configs") {
  using nlohmann::json;
  CHECK_THROWS_WITH_AS(DTypePolicyMap::from_config(json("x")), doctest::Contains("expected an object"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(DTypePolicyMap::from_config(json{{"policy_map", json::object()}, {"extra", 1}}),
                       doctest::Contains("unexpected key 'extra'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(DTypePolicyMap::from_config(json{{"policy_map", json::array()}}),
                       doctest::Contains("'policy_map' must be an object"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(DTypePolicyMap::from_config(json{{"default_policy", {{"class_name", "DTypePolicyMap"}, {"config", json::object()}}}}),
                       "`default_policy` cannot be a `DTypePolicyMap`.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(DTypePolicyMap::from_config(json{{"policy_map", {{"layer", "float15"}}}}),
                       doctest::Contains("Cannot convert 'float15'"), std::invalid_argument);
}

TEST_CASE("repr") {
  DTypePolicyMap map(DTypePolicy("float32"));
  map.set("layer/dense_0", "bfloat16");
  map.set("layer/dense_1", QuantizedDTypePolicy("int8", "bfloat16"));
  CHECK(repr(map) ==
        "<DTypePolicyMap default_policy=float32, mapping=[('layer/dense_0', 'bfloat16'), "
        "('layer/dense_1', 'int8_from_bfloat16')]>");
  CHECK(repr(DTypePolicyMap(DTypePolicy("float64"))) == "<DTypePolicyMap default_policy=float64, mapping=[]>");
}
