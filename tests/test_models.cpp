// Compile-time Sequential, the runtime model built from configs, and weight files.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>
#include <mixprec/runtime.hpp>

#include "model_weights.hpp"

using namespace mixprec;

namespace {

template <class T, std::size_t... E>
Tensor<T, E...> ramp(std::size_t batch) {
  Tensor<T, E...> t(batch);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = cast<T>(0.01 * static_cast<double>(i % 97) - 0.4);
  return t;
}

/// A temporary file removed at the end of the scope.
struct temp_file {
  std::string path;
  explicit temp_file(const char* name) : path((std::filesystem::temp_directory_path() / name).string()) {}
  ~temp_file() { std::remove(path.c_str()); }
};

using seed_model = Sequential<policies::mixed_float16, Input<100>, Dense<10>, Dense<10>,
                              Activation<activations::softmax, policies::float32>>;
using cnn = Sequential<policies::mixed_bfloat16, Input<12, 12, 3>, Conv2D<8, 3, 3, activations::relu, padding::same>,
                       MaxPooling2D<2>, BatchNormalization<>, Conv2D<4, 3, 3, activations::relu>, Flatten<>,
                       Dropout<>, Dense<10>, Softmax<policies::float32>>;

template <std::size_t N>
std::vector<std::uint16_t> bits(const Tensor<float, dynamic, N>& y) {
  std::vector<std::uint16_t> b;
  for (float v : y.values()) b.push_back(static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(v) >> 16));
  return b;
}

}  // namespace

