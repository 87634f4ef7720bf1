// Model configs written by someone else: sizes that wrap or exhaust memory, windows that make
// no sense, JSON of the wrong types anywhere, integers past 2^63, names that collide. Each must
// be a std::invalid_argument naming the layer and the key (or work), never another exception,
// a crash, a hang or a huge allocation. Also the size caps of core/limits.hpp themselves.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>
#include <mixprec/runtime.hpp>

using namespace mixprec;
using json = nlohmann::json;

namespace {

constexpr std::uint64_t two_to(unsigned power) { return std::uint64_t{1} << power; }

/// Caps set for a scope, the previous ones restored after.
struct caps_for_scope {
  size_limits saved = get_size_limits();
  explicit caps_for_scope(size_limits limits) { set_size_limits(limits); }
  ~caps_for_scope() { set_size_limits(saved); }
  caps_for_scope(const caps_for_scope&) = delete;
  caps_for_scope& operator=(const caps_for_scope&) = delete;
};
/// No caps at all: only the checked arithmetic stands between a config and a wrapped size.
constexpr size_limits no_caps{std::numeric_limits<std::size_t>::max(), std::numeric_limits<std::size_t>::max()};

/// A Keras 3 Sequential config: an InputLayer with `batch_shape`, then the layers.
json sequential(const json& batch_shape, const std::vector<json>& layers) {
  json list = json::array({{{"class_name", "InputLayer"}, {"config", {{"batch_shape", batch_shape}}}}});
  for (const json& layer : layers) list.push_back(layer);
  return {{"class_name", "Sequential"}, {"config", {{"name", "untrusted"}, {"layers", list}}}};
}
json layer(const char* class_name, json config) { return {{"class_name", class_name}, {"config", std::move(config)}}; }

/// The message of the std::invalid_argument `f` throws ("no error" if none); any other exception
/// fails the test.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

AnyTensor ones(std::vector<std::size_t> extents) {
  std::size_t size = 1;
  for (std::size_t e : extents) size *= e;
  return AnyTensor(std::move(extents), std::vector<float>(size, 1.0f));
}

}  // namespace