TEST_CASE("AnyTensor from a std::vector or a Tensor; sizes must match the extents") {
  const AnyTensor from_vector({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(from_vector.dtype() == "float32");
  CHECK(from_vector.batch() == 2);
  CHECK(from_vector.values<float>()[5] == 6.0f);
  CHECK(from_vector.values_as<bfloat16>()[5] == bfloat16(6.0f));
  CHECK_THROWS_WITH_AS(AnyTensor({2, 3}, std::vector<float>{1, 2}), "AnyTensor: 2 values for a shape of 6 elements.",
                       std::invalid_argument);
  const AnyTensor from_tensor(Tensor<float16, dynamic, 2>({float16(1.0f), float16(2.0f)}));
  CHECK(from_tensor.dtype() == "float16");
  CHECK(from_tensor.extents() == std::vector<std::size_t>{1, 2});
  // Class ids come back as themselves; they and floats do not convert into each other.
  const Tensor<std::int32_t, dynamic> ids(std::vector<std::int32_t>{4, 7});
  CHECK(AnyTensor(ids).to_tensor<std::int32_t, dynamic>() == ids);
  CHECK_THROWS_WITH_AS(AnyTensor(ids).values_as<float>(), "AnyTensor holds int32 class ids, not floating values.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(from_vector.values_as<std::int64_t>(), "AnyTensor holds float32 values, not int64 class ids.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(AnyTensor(ids).values_as<std::int64_t>(), "AnyTensor holds int32 class ids, not int64 ones.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS((from_vector.to_tensor<float, dynamic, 4>()),
                       "AnyTensor::to_tensor: the AnyTensor's shape (2, 3) is not the tensor's (batch, 4).",
                       std::invalid_argument);
}

TEST_CASE("Tensor: a batch whose size wraps std::size_t is an error, not a small buffer") {
  using T = Tensor<float, dynamic, 784>;
  const std::size_t huge = std::numeric_limits<std::size_t>::max() / 784 * 2 + 3;
  CHECK_THROWS_WITH_AS(T(std::size_t{huge}),
                       ("Tensor has more than 2^64 elements (" + std::to_string(huge) + " x 784 overflows).").c_str(),
                       std::invalid_argument);
  CHECK_THROWS_AS(T(std::size_t{1} << 62, uninitialized), std::invalid_argument);
  static_assert(shape<dynamic, std::size_t{1} << 31, std::size_t{1} << 31>::static_size == std::size_t{1} << 62);
}

TEST_CASE("seed 000: the model policy applies to layers without their own; the float32 softmax keeps its own") {
  seed_model model;
  static_assert(std::is_same_v<seed_model::output_type, Tensor<float, dynamic, 10>>);
  using layers = seed_model::layer_types;
  static_assert(std::is_same_v<std::tuple_element_t<0, layers>::policy, policies::mixed_float16>);
  static_assert(std::is_same_v<std::tuple_element_t<1, layers>::compute_dtype, float16>);
  static_assert(std::is_same_v<std::tuple_element_t<2, layers>::policy, policies::float32>);
  const auto y = model(ramp<float, dynamic, 100>(8));
  static_assert(std::is_same_v<decltype(y), const Tensor<float, dynamic, 10>>);
  CHECK(y.batch() == 8);
  for (std::size_t r = 0; r < 8; ++r) {
    double total = 0;
    for (float p : y.row(r)) total += p;
    CHECK(total == doctest::Approx(1.0).epsilon(1e-5));
  }
  CHECK(model.layer<0>().name() == "dense");
  CHECK(model.layer<1>().name() == "dense_1");
  CHECK(model.layer<0>().dtype_policy() == DTypePolicy("mixed_float16"));
  static_assert(std::is_same_v<decltype(model.layer<0>().kernel.value()), const Tensor<float, dynamic, 10>&>);
  CHECK(model.parameter_count() == 100 * 10 + 10 + 10 * 10 + 10);
  // Saved as Keras saves Activation("softmax"); a Softmax layer as Keras' Softmax.
  const auto layers_config = model.get_config()["config"]["layers"];
  CHECK(layers_config[3]["class_name"] == "Activation");
  CHECK(layers_config[3]["config"]["name"] == "activation");
  CHECK(layers_config[3]["config"]["activation"] == "softmax");
  const auto cnn_layers = cnn().get_config()["config"]["layers"];
  CHECK(cnn_layers.back()["class_name"] == "Softmax");
  CHECK(cnn_layers.back()["config"]["name"] == "softmax");
  CHECK(cnn_layers.back()["config"]["axis"] == -1);
}

TEST_CASE("a float64 model (seed 000) and the infer policy") {
  Sequential<policies::float64, Input<100>, Dense<10>, Dense<10>, Activation<activations::softmax>> wide;
  static_assert(std::is_same_v<decltype(wide)::output_type, Tensor<double, dynamic, 10>>);
  CHECK(wide(ramp<float, dynamic, 100>(2)).batch() == 2);

  // The deprecated infer policy: every layer computes in its input's dtype.
  Sequential<InferPolicy, InputOf<bfloat16, 6>, Dense<4>, Dense<3, policies::float32>, Dense<2>> inferred;
  using layers = decltype(inferred)::layer_types;
  static_assert(std::is_same_v<std::tuple_element_t<0, layers>::policy, policies::bfloat16>);
  static_assert(std::is_same_v<std::tuple_element_t<2, layers>::policy, policies::float32>);  // follows float32 input
  static_assert(std::is_same_v<decltype(inferred)::output_type, Tensor<float, dynamic, 2>>);
  CHECK(inferred(ramp<bfloat16, dynamic, 6>(3)).batch() == 3);
}

TEST_CASE("a jmp-style model policy casts the model's output to its output dtype") {
  Sequential<Policy<bfloat16, float, float>, Input<8>, Dense<4>> model;
  static_assert(std::is_same_v<std::tuple_element_t<0, decltype(model)::layer_types>::compute_dtype, bfloat16>);
  static_assert(std::is_same_v<decltype(model)::output_type, Tensor<float, dynamic, 4>>);
  const auto y = model(ramp<float, dynamic, 8>(2));
  for (float v : y.values()) CHECK(bfloat16(v).to_bits() == std::bit_cast<std::uint32_t>(v) >> 16);  // bfloat16 values

  // The runtime model built from its config casts the same way (the config carries the model's
  // policy), and so does one built under that global policy; the training pass too.
  RuntimeModel runtime = RuntimeModel::from_config(model.get_config());
  CHECK(runtime.get_config()["config"]["dtype"] == model.get_config()["config"]["dtype"]);
  CHECK(runtime.output_dtype() == "float32");
  const AnyTensor got = runtime(ramp<float, dynamic, 8>(2));  // the same initial weights, from the same paths
  CHECK(got.dtype() == "float32");
  CHECK(bits(got.to_tensor<float, dynamic, 4>()) == bits(y));
  CHECK(std::holds_alternative<std::span<const float>>(runtime.forward_for_training(AnyTensor(ramp<float, dynamic, 8>(2)))));
  runtime.release_step_buffers();
  {
    policy_scope scope("p=f32,c=bf16,o=f32");
    RuntimeModel global({8}, {layer_configs::dense(4)});
    CHECK(global.output_dtype() == "float32");
    CHECK(global(ramp<float, dynamic, 8>(2)).dtype() == "float32");
  }
  RuntimeModel plain({8}, {layer_configs::dense(4, "linear", "mixed_bfloat16")});  // float32 model policy: no cast
  CHECK(plain.output_dtype() == "bfloat16");
  CHECK(plain(ramp<float, dynamic, 8>(2)).dtype() == "bfloat16");
}

TEST_CASE("weights exist from construction; configured layers keep their settings") {
  Sequential<policies::float32, Input<4>, Dense<3>, Dropout<>> model(Dense<3>("logits"), Dropout<>(0.3));
  CHECK(model.layer<0>().name() == "logits");
  CHECK(model.layer<1>().rate() == 0.3);
  CHECK(model.layer<0>().kernel.shape() == std::vector<std::size_t>{4, 3});
  std::ostringstream summary;
  summary << model;
  CHECK(summary.str().find("logits  float32  15 parameters") != std::string::npos);
}

TEST_CASE("training mode reaches BatchNormalization and Dropout") {
  cnn model;
  const auto x = ramp<float, dynamic, 12, 12, 3>(4);
  const auto before = model.layer<2>().moving_mean.value();
  model.training_call(x);
  CHECK_FALSE(model.layer<2>().moving_mean.value() == before);
  const auto a = model(x), b = model(x);
  CHECK(a == b);  // inference is deterministic
}

TEST_CASE("the runtime model equals the compile-time model bit for bit (same weights, same policies)") {
  cnn compile_time;
  RuntimeModel runtime = RuntimeModel::from_config(compile_time.get_config());
  temp_file file("mixprec_test_equal.weights");
  compile_time.save_weights(file.path);
  runtime.load_weights(file.path);
  const auto x = ramp<float, dynamic, 12, 12, 3>(5);
  const auto expected = compile_time(x);
  const AnyTensor got = runtime(x);
  CHECK(got.dtype() == "float32");
  CHECK(got.extents() == std::vector<std::size_t>{5, 10});
  const auto values = got.values<float>();
  for (std::size_t i = 0; i < expected.size(); ++i) REQUIRE(std::bit_cast<std::uint32_t>(values[i]) == std::bit_cast<std::uint32_t>(expected[i]));
  // Without the file too: both draw the same initial weights from the same weight paths.
  seed_model fresh;
  RuntimeModel fresh_runtime({100}, {layer_configs::dense(10, "linear", "mixed_float16"),
                                     layer_configs::dense(10, "linear", "mixed_float16"),
                                     layer_configs::activation("softmax", "float32")});
  const auto input = ramp<float, dynamic, 100>(3);
  CHECK(bits(fresh(input)) == bits(fresh_runtime(input).to_tensor<float, dynamic, 10>()));
}

TEST_CASE("runtime layers take policies from strings, DTypePolicy values, serialized dicts, a map, or the global") {
  DTypePolicyMap map(DTypePolicy("float64"));
  map.set("net/dense_1", "mixed_bfloat16");
  map.set("net/head_.*", DTypePolicy("float16"));
  RuntimeModel model({6},
                     {layer_configs::dense(5, "relu", DTypePolicy("mixed_float16")), layer_configs::dense(4),
                      layer_configs::dense(3, "tanh", dtype_policies::serialize(DTypePolicy("bfloat16")), "head_a"),
                      layer_configs::dense(2, "linear", nullptr, "head_b"), layer_configs::dense(2)},
                     "net", map);
  CHECK(model.layer(0).dtype_policy().name() == "mixed_float16");
  CHECK(model.layer(1).dtype_policy().name() == "mixed_bfloat16");  // by exact path
  CHECK(model.layer(2).dtype_policy().name() == "bfloat16");        // its own dtype wins over the map
  CHECK(model.layer(3).dtype_policy().name() == "float16");         // by regex
  CHECK(model.layer(4).dtype_policy().name() == "float64");         // the map's default
  CHECK(model(ramp<float, dynamic, 6>(2)).dtype() == "float64");
  {
    policy_scope scope("mixed_bfloat16");
    RuntimeModel global({6}, {layer_configs::dense(2)});
    CHECK(global.layer(0).dtype_policy().name() == "mixed_bfloat16");
    CHECK(global(ramp<float, dynamic, 6>(1)).dtype() == "bfloat16");
  }
}

TEST_CASE("Keras JSON configs: Keras 3 and tf.keras 2.x, and the round trip") {
  const auto keras3 = nlohmann::json::parse(R"({
    "module": "keras", "class_name": "Sequential", "config": {"name": "mlp", "trainable": true, "layers": [
      {"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_shape": [null, 784], "dtype": "float32", "sparse": false, "name": "input_layer"}, "registered_name": null},
      {"module": "keras.layers", "class_name": "Dense", "config": {"name": "hidden", "trainable": true,
        "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "mixed_bfloat16"}, "registered_name": null},
        "units": 32, "activation": "relu", "use_bias": true, "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform", "config": {"seed": null}, "registered_name": null},
        "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name": null},
        "kernel_regularizer": null, "bias_regularizer": null, "kernel_constraint": null, "bias_constraint": null}, "registered_name": null, "build_config": {"input_shape": [null, 784]}},
      {"module": "keras.layers", "class_name": "Dense", "config": {"name": "logits", "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}, "units": 10, "activation": "softmax"}}
    ]}, "registered_name": null})");
  auto model = RuntimeModel::from_config(keras3);
  CHECK(model.name() == "mlp");
  CHECK(model.input_shape() == std::vector<std::size_t>{784});
  CHECK(model.output_shape() == std::vector<std::size_t>{10});
  CHECK(model.layer("hidden").dtype_policy() == DTypePolicy("mixed_bfloat16"));

  const auto tf2 = nlohmann::json::parse(R"({"class_name": "Sequential", "config": {"name": "old", "layers": [
      {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 28, 28, 1], "dtype": "float32", "sparse": false, "ragged": false, "name": "input_1"}},
      {"class_name": "Conv2D", "config": {"name": "conv2d", "dtype": {"class_name": "Policy", "config": {"name": "mixed_float16"}}, "filters": 4, "kernel_size": [3, 3], "strides": [1, 1], "padding": "valid", "data_format": "channels_last", "dilation_rate": [1, 1], "groups": 1, "activation": "relu", "use_bias": true}},
      {"class_name": "MaxPooling2D", "config": {"name": "pool", "dtype": "float32", "pool_size": [2, 2], "padding": "valid", "strides": [2, 2], "data_format": "channels_last"}},
      {"class_name": "Flatten", "config": {"name": "flatten", "dtype": {"class_name": "PolicyV1", "config": {"name": "mixed_float16", "loss_scale": "dynamic"}}, "data_format": "channels_last"}},
      {"class_name": "Dense", "config": {"name": "out", "dtype": "float32", "units": 10, "activation": "linear"}}]}})");
  auto old = RuntimeModel::from_config(tf2);
  CHECK(old.output_shape() == std::vector<std::size_t>{10});
  CHECK(old.layer("conv2d").dtype_policy() == DTypePolicy("mixed_float16"));
  CHECK(old.layer("flatten").dtype_policy() == DTypePolicy("mixed_float16"));
  CHECK(old(ramp<float, dynamic, 28, 28, 1>(2)).extents() == std::vector<std::size_t>{2, 10});

  // Round trip: the rebuilt model has the same config and computes the same.
  auto again = RuntimeModel::from_config(old.get_config());
  CHECK(again.get_config() == old.get_config());
  const auto x = ramp<float, dynamic, 28, 28, 1>(2);
  CHECK(again(x).values<float>()[3] == old(x).values<float>()[3]);
}