TEST_CASE("size_limits: documented defaults, set and get") {
  CHECK(size_limits{}.max_parameters == 4'000'000'000);
  CHECK(size_limits{}.max_allocation_bytes == std::size_t{32} << 30);
  CHECK(get_size_limits() == size_limits{});
  {
    caps_for_scope caps({.max_parameters = 123, .max_allocation_bytes = 4567});
    CHECK(get_size_limits().max_parameters == 123);
    CHECK(get_size_limits().max_allocation_bytes == 4567);
  }
  CHECK(get_size_limits() == size_limits{});
  // Setters and getters from several threads: no torn value (each field is one of those set).
  {
    caps_for_scope caps(size_limits{});
    std::thread writer([] {
      for (int i = 0; i < 2000; ++i) set_size_limits({.max_parameters = std::size_t(i % 2 ? 10 : 20), .max_allocation_bytes = 64});
    });
    bool coherent = true;
    for (int i = 0; i < 2000; ++i) {
      const std::size_t p = get_size_limits().max_parameters;
      coherent = coherent && (p == 10 || p == 20 || p == size_limits{}.max_parameters);
    }
    writer.join();
    CHECK(coherent);
  }
}

TEST_CASE("extents that wrap are rejected at build, naming the layer (checked arithmetic, even without caps)") {
  const auto dense_2_62 = sequential({nullptr, 4}, {layer_configs::dense(two_to(62), "linear", {}, {}, false)});
  const auto conv_same = sequential({nullptr, 5, 5, 1}, {layer("Conv2D", {{"filters", 1}, {"kernel_size", {65536, two_to(48)}},
                                                                          {"padding", "same"}, {"use_bias", false}})});
  const auto flatten_2_64 = sequential({nullptr, two_to(32), two_to(32)}, {layer_configs::flatten(), layer_configs::dense(2)});
  // With the default caps, the sizes are over them.
  CHECK(error_of([&] { RuntimeModel::from_config(dense_2_62); })
            .starts_with("layer 1 ('dense', Dense): the output of one sample takes 4611686018427387904 elements x 4 bytes, "
                         "over the allocation cap of 34359738368 bytes (size_limits::max_allocation_bytes; raise it with "
                         "mixprec::set_size_limits)."));
  CHECK(error_of([&] { RuntimeModel::from_config(conv_same); })
            .starts_with("layer 1 ('conv2d', Conv2D): the im2col columns of one sample has more than 2^64 elements"));
  CHECK(error_of([&] { RuntimeModel::from_config(flatten_2_64); })
            .starts_with("layer 1 ('flatten', Flatten): the input has more than 2^64 elements (4294967296 x 4294967296 "
                         "overflows)."));
  // Without caps, the checked products still catch every wrap.
  caps_for_scope caps(no_caps);
  CHECK(error_of([&] { RuntimeModel::from_config(dense_2_62); })
            .starts_with("layer 1 ('dense', Dense): the output of one sample takes 4611686018427387904 elements x 4 bytes"));
  CHECK(error_of([] { RuntimeModel::from_config(sequential({nullptr, 8}, {layer_configs::dense(two_to(61), "linear", {}, {}, false)})); })
            .starts_with("layer 1 ('dense', Dense): the weight 'kernel' of shape [8, 2305843009213693952] has more than "
                         "2^64 elements (8 x 2305843009213693952 overflows)."));
  CHECK(contains(error_of([&] { RuntimeModel::from_config(conv_same); }), "has more than 2^64 elements"));
  CHECK(contains(error_of([&] { RuntimeModel::from_config(flatten_2_64); }), "the input has more than 2^64 elements"));
  // A window of 2^64 positions on a 1x1 input ("same" pads it).
  CHECK(error_of([&] {
          RuntimeModel::from_config(sequential({nullptr, 1, 1, 1}, {layer("Conv2D", {{"filters", 1}, {"kernel_size", {two_to(32), two_to(32)}},
                                                                                   {"padding", "same"}})}));
        }).starts_with("layer 1 ('conv2d', Conv2D): the im2col columns of one sample has more than 2^64 elements"));
  // An extent 0 given to the constructor (from_config rejects it as a config error).
  CHECK(error_of([] { RuntimeModel({4, 0}, {layer_configs::flatten()}); }) ==
        "RuntimeModel 'sequential': the input shape (batch, 4, 0) has an extent 0.");
  // AnyTensor's own extents too.
  CHECK_THROWS_WITH_AS(AnyTensor({two_to(32), two_to(32)}, std::vector<float>{}),
                       "AnyTensor has more than 2^64 elements (4294967296 x 4294967296 overflows).", std::invalid_argument);
}

TEST_CASE("parameter and allocation caps: checked before allocating, at build and for each batch") {
  // Dense layers far over the defaults are rejected before any allocation (no bad_alloc, no OOM).
  for (const std::uint64_t units : {std::uint64_t{100'000'000}, std::uint64_t{1'000'000'000'000}, two_to(62)}) {
    const std::string message = error_of([&] { RuntimeModel::from_config(sequential({nullptr, 64}, {layer_configs::dense(units)})); });
    CAPTURE(units);
    CHECK(message.starts_with("layer 1 ('dense', Dense): "));
    CHECK(contains(message, "over the allocation cap of 34359738368 bytes"));
  }
  CHECK(error_of([] { RuntimeModel({64}, {layer_configs::dense(100'000'000)}); })
            .starts_with("layer 1 ('dense', Dense): the weight 'kernel' of shape [64, 100000000] takes 6400000000 elements x "
                         "8 bytes, over the allocation cap"));

  // The parameter cap counts the whole model.
  {
    caps_for_scope caps({.max_parameters = 1000, .max_allocation_bytes = size_limits{}.max_allocation_bytes});
    RuntimeModel fits({4}, {layer_configs::dense(100), layer_configs::dense(4)});  // 500 + 404
    CHECK(fits.parameter_count() == 904);
    CHECK(error_of([] { RuntimeModel({4}, {layer_configs::dense(100), layer_configs::dense(9)}); }) ==
          "layer 2 ('dense_1', Dense): its 909 parameters (after the model's 500) are over the cap of 1000 parameters "
          "(size_limits::max_parameters; raise it with mixprec::set_size_limits). (its input is (batch, 100))");
    // Raising the cap lets the same model through.
    set_size_limits({.max_parameters = 2000, .max_allocation_bytes = size_limits{}.max_allocation_bytes});
    CHECK(RuntimeModel({4}, {layer_configs::dense(100), layer_configs::dense(9)}).parameter_count() == 1409);
    // A compile-time layer is held to the cap too (its own parameters).
    set_size_limits({.max_parameters = 100, .max_allocation_bytes = size_limits{}.max_allocation_bytes});
    CHECK(error_of([] { Sequential<policies::float32, Input<4>, Dense<1000>> model; }) ==
          "layer 'dense' (Dense): its 5000 parameters are over the cap of 100 parameters (size_limits::max_parameters; "
          "raise it with mixprec::set_size_limits).");
  }

  // The activations and workspaces of a call are checked for its batch, before allocating; the
  // model is unchanged and works for a smaller batch.
  caps_for_scope caps({.max_parameters = size_limits{}.max_parameters, .max_allocation_bytes = 1 << 20});
  RuntimeModel model({4}, {layer_configs::dense(1000, "linear", "float64")});
  CHECK(model(ones({100, 4})).extents() == std::vector<std::size_t>{100, 1000});  // 800 KB of float64 outputs
  const std::string too_big = error_of([&] { model(ones({1000, 4})); });
  CHECK(too_big == "layer 'dense' (Dense), a batch of 1000: the output takes 1000000 elements x 8 bytes, over the allocation "
                   "cap of 1048576 bytes (size_limits::max_allocation_bytes; raise it with mixprec::set_size_limits).");
  CHECK(error_of([&] { model.training_call(ones({1000, 4})); }) == too_big);
  CHECK(model(ones({2, 4})).extents() == std::vector<std::size_t>{2, 1000});
  // Conv2D's im2col columns (kh kw channels per output pixel) and output are the largest
  // workspace, held a chunk of samples at a time (here one sample: 16*16*(81*8 + 1) floats),
  // whatever the batch.
  RuntimeModel conv({16, 16, 8}, {layer_configs::conv2d(1, 9, 9, "linear", "same")});
  CHECK(error_of([&] { conv(ones({1, 16, 16, 8})); }) == "no error");
  CHECK(error_of([&] { conv(ones({3, 16, 16, 8})); }) == "no error");
  // One sample's columns over the cap: refused when the model is built.
  CHECK(contains(error_of([&] { RuntimeModel({16, 16, 16}, {layer_configs::conv2d(1, 9, 9, "linear", "same")}); }),
                 "the workspace of one sample takes 332032 elements x 4 bytes, over the allocation cap"));
  // The compile-time Sequential's calls too.
  Sequential<policies::float32, Input<4>, Dense<1000>> compiled;
  CHECK(compiled(Tensor<float, dynamic, 4>(8)).batch() == 8);
  CHECK(contains(error_of([&] { compiled(Tensor<float, dynamic, 4>(1000)); }),
                 "layer 'dense' (Dense), a batch of 1000: the output takes 1000000 elements x 4 bytes"));
}

TEST_CASE("a batch over the caps in a later layer changes no earlier layer's state") {
  // BatchNormalization's moving statistics move on every training call that runs it; the Dense
  // after it cannot take the batch, so the model must refuse before running any layer.
  caps_for_scope caps({.max_parameters = size_limits{}.max_parameters, .max_allocation_bytes = 1 << 20});
  RuntimeModel model({4}, {layer_configs::batch_normalization(0.5), layer_configs::dense(1000, "linear", "float64")});
  const auto state = [&] {
    std::vector<std::byte> bytes;
    for (const weight_handle& w : model.weights()) bytes.insert(bytes.end(), w.bytes.begin(), w.bytes.end());
    return bytes;
  };
  const std::vector<std::byte> before = state();
  CHECK(contains(error_of([&] { model.training_call(ones({1000, 4})); }), "layer 'dense' (Dense), a batch of 1000"));
  CHECK(state() == before);
  model.training_call(ones({8, 4}));  // a batch that fits does move them
  CHECK(state() != before);

  Sequential<policies::float32, Input<4>, BatchNormalization<>, Dense<1000>> compiled;
  const auto compiled_state = [&] {
    std::vector<std::byte> bytes;
    for (const weight_handle& w : compiled.weights()) bytes.insert(bytes.end(), w.bytes.begin(), w.bytes.end());
    return bytes;
  };
  const std::vector<std::byte> compiled_before = compiled_state();
  CHECK(contains(error_of([&] { compiled.training_call(Tensor<float, dynamic, 4>(1000)); }), "a batch of 1000"));
  CHECK(compiled_state() == compiled_before);
}

TEST_CASE("a weight file larger than the allocation cap is refused before it is read") {
  RuntimeModel model({4}, {layer_configs::dense(64)});
  const std::string file = "untrusted_configs_cap_test.mpxw";
  model.save_weights(file);
  {
    caps_for_scope caps({.max_parameters = size_limits{}.max_parameters, .max_allocation_bytes = 256});
    CHECK(contains(error_of([&] { model.load_weights(file); }),
                   "untrusted_configs_cap_test.mpxw': the file takes "));
  }
  model.load_weights(file);  // under the default caps it loads
  std::filesystem::remove(file);
}

TEST_CASE("MaxPooling2D with a window far larger than its input: quick, each window clipped to the input") {
  // [2^40, 1] "same" on 5x5: strides default to the pool (one output row), or 1 (five rows);
  // each output is the maximum of its column (window rows outside the input are padding).
  std::vector<float> values(25);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((i * 7) % 25);
  const AnyTensor x({1, 5, 5, 1}, values);
  const auto started = std::chrono::steady_clock::now();
  for (const json& strides : {json(nullptr), json({1, 1})}) {
    RuntimeModel model = RuntimeModel::from_config(
        sequential({nullptr, 5, 5, 1}, {layer("MaxPooling2D", {{"pool_size", {two_to(40), 1}}, {"strides", strides}, {"padding", "same"}})}));
    const std::size_t rows = strides.is_null() ? 1 : 5;
    CHECK(model.output_shape() == std::vector<std::size_t>{rows, 5, 1});
    for (bool training : {false, true}) {
      const AnyTensor y = training ? model.training_call(x) : model(x);
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < 5; ++c) {
          float column_max = 0;
          for (std::size_t i = 0; i < 5; ++i) column_max = std::max(column_max, values[i * 5 + c]);
          CHECK(y.values<float>()[r * 5 + c] == column_max);
        }
    }
  }
  // [2^40, 2^40] "valid" does not fit: an error, not a loop.
  CHECK(contains(error_of([] {
                   RuntimeModel::from_config(sequential({nullptr, 5, 5, 1}, {layer("MaxPooling2D", {{"pool_size", {two_to(40), two_to(40)}}})}));
                 }),
                 "window does not fit the input (padding valid)"));
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
}