TEST_CASE("bad runtime configs are clear errors naming the layer") {
  using layer_configs::dense;
  const auto error = [](auto&& build) -> std::string {
    try {
      build();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no error";
  };
  CHECK(error([] { RuntimeModel({4}, {dense(3), dense(0)}); }) ==
        "layer 2 ('dense_1', Dense): `units` must be a positive integer. Received: 0");
  CHECK(error([] { RuntimeModel({4}, {dense(3), nlohmann::json{{"class_name", "Dense"}, {"config", {{"units", -2}}}}}); }) ==
        "layer 2 ('dense_1', Dense): `units` must be a positive integer. Received: -2");
  CHECK(error([] { RuntimeModel({4}, {layer_configs::layer("LSTM", nlohmann::json::object(), {}, "rnn")}); })
            .starts_with("layer 1 ('rnn', LSTM): unknown layer class."));
  CHECK(error([] { RuntimeModel({4}, {dense(3, "linear", "mixed_float15")}); })
            .starts_with("layer 1 ('dense', Dense): bad dtype policy: Cannot convert 'mixed_float15'"));
  CHECK(error([] { RuntimeModel({6, 6, 1}, {layer_configs::conv2d(2, 3, 3, "linear", "valid", 1, 1, "float8_from_float32")}); })
            .starts_with("layer 1 ('conv2d', Conv2D): the dtype policy 'float8_from_float32' is quantized (float8), which "
                         "Conv2D layers do not support"));
  CHECK(error([] { RuntimeModel({4}, {dense(3, "linear", "int32")}); }).find("'int32' is not supported") != std::string::npos);
  CHECK(error([] { RuntimeModel({4}, {dense(3, "swish")}); }).starts_with("layer 1 ('dense', Dense): unknown activation \"swish\""));
  CHECK(error([] { RuntimeModel({4}, {layer_configs::conv2d(2, 3, 3)}); })
            .starts_with("layer 1 ('conv2d', Conv2D): Conv2D needs inputs of shape (batch, height, width, channels)"));
  CHECK(error([] { RuntimeModel({2, 2, 1}, {layer_configs::conv2d(2, 3, 3)}); }).find("does not fit") != std::string::npos);
  CHECK(error([] { RuntimeModel({4}, {dense(3, "linear", nullptr, "same"), dense(3, "linear", nullptr, "same")}); })
            .find("the name 'same' is already used") != std::string::npos);
  CHECK(error([] { RuntimeModel::from_config(nlohmann::json{{"class_name", "Functional"}}); }).starts_with("Invalid Sequential config"));
  CHECK(error([] { RuntimeModel::from_config(nlohmann::json{{"class_name", "Sequential"}, {"config", {{"layers", {dense(3)}}}}}); })
            .find("no input shape") != std::string::npos);
  // A null name or dtype is Keras' none: the defaults.
  CHECK(RuntimeModel::from_config(nlohmann::json::parse(R"({"class_name": "Sequential", "config": {"name": null,
        "dtype": null, "layers": [{"class_name": "InputLayer", "config": {"batch_shape": [null, 4]}},
        {"class_name": "Dense", "config": {"units": 2}}]}})")).name() == "sequential");
  // A key of the model's config that nobody reads (a misspelt one) is an error.
  CHECK(error([] {
    RuntimeModel::from_config(nlohmann::json::parse(R"({"class_name": "Sequential", "config": {"name": "m",
        "build_input_shap": [null, 9], "layers": [{"class_name": "InputLayer", "config": {"batch_shape": [null, 4]}},
        {"class_name": "Dense", "config": {"units": 2}}]}})"));
  }).find("unknown setting `\"build_input_shap\"`") != std::string::npos);
  RuntimeModel model({4}, {dense(3)});
  CHECK(error([&] { model(Tensor<float, dynamic, 5>(2)); }) == "RuntimeModel 'sequential' expects inputs of shape (batch, 4); got (batch, 5).");
}