TEST_CASE("wrong JSON types in a model config: std::invalid_argument naming the key and the layer") {
  const json input = {{"class_name", "InputLayer"}, {"config", {{"batch_shape", {nullptr, 4}}}}};
  const json dense = layer_configs::dense(2);
  const auto model_with = [&](const json& body_changes) {
    json config = {{"class_name", "Sequential"}, {"config", {{"name", "m"}, {"layers", {input, dense}}}}};
    config["config"].update(body_changes);
    return config;
  };
  const auto layers = [&](const std::vector<json>& list) { return model_with({{"layers", list}}); };
  const auto input_with = [&](const json& changes) {
    json changed = input;
    changed["config"].update(changes);
    return layers({changed, dense});
  };
  const auto dense_with = [&](const json& changes) {
    json changed = dense;
    changed["config"].update(changes);
    return layers({input, changed});
  };
  const std::vector<std::pair<json, std::string>> cases{
      {json(3), "Invalid Sequential config: its config must be an object. Received: 3"},
      {{{"class_name", 1}}, "Invalid Sequential config: `class_name` must be one of \"Sequential\". Received: 1"},
      {{{"class_name", "Functional"}}, "Invalid Sequential config: `class_name` must be one of \"Sequential\". Received: \"Functional\""},
      {{{"class_name", "Sequential"}, {"config", 3}}, "Invalid Sequential config: `config` must be an object. Received: 3"},
      {model_with({{"layers", 3}}), "Invalid Sequential config: `layers` must be a non-empty array of layer configs. Received: 3"},
      {model_with({{"layers", json::array()}}), "Invalid Sequential config: `layers` must be a non-empty array of layer configs. Received: []"},
      {model_with({{"name", 5}}), "Invalid Sequential config: `name` must be a string. Received: 5"},
      {model_with({{"trainable", "yes"}}), "Invalid Sequential config: `trainable` must be true or false. Received: \"yes\""},
      {model_with({{"dtype", 7}}), "Invalid Sequential config: `dtype`: "},
      {model_with({{"build_input_shape", "x"}}), "Invalid Sequential config: `build_input_shape` must be [null, d1, ...] with positive integer extents. Received: \"x\""},
      {layers({{{"class_name", "InputLayer"}, {"config", 3}}, dense}), "Invalid Sequential config: the InputLayer: its config must be an object. Received: 3"},
      {input_with({{"batch_shape", "x"}}), "Invalid Sequential config: the InputLayer: `batch_shape` must be [null, d1, ...] with positive integer extents. Received: \"x\""},
      {input_with({{"batch_shape", {nullptr, 2.5}}}), "Received: [null,2.5]"},
      {input_with({{"batch_shape", {nullptr, -1}}}), "Received: [null,-1]"},
      {input_with({{"batch_shape", {nullptr, 0}}}), "Received: [null,0]"},
      {input_with({{"batch_shape", {nullptr}}}), "Received: [null]"},
      {input_with({{"batch_shape", {"x", 4}}}), "Received: [\"x\",4]"},
      {input_with({{"batch_shape", nullptr}}), "Invalid Sequential config: the InputLayer: it has no `batch_shape` (Keras 3) or `batch_input_shape` (tf.keras 2)."},
      {input_with({{"batch_input_shape", {nullptr, 1.5}}}), "the InputLayer: `batch_input_shape` must be [null, d1, ...]"},
      {input_with({{"name", 3}}), "Invalid Sequential config: the InputLayer: `name` must be a string. Received: 3"},
      {input_with({{"dtype", {1}}}), "Invalid Sequential config: the InputLayer: `dtype` must be a string. Received: [1]"},
      {input_with({{"dtype", "nonsense"}}), "Invalid Sequential config: the InputLayer: `dtype` \"nonsense\" is not an input dtype a model takes: float16, bfloat16, float32 or float64."},
      {input_with({{"dtype", "int32"}}), "Invalid Sequential config: the InputLayer: `dtype` \"int32\" is not an input dtype a model takes: float16, bfloat16, float32 or float64."},
      {input_with({{"sparse", true}}), "Invalid Sequential config: the InputLayer: `sparse` is not supported by mixprec; it must be false. Received: true"},
      {input_with({{"shape", 1}}), "Invalid Sequential config: the InputLayer: unknown setting `\"shape\"` (value 1)."},
      {layers({input, 1}), "layer 1 ('?', ?): a layer config is an object {\"class_name\": ..., \"config\": {...}}. Received: 1"},
      {layers({input, "Dense"}), "layer 1 ('?', ?): a layer config is an object"},
      {layers({input, {{"class_name", 1}}}), "layer 1 ('?', ?): `class_name` must be a string. Received: 1"},
      {layers({input, {{"config", json::object()}}}), "layer 1 ('?', ?): `class_name` must be a string. Received: nothing"},
      {layers({input, {{"class_name", "Dense"}, {"config", "x"}}}), "layer 1 ('?', Dense): `config` must be an object. Received: \"x\""},
      {dense_with({{"name", 3}}), "layer 1 ('?', Dense): `name` must be a string. Received: 3"},
      {dense_with({{"trainable", "yes"}}), "layer 1 ('dense', Dense): `trainable` must be true or false. Received: \"yes\""},
      {dense_with({{"dtype", 3}}), "layer 1 ('dense', Dense): bad dtype policy"},
      {dense_with({{"units", 2.0}}), "layer 1 ('dense', Dense): `units` must be a positive integer. Received: 2.0"},
      {dense_with({{"units", "2"}}), "layer 1 ('dense', Dense): `units` must be a positive integer. Received: \"2\""},
      {dense_with({{"use_bias", 1}}), "layer 1 ('dense', Dense): `use_bias` must be true or false. Received: 1"},
      {dense_with({{"activation", 3}}), "layer 1 ('dense', Dense): unknown activation 3"},
      {dense_with({{"kernel_initializer", 3}}), "layer 1 ('dense', Dense): `kernel_initializer`: Could not interpret initializer identifier: 3"},
      {dense_with({{"kernel_initializer", {{"class_name", "GlorotUniform"}, {"config", {{"seed", 1.5}}}}}}),
       "`kernel_initializer`: initializer GlorotUniform: `seed` must be a non-negative integer or null. Received: 1.5"},
      {dense_with({{"batch_input_shape", "x"}}), "layer 1 ('dense', Dense): `batch_input_shape` must be [null, d1, ...]"},
      {layers({input, dense, layer("Dense", {{"units", 2}, {"batch_shape", {nullptr, 0.5}}})}),
       "layer 2 ('dense_1', Dense): `batch_shape` must be [null, d1, ...] with positive integer extents. Received: [null,0.5]"},
      {layers({layer("Dense", {{"units", 2}, {"batch_input_shape", {nullptr, "4"}}})}),
       "Invalid Sequential config: the first layer: `batch_input_shape` must be [null, d1, ...]"},
      {layers({input, layer("Conv2D", {{"filters", 1}, {"kernel_size", {"3", 3}}})}), "layer 1 ('conv2d', Conv2D): `kernel_size` must be a positive integer or a pair of them. Received: [\"3\",3]"},
      {layers({input, layer("Conv2D", {{"filters", 1}, {"kernel_size", 3}, {"strides", {1.5, 1}}})}), "`strides` must be a positive integer or a pair of them. Received: [1.5,1]"},
      {layers({input, layer("Conv2D", {{"filters", 1}, {"kernel_size", 3}, {"padding", 3}})}), "`padding` must be one of \"valid\", \"same\". Received: 3"},
      {layers({input, layer("Conv2D", {{"filters", 1}, {"kernel_size", 3}, {"groups", 1.0}})}),
       "layer 1 ('conv2d', Conv2D): `groups` is not supported by mixprec; it must be 1. Received: 1.0"},
      {layers({input, layer("Conv2D", {{"filters", 1}, {"kernel_size", 3}, {"dilation_rate", {1.0, 1}}})}),
       "`dilation_rate` must be a positive integer or a pair of them. Received: [1.0,1]"},
      {layers({input, layer("Conv2D", {{"filters", 1}, {"kernel_size", 3}, {"dilation_rate", {2, 1}}})}),
       "`dilation_rate` is not supported by mixprec; it must be 1 or [1,1]. Received: [2,1]"},
      {layers({input, layer("Softmax", {{"axis", -1.0}})}), "layer 1 ('softmax', Softmax): `axis` must be an integer in [-2^63, 2^63). Received: -1.0"},
      {layers({input, layer("Softmax", {{"axis", 0}})}),
       "layer 1 ('softmax', Softmax): Softmax runs over the last axis only: axis=-1, or 1 for inputs of rank 2 (with the batch axis). Received: axis=0"},
      {layers({input, layer("Dropout", {{"rate", "x"}})}), "layer 1 ('dropout', Dropout): `rate` must be a number. Received: \"x\""},
      {layers({input, layer("Dropout", {{"rate", 0.5}, {"seed", -1}})}), "layer 1 ('dropout', Dropout): `seed` must be a non-negative integer or null. Received: -1"},
      {layers({input, layer("Dropout", {{"rate", 0.5}, {"seed", 1e19}})}), "`seed` must be a non-negative integer or null. Received: 1e+19"},
  };
  for (const auto& item : cases) {
    const json& config = item.first;
    const std::string& expected = item.second;
    CAPTURE(config.dump());
    const std::string message = error_of([&] { RuntimeModel::from_config(config); });
    CAPTURE(message);
    CHECK(contains(message, expected));
  }
}

TEST_CASE("any value of any wrong type anywhere in a real config: std::invalid_argument or a working model") {
  using cnn = Sequential<policies::mixed_bfloat16, Input<6, 6, 2>, Conv2D<3, 3, 3, activations::relu, padding::same>,
                         MaxPooling2D<2>, BatchNormalization<>, Flatten<>, Dropout<>, Dense<4>, Softmax<policies::float32>>;
  const json original(cnn().get_config());
  const std::vector<json> replacements{nullptr, true, -1, 0, 1.5, "x", json::array(), json::array({1}), json::object(),
                                       std::numeric_limits<std::uint64_t>::max(), std::numeric_limits<std::int64_t>::min()};
  // Every value in the tree (objects and arrays included), each replaced by each of the above.
  std::vector<json::json_pointer> paths;
  const std::function<void(const json&, const json::json_pointer&)> walk = [&](const json& node, const json::json_pointer& at) {
    paths.push_back(at);
    if (node.is_object())
      for (const auto& [key, value] : node.items()) walk(value, at / key);
    else if (node.is_array())
      for (std::size_t i = 0; i < node.size(); ++i) walk(node[i], at / i);
  };
  walk(original, json::json_pointer());
  CHECK(paths.size() > 100);
  // Small caps: a mutated extent may ask for much, but nothing near what the machine has.
  caps_for_scope caps({.max_parameters = 1'000'000, .max_allocation_bytes = 64 << 20});
  std::size_t built = 0, rejected = 0;
  for (const auto& path : paths)
    for (const json& replacement : replacements) {
      json mutated = original;
      mutated[path] = replacement;
      CAPTURE(path.to_string());
      CAPTURE(replacement.dump());
      try {
        RuntimeModel model = RuntimeModel::from_config(mutated);
        std::vector<std::size_t> extents{2};
        extents.insert(extents.end(), model.input_shape().begin(), model.input_shape().end());
        if (detail::checked_product(extents, "x") <= 4096) model(ones(extents));
        ++built;
      } catch (const std::invalid_argument&) {
        ++rejected;
      }
    }
  CHECK(built > 0);
  CHECK(rejected > 0);
}