TEST_CASE("weights round trip bit-exact in the variable dtype; bad files change nothing") {
  using model_type = Sequential<policies::mixed_bfloat16, Input<5>, Dense<4>, BatchNormalization<>, Dense<2>>;
  model_type source;
  source.training_call(ramp<float, dynamic, 5>(7));  // moves the BatchNormalization statistics
  temp_file file("mixprec_test_roundtrip.weights");
  source.save_weights(file.path);

  model_type target(Dense<4>("dense"), BatchNormalization<>(), Dense<2>("other_name_same_shape"));
  CHECK_THROWS_WITH_AS(target.load_weights(file.path), doctest::Contains("lacks [\"other_name_same_shape/kernel\",\"other_name_same_shape/bias\"]"),
                       std::invalid_argument);
  model_type copy;
  const auto untouched = test::weight_bytes(copy);
  // Truncated, corrupted, not a weights file, wrong shapes: all rejected, nothing changed.
  std::ifstream in(file.path, std::ios::binary);
  const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto write = [](const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; };
  temp_file bad("mixprec_test_bad.weights");
  const auto rejected = [&](const std::string& message) {
    CHECK_THROWS_WITH_AS(copy.load_weights(bad.path), doctest::Contains(message.c_str()), std::invalid_argument);
    CHECK(test::weight_bytes(copy) == untouched);
  };
  write(bad.path, content.substr(0, content.size() - 3));
  rejected("truncated");
  std::string flipped = content;
  flipped[flipped.size() - 5] = static_cast<char>(flipped[flipped.size() - 5] ^ 0x10);
  write(bad.path, flipped);
  rejected("corrupted (checksum mismatch)");
  write(bad.path, "definitely not weights");
  rejected("not a mixprec weights file");
  write(bad.path, content.substr(0, 20));
  rejected("runs past the end");
  CHECK_THROWS_WITH_AS(copy.load_weights("/nonexistent/dir/x.weights"), doctest::Contains("cannot be opened"), std::invalid_argument);
  {
    // A directory opens on Linux; reading it is an error like any file that cannot be read.
    const std::string directory = (std::filesystem::temp_directory_path() / "mixprec_weights_directory").string();
    std::filesystem::create_directories(directory);
    CHECK_THROWS_WITH_AS(copy.load_weights(directory),
                         ("Cannot load weights from '" + directory + "': it is a directory.").c_str(), std::invalid_argument);
    CHECK_THROWS_WITH_AS(copy.save_weights(directory),
                         ("Cannot save weights to '" + directory + "': renaming '" + directory +
                          ".partial' to it: Is a directory.").c_str(),
                         std::invalid_argument);
    CHECK(!std::filesystem::exists(directory + ".partial"));
    std::filesystem::remove(directory);
    // A file without a size (a device, a pipe) is counted against the allocation cap as it is read.
    const size_limits saved = get_size_limits();
    set_size_limits({.max_parameters = saved.max_parameters, .max_allocation_bytes = 1 << 20});
    const auto before = test::weight_bytes(copy);
    CHECK_THROWS_WITH_AS(copy.load_weights("/dev/zero"),
                         doctest::Contains("Cannot load weights from '/dev/zero': the file takes 1114112 elements x 1 "
                                           "bytes, over the allocation cap of 1048576 bytes"),
                         std::invalid_argument);
    set_size_limits(saved);
    CHECK(test::weight_bytes(copy) == before);
  }
  // The header rewritten: every member is read as the JSON type it must have, every integer as
  // an integer (a fraction, a negative or a huge value is rejected, not truncated or wrapped),
  // and the message names the file and the key.
  std::uint64_t header_length = 0;
  std::memcpy(&header_length, content.data() + 8, sizeof header_length);
  const auto with_header_text = [&](const std::string& text) {
    const std::uint64_t new_length = text.size();
    std::string bytes = content.substr(0, 8);
    bytes.append(reinterpret_cast<const char*>(&new_length), sizeof new_length);
    return bytes + text + content.substr(16 + header_length);
  };
  const auto with_header = [&](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json header = nlohmann::json::parse(content.substr(16, header_length));
    change(header);
    return with_header_text(header.dump());
  };
  using nlohmann::json;
  for (const auto& entry : std::vector<std::pair<std::function<void(json&)>, std::string>>{
           {[](json& h) { h["weights"][0]["offset"] = 0.5; }, "weight 'dense/kernel': \"offset\" must be a non-negative integer; it is 0.5."},
           {[](json& h) { h["weights"][0]["shape"] = {4.9, 4}; }, "weight 'dense/kernel': an extent in \"shape\" must be a non-negative integer; it is 4.9."},
           {[](json& h) { h["weights"][0]["bytes"] = -80; }, "weight 'dense/kernel': \"bytes\" must be a non-negative integer; it is -80."},
           {[](json& h) { h["weights"][0]["bytes"] = "80"; }, "weight 'dense/kernel': \"bytes\" must be a non-negative integer; it is \"80\"."},
           {[](json& h) { h["data_bytes"] = 1e300; }, "the header: \"data_bytes\" must be a non-negative integer; it is 1e+300."},
           {[](json& h) { h["data_bytes"] = nullptr; }, "the header: \"data_bytes\" must be a non-negative integer; it is null."},
           {[](json& h) { h["weights"][0]["shape"] = {std::uint64_t{1} << 62, 4}; }, "inconsistent sizes"},
           {[](json& h) { h["version"] = 1.0; }, "the header: \"version\" must be a non-negative integer; it is 1.0."},
           {[](json& h) { h["version"] = 2; }, "unknown version 2"},
           {[](json& h) { h["format"] = 5; }, "unknown format 5"},
           {[](json& h) { h.erase("format"); }, "the header has no \"format\"."},
           {[](json& h) { h["weights"] = json::object(); }, "the header: \"weights\" must be a JSON array; it is {}."},
           {[](json& h) { h["weights"][1] = "dense/bias"; }, "weights[1] must be a JSON object; it is \"dense/bias\"."},
           {[](json& h) { h["weights"][0]["path"] = 7; }, "weights[0]: \"path\" must be a JSON string; it is 7."},
           {[](json& h) { h["weights"][0].erase("path"); }, "weights[0] has no \"path\"."},
           {[](json& h) { h["weights"][0]["dtype"] = json::array(); }, "weight 'dense/kernel': \"dtype\" must be a JSON string; it is []."},
           {[](json& h) { h["weights"][0]["dtype"] = "float\x01"; }, "weight 'dense/kernel' has an unknown dtype 'float\\x01'."},
           {[](json& h) { h["weights"][0]["shape"] = 20; }, "weight 'dense/kernel': \"shape\" must be a JSON array; it is 20."},
           {[](json& h) { h["weights"][0]["fnv1a64"] = 1; }, "weight 'dense/kernel': \"fnv1a64\" must be a JSON string; it is 1."},
           {[](json& h) { h["weights"][0].erase("offset"); }, "weight 'dense/kernel' has no \"offset\"."},
           {[](json& h) { h["weights"][1]["path"] = "dense/kernel"; }, "weight 'dense/kernel' appears twice."},
           {[](json& h) { h["weights"][0]["path"] = "d\n/kernel"; }, "it lacks [\"dense/kernel\"] (a different model?)."},
           {[](json& h) { h["weights"][0]["fnv1a64"] = "\x7f"; }, "the values of weight 'dense/kernel' are corrupted"},
           {[](json& h) { h["training"] = 3; }, "its training state is corrupted (\"training\" is not a JSON object)."},
           {[](json& h) { h["training"] = json::object(); }, "its training state is corrupted (no \"training_fnv1a64\" checksum)."},
           {[](json& h) { h = json::array(); }, "its header is not a JSON object."}}) {
    const auto& change = std::get<0>(entry);  // not a binding: lambdas (doctest's INFO) capture it
    const auto& message = std::get<1>(entry);
    CAPTURE(message);
    write(bad.path, with_header(change));
    rejected(message);
  }
  // Bytes that are not UTF-8 in the header text itself, and a header nested too deep.
  std::string raw = content.substr(16, header_length);
  raw.replace(raw.find("dense/kernel"), 5, "d\xff\xfe\x01e");
  write(bad.path, with_header_text(raw));
  rejected("its JSON header does not parse: ");
  write(bad.path, with_header_text("{\"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}"));
  rejected("its header nests JSON arrays and objects deeper than 128 levels");
  Sequential<policies::float32, Input<6>, Dense<4>, BatchNormalization<>, Dense<2>> wider;
  CHECK_THROWS_WITH_AS(wider.load_weights(file.path), doctest::Contains("has shape [5,4] in the file but [6,4] in the model"),
                       std::invalid_argument);
  CHECK(test::weight_bytes(copy) == untouched);

  copy.load_weights(file.path);
  source.for_each_weight([&](const std::string& path, const auto& w) {
    bool found = false;
    copy.for_each_weight([&](const std::string& other_path, const auto& v) {
      if (other_path != path) return;
      found = true;
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(w)>, std::remove_cvref_t<decltype(v)>>) CHECK(w.value() == v.value());
    });
    CHECK(found);
  });
  const auto x = ramp<float, dynamic, 5>(3);
  CHECK(source(x) == copy(x));

  // A file saved from a float64 model loads into a float32 one, rounded once.
  Sequential<policies::float64, Input<5>, Dense<4>, BatchNormalization<>, Dense<2>> wide;
  temp_file wide_file("mixprec_test_wide.weights");
  wide.save_weights(wide_file.path);
  copy.load_weights(wide_file.path);
  CHECK(copy.layer<0>().kernel.value()[3] == static_cast<float>(wide.layer<0>().kernel.value()[3]));
}