TEST_CASE("integers in layer configs are read as integers: Dropout and initializer seeds up to 2^64 - 1") {
  for (const std::uint64_t seed : {std::numeric_limits<std::uint64_t>::max(), two_to(63) + 1, std::uint64_t{0}, std::uint64_t{7}}) {
    CAPTURE(seed);
    const json initializer = {{"class_name", "RandomNormal"}, {"config", {{"seed", seed}}}};
    const json config = sequential({nullptr, 4}, {layer("Dropout", {{"rate", 0.25}, {"seed", seed}}),
                                                 layer("Dense", {{"units", 3}, {"kernel_initializer", initializer}})});
    const RuntimeModel model = RuntimeModel::from_config(config);
    // Through get_config, as text and back: the same integers (0 included: a seed, as in Keras).
    const auto same_seed = [&](const json& written_seed) {
      return written_seed.is_number_unsigned() && written_seed.get<std::uint64_t>() == seed;
    };
    const json written = json::parse(nlohmann::json(model.get_config()).dump());
    CHECK(same_seed(written["config"]["layers"][1]["config"]["seed"]));
    const RuntimeModel again = RuntimeModel::from_config(written);
    const json rewritten(again.get_config());
    CHECK(same_seed(rewritten["config"]["layers"][1]["config"]["seed"]));
    CHECK(same_seed(rewritten["config"]["layers"][2]["config"]["kernel_initializer"]["config"]["seed"]));
  }
  // Integers out of range for a signed setting are rejected, not wrapped.
  const json too_big = {{"steps", two_to(63) + 1}};
  detail::config_reader read(too_big, "schedule");
  CHECK_THROWS_WITH_AS(read.integer("steps"),
                       "schedule: `steps` must be an integer in [-2^63, 2^63). Received: 9223372036854775809",
                       std::invalid_argument);
  const json in_range = {{"steps", -static_cast<std::int64_t>(two_to(62))}};
  CHECK(detail::config_reader(in_range, "schedule").integer("steps") == -static_cast<std::int64_t>(two_to(62)));
}