TEST_CASE("Keras' readings of layer configs: a seed of 0, Dropout at rate 1, dilation 1, padding in any case, finite numbers") {
  const auto layer = [](const char* class_name, nlohmann::json config) {
    return nlohmann::json{{"class_name", class_name}, {"config", config}};
  };
  // seed 0 is a seed (Keras' seed=0), not "none": kept in the config, and two layers given it draw alike.
  const nlohmann::json glorot0 = {{"class_name", "GlorotUniform"}, {"config", {{"seed", 0}}}};
  RuntimeModel seeded({4}, {layer("Dropout", {{"name", "a"}, {"rate", 0.5}, {"seed", 0}}),
                            layer("Dropout", {{"name", "b"}, {"rate", 0.5}, {"seed", 0}}),
                            layer("Dense", {{"name", "d1"}, {"units", 3}, {"kernel_initializer", glorot0}})});
  RuntimeModel other({4}, {layer("Dense", {{"name", "d2"}, {"units", 3}, {"kernel_initializer", glorot0}})});
  const auto config = seeded.get_config()["config"]["layers"];
  CHECK(config[1]["config"]["seed"] == 0);
  CHECK(config[3]["config"]["kernel_initializer"]["config"]["seed"] == 0);
  CHECK(RuntimeModel::from_config(seeded.get_config()).get_config() == seeded.get_config());
  CHECK(seeded.layer("a").state_text() == seeded.layer("b").state_text());  // the same generator
  const auto kernel = [](RuntimeModel& model, const char* name) {
    for (const auto& w : model.trainable_weights())
      if (w.path == std::string(name) + "/kernel") return std::vector<std::byte>(w.bytes.begin(), w.bytes.end());
    return std::vector<std::byte>{};
  };
  CHECK(kernel(seeded, "d1").size() == 4 * 3 * sizeof(float));
  CHECK(kernel(seeded, "d1") == kernel(other, "d2"));  // the same draws; unseeded they come from each path
  CHECK(Dropout<>(0.5, "x", 0).seed() == std::optional<std::uint64_t>(0));
  CHECK_FALSE(Dropout<>(0.5, "x").seed().has_value());

  // Dropout at rate 1 (Keras' range is [0, 1]) drops everything in training.
  RuntimeModel all_dropped({4}, {layer("Dropout", {{"rate", 1.0}})});
  const AnyTensor dropped = all_dropped.training_call(AnyTensor(ramp<float, dynamic, 4>(2)));
  for (const float v : dropped.values<float>()) CHECK(v == 0.0f);

  // Softmax over axis 1 of (batch, 4) is its last axis, as -1 is (as BatchNormalization's axis).
  RuntimeModel softmax_last({4}, {layer("Softmax", {{"axis", 1}})});
  CHECK(softmax_last.get_config()["config"]["layers"][1]["config"]["axis"] == 1);
  const AnyTensor probabilities = softmax_last(AnyTensor(ramp<float, dynamic, 4>(1)));
  RuntimeModel softmax_default({4}, {layer("Softmax", nlohmann::json::object())});
  CHECK(softmax_default(AnyTensor(ramp<float, dynamic, 4>(1))).values<float>()[2] == probabilities.values<float>()[2]);

  // dilation_rate 1 is [1, 1]; padding and data_format in any case, as Keras standardizes them.
  RuntimeModel conv({5, 5, 1}, {layer("Conv2D", {{"filters", 2}, {"kernel_size", 3}, {"dilation_rate", 1}, {"padding", "SAME"},
                                                 {"data_format", "Channels_Last"}}),
                                layer("MaxPooling2D", {{"pool_size", 2}, {"padding", "Valid"}})});
  CHECK(conv.output_shape() == std::vector<std::size_t>{2, 2, 2});
  CHECK(conv.get_config()["config"]["layers"][1]["config"]["padding"] == "same");

  // A number JSON text cannot hold (inf, NaN: a config built in C++) is refused, naming the key:
  // its text would read back as another setting.
  CHECK_THROWS_WITH_AS(RuntimeModel({4}, {layer_configs::batch_normalization(0.99, std::numeric_limits<double>::infinity())}),
                       doctest::Contains("`epsilon` must be a finite number. Received: inf"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(RuntimeModel({4}, {layer("Dropout", {{"rate", std::nan("")}})}),
                       doctest::Contains("`rate` must be a finite number. Received: nan"), std::invalid_argument);
}

TEST_CASE("every layer setting survives a Keras config round trip; unsupported settings are errors naming layer and key") {
  const auto initializer = [](const char* class_name, nlohmann::json config) {
    return nlohmann::json{{"module", "keras.initializers"}, {"class_name", class_name}, {"config", config},
                          {"registered_name", nullptr}};
  };
  const auto regularizer = [](const char* class_name, nlohmann::json config) {
    return nlohmann::json{{"module", "keras.regularizers"}, {"class_name", class_name}, {"config", config},
                          {"registered_name", nullptr}};
  };
  const auto layer = [](const char* class_name, nlohmann::json config) {
    return nlohmann::json{{"class_name", class_name}, {"config", config}};
  };
  // Every setting away from its default.
  const std::vector<nlohmann::json> layers{
      layer("Conv2D", {{"name", "conv"}, {"trainable", false}, {"filters", 3}, {"kernel_size", {2, 3}}, {"strides", {2, 1}},
                       {"padding", "same"}, {"activation", "tanh"}, {"use_bias", false},
                       {"kernel_initializer", initializer("HeNormal", {{"seed", 5}})},
                       {"kernel_regularizer", regularizer("L1L2", {{"l1", 0.125}, {"l2", 0.25}})}}),
      layer("BatchNormalization", {{"name", "bn"}, {"momentum", 0.5}, {"epsilon", 0.25},
                                   {"gamma_initializer", initializer("Constant", {{"value", 1.5}})},
                                   {"beta_initializer", initializer("RandomUniform", {{"minval", -0.5}, {"maxval", 0.5}, {"seed", 3}})},
                                   {"moving_mean_initializer", initializer("Ones", nlohmann::json::object())},
                                   {"moving_variance_initializer", initializer("Constant", {{"value", 2.0}})},
                                   {"gamma_regularizer", regularizer("L2", {{"l2", 0.5}})},
                                   {"beta_regularizer", regularizer("L1", {{"l1", 0.75}})}}),
      layer("MaxPooling2D", {{"name", "pool"}, {"pool_size", {2, 1}}, {"strides", {1, 1}}, {"padding", "same"}}),
      layer("Flatten", {{"name", "flat"}}),
      layer("Dropout", {{"name", "drop"}, {"rate", 0.375}, {"seed", 42}}),
      layer("Dense", {{"name", "dense"}, {"units", 4}, {"activation", "gelu"}, {"use_bias", true},
                      {"kernel_initializer", initializer("RandomNormal", {{"mean", 0.5}, {"stddev", 0.25}, {"seed", 9}})},
                      {"bias_initializer", initializer("GlorotNormal", {{"seed", 1}})},
                      {"bias_regularizer", regularizer("L2", {{"l2", 0.0625}})}}),
      layer("Activation", {{"name", "act"}, {"activation", "gelu_approximate"}}),
      layer("Softmax", {{"name", "soft"}})};
  RuntimeModel model({6, 5, 2}, layers);
  const nlohmann::json written = model.get_config();
  const nlohmann::json& out = written["config"]["layers"];
  REQUIRE(out.size() == layers.size() + 1);  // the InputLayer first
  for (std::size_t i = 0; i < layers.size(); ++i) {
    INFO("layer ", layers[i]["config"]["name"]);
    CHECK(out[i + 1]["class_name"] == layers[i]["class_name"]);
    for (const auto& entry : layers[i]["config"].items()) {
      const auto& key = entry.key();  // not a binding: lambdas (doctest's INFO) capture it
      const auto& value = entry.value();
      INFO("key ", key);
      CHECK(out[i + 1]["config"][key] == value);
    }
  }
  CHECK_FALSE(model.layer("conv").trainable());
  const RuntimeModel again = RuntimeModel::from_config(written);
  CHECK(nlohmann::json(again.get_config()) == written);

  // The compile-time layers write the same settings.
  Sequential<policies::float32, Input<4>, Dense<3, activations::relu>, Dropout<>> compiled(
      Dense<3, activations::relu>("d", weight_settings{.kernel_initializer = initializers::he_uniform{7},
                                                       .kernel_regularizer = regularizers::l1{0.5}}),
      Dropout<>(0.25, "drop", 11));
  const nlohmann::json compiled_config = compiled.get_config();
  const nlohmann::json& dense = compiled_config["config"]["layers"][1]["config"];
  CHECK(dense["kernel_initializer"] == initializer("HeUniform", {{"seed", 7}}));
  CHECK(dense["kernel_regularizer"] == regularizer("L1", {{"l1", 0.5}}));
  CHECK(compiled_config["config"]["layers"][2]["config"]["rate"] == 0.25);
  CHECK(compiled_config["config"]["layers"][2]["config"]["seed"] == 11);
  CHECK(nlohmann::json(RuntimeModel::from_config(compiled_config).get_config()) == compiled_config);
  // An unseeded Dropout writes Keras' null (its masks come from its name).
  const nlohmann::json unseeded = Sequential<policies::float32, Input<4>, Dropout<>>().get_config();
  CHECK(unseeded["config"]["layers"][1]["config"]["seed"].is_null());
  CHECK(nlohmann::json(RuntimeModel::from_config(unseeded).get_config()) == unseeded);
  // The name "l1_l2" is tf.keras' l1_l2(): 0.01 each (the L1L2 class defaults to 0).
  const std::vector<float> w{1.0f, -2.0f};
  CHECK(std::visit([&](const auto& r) { return r(std::span<const float>(w)); }, regularizers::get("l1_l2")) ==
        doctest::Approx(0.01 * 3 + 0.01 * 5));
  CHECK(std::visit([&](const auto& r) { return r(std::span<const float>(w)); },
                   regularizers::get(nlohmann::json{{"class_name", "L1L2"}, {"config", nlohmann::json::object()}})) == 0.0f);

  // Settings mixprec does not implement are never ignored.
  const auto error = [&](nlohmann::json config) -> std::string {
    try {
      RuntimeModel({4}, {layer("Dense", std::move(config))});
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no error";
  };
  CHECK(error({{"name", "d"}, {"units", 2}, {"kernel_constraint", {{"class_name", "NonNeg"}, {"config", nlohmann::json::object()}}}})
            .starts_with("layer 1 ('d', Dense): `kernel_constraint` is not supported by mixprec; it must be null."));
  CHECK(error({{"name", "d"}, {"units", 2}, {"frobnicate", 3}}) == "layer 1 ('d', Dense): unknown setting `\"frobnicate\"` (value 3).");
  CHECK(error({{"name", "d"}, {"units", 2}, {"activity_regularizer", regularizer("L2", {{"l2", 0.5}})}})
            .find("`activity_regularizer` is not supported by mixprec") != std::string::npos);
  CHECK(error({{"name", "d"}, {"units", 2}, {"kernel_regularizer", regularizer("L3", nlohmann::json::object())}})
            .starts_with("layer 1 ('d', Dense): `kernel_regularizer`: "));
  CHECK(error({{"name", "d"}, {"units", 2}, {"kernel_constraint", nullptr}}) == "no error");  // null is the default
}