TEST_CASE("layer names stay unique, so weight files round trip") {
  // Sequential: a name already taken gets the first free _N (x_1 is taken: x becomes x_2).
  using model_type = Sequential<policies::float32, Input<4>, Dense<3>, Dense<3>, Dense<2>>;
  const auto make = [] { return model_type(Dense<3>("x_1"), Dense<3>("x"), Dense<2>("x")); };
  model_type source = make();
  CHECK(source.layer<0>().name() == "x_1");
  CHECK(source.layer<1>().name() == "x");
  CHECK(source.layer<2>().name() == "x_2");
  const auto file = (std::filesystem::temp_directory_path() / "mixprec_test_unique_names.weights").string();
  source.save_weights(file);
  model_type target = make();
  target.load_weights(file);
  CHECK(target.layer<2>().kernel.value() == source.layer<2>().kernel.value());
  CHECK(target.layer<0>().kernel.value() == source.layer<0>().kernel.value());
  // The runtime model built from its config reads the same file.
  RuntimeModel runtime = RuntimeModel::from_config(source.get_config());
  runtime.load_weights(file);
  const Tensor<float, dynamic, 4> x({0.5f, -1.0f, 2.0f, 0.25f});
  const auto expected = source(x);
  const AnyTensor y = runtime(x);
  CHECK(std::vector<float>(y.values<float>().begin(), y.values<float>().end()) ==
        std::vector<float>(expected.values().begin(), expected.values().end()));
  std::filesystem::remove(file);
  // Default names in a repeated class: dense, dense_1, ...; a generated name skips the names taken.
  CHECK(model_type().layer<1>().name() == "dense_1");
  CHECK(model_type().layer<2>().name() == "dense_2");
  RuntimeModel named({4}, {layer_configs::dense(3, "linear", nullptr, "dense_1"), layer_configs::dense(3), layer_configs::dense(2)});
  CHECK(named.layer(0).name() == "dense_1");
  CHECK(named.layer(1).name() == "dense");
  CHECK(named.layer(2).name() == "dense_2");
  // Two layers given the same name is the config's mistake: an error (as in Keras).
  CHECK(contains(error_of([] { RuntimeModel({4}, {layer_configs::dense(3, "linear", nullptr, "x"), layer_configs::dense(3, "linear", nullptr, "x")}); }),
                 "layer 2 ('x', Dense): the name 'x' is already used; layer names must be unique."));
}

TEST_CASE("BatchNormalization's axis: -1, the last axis's index, or tf.keras 2's list of one") {
  const auto with_axis = [](json axis) {
    return sequential({nullptr, 5, 3}, {layer("BatchNormalization", {{"axis", std::move(axis)}})});
  };
  Tensor<float, dynamic, 5, 3> x(2);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * static_cast<float>(i % 7);
  RuntimeModel last = RuntimeModel::from_config(with_axis(-1));
  for (const json& axis : {json(2), json::array({2})}) {  // rank 3 with the batch axis: the last is 2
    CAPTURE(axis.dump());
    RuntimeModel model = RuntimeModel::from_config(with_axis(axis));
    CHECK(json(model.get_config())["config"]["layers"][1]["config"]["axis"] == 2);
    CHECK(model.training_call(AnyTensor(x)).values<float>()[7] == last.training_call(AnyTensor(x)).values<float>()[7]);
  }
  CHECK(error_of([&] { RuntimeModel::from_config(with_axis(1)); }) ==
        "layer 1 ('batch_normalization', BatchNormalization): BatchNormalization normalizes the last axis only: "
        "axis=-1, or 2 for inputs of rank 3 (with the batch axis). Received: axis=1 (its input is (batch, 5, 3))");
  CHECK(error_of([&] { RuntimeModel::from_config(with_axis(json::array({1, 2}))); }).find(
            "`axis` must be one axis, the last (mixprec normalizes no other). Received: axis=[1,2]") != std::string::npos);
  CHECK(error_of([&] { RuntimeModel::from_config(with_axis("2")); }).find("`axis` must be an integer") != std::string::npos);
}
