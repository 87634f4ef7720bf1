// fuzz_seed_corpora <directory>: writes each fuzz target's seeds into <directory>/<target>/,
// from what mixprec itself writes (policy names, serialize, get_config, save_weights), so that
// the seeds follow the formats as they change. scripts/run fuzz runs it before the targets.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/kernels.hpp>
#include <mixprec/models.hpp>
#include <mixprec/runtime.hpp>

#include "checkpoint_models.hpp"
#include "idx_input.hpp"
#include "weights_model.hpp"

namespace {

using namespace mixprec;
namespace fs = std::filesystem;

class corpus {
 public:
  corpus(const fs::path& root, std::string_view target) : directory_(root / target) {
    fs::remove_all(directory_);
    fs::create_directories(directory_);
  }
  /// The path of the next seed, for a writer of its own (save_weights).
  fs::path next() { return directory_ / ("seed_" + std::to_string(count_++)); }
  void add(std::string_view content) {
    std::ofstream(next(), std::ios::binary).write(content.data(), static_cast<std::streamsize>(content.size()));
  }
  template <class Json>
  void add_json(const Json& json) { add(json.dump()); }
  /// A document followed by NUL-separated arguments (fuzz_common.hpp's split_at_nul).
  void add_with_arguments(std::string document, const std::vector<std::string>& arguments) {
    for (const auto& argument : arguments) document += std::string(1, '\0') + argument;
    add(document);
  }
  std::size_t size() const { return count_; }
  const fs::path& directory() const { return directory_; }

 private:
  fs::path directory_;
  std::size_t count_ = 0;
};

/// Every policy mixprec knows, by its canonical name (the runtime table lists them), and a few
/// quantized ones with other amax history lengths.
std::vector<DTypePolicy> every_policy() {
  std::vector<DTypePolicy> result;
  for (const auto& descriptor : detail::policy_table)  // (get reads "float8_e4m3fn" as quantized, as Keras does)
    result.push_back(descriptor.mode.empty() ? DTypePolicy(descriptor.name) : dtype_policies::get(descriptor.name));
  result.push_back(QuantizedFloat8DTypePolicy("float8", "mixed_bfloat16", 16));
  result.push_back(QuantizedFloat8DTypePolicy("float8", "float32", 1));
  return result;
}

void policy_names(corpus& out, const std::vector<DTypePolicy>& policies) {
  for (const auto& p : policies) out.add(p.name());
  // jmp's spellings, and QuantizedDTypePolicy's "<mode>\0<source>[\0<history>]".
  for (std::string_view name : {"p=f32,c=bf16,o=f32", "params=float32,compute=float16,output=float32", "c=half,p=full",
                                "p=f64", "mixed_float16_float32_vars", "_infer", "string"})
    out.add(name);
  out.add_with_arguments("int8", {"mixed_bfloat16"});
  out.add_with_arguments("float8", {"float32", "xxxxxxxxxxxxxxx"});
}

void policy_json(corpus& out, const std::vector<DTypePolicy>& policies) {
  for (const auto& p : policies) {
    out.add_json(dtype_policies::serialize(p));
    out.add_json(p.get_config());
  }
  namespace experimental = mixed_precision::experimental;
  out.add_json(experimental::Policy("mixed_float16").serialize());
  out.add_json(experimental::Policy("mixed_float16", 1024).serialize());
  out.add_json(experimental::Policy("mixed_bfloat16", nullptr).serialize());
  out.add_json(experimental::Policy("float16", experimental::DynamicLossScale(256.0, 100, 4.0, 2.0)).serialize());
  out.add_json(experimental::serialize(experimental::FixedLossScale(128.0)));
  out.add_json(nlohmann::json("mixed_float16"));  // tf.keras 2.x's bare name
}

void policy_maps(corpus& out) {
  DTypePolicyMap map(DTypePolicy("mixed_bfloat16"));
  map.set("sequential/dense", "float32");
  map.set("sequential/conv2d_[0-9]+", "mixed_float16");
  map.set("model/.*/query", QuantizedDTypePolicy("int8", "float32"));
  map.set("model/block_(1|2)/key", QuantizedFloat8DTypePolicy("float8", "mixed_bfloat16", 16));
  const std::vector<std::string> paths = {"sequential/dense", "sequential/conv2d_12", "model/block_1/query",
                                          "model/block_2/key", "model/other"};
  out.add_with_arguments(map.get_config().dump(), paths);
  out.add_json(map.get_config());
  DTypePolicyMap global_default;  // a null default: the global policy
  global_default.set("dense", nlohmann::json(dtype_policies::serialize(DTypePolicy("float16"))));
  out.add_with_arguments(global_default.get_config().dump(), {"dense", "dense_1"});
}

void model_configs(corpus& out) {
  namespace lc = layer_configs;
  nlohmann::json regularized = lc::dense(4, "tanh", "float64", "regularized");
  regularized["config"]["kernel_initializer"] = {{"class_name", "RandomNormal"}, {"config", {{"mean", 0.0}, {"stddev", 0.5}, {"seed", 3}}}};
  regularized["config"]["kernel_regularizer"] = {{"class_name", "L2"}, {"config", {{"l2", 0.01}}}};
  nlohmann::json seeded_dropout = lc::dropout(0.25);
  seeded_dropout["config"]["seed"] = 7;
  out.add_json(RuntimeModel({8}, {lc::dense(6, "relu", "mixed_float16"), lc::dropout(0.5), regularized, lc::dense(3, "softmax")},
                            "mlp")
                   .get_config());
  out.add_json(RuntimeModel({8, 8, 1},
                            {lc::conv2d(4, 3, 3, "relu", "same", 1, 1, "mixed_bfloat16"), lc::max_pooling2d(2, 2, "valid"),
                             lc::conv2d(2, 2, 2, "linear", "valid", 2, 1, "float32", "", false),
                             lc::batch_normalization(0.9, 1e-5), lc::activation("gelu"), lc::flatten(), seeded_dropout,
                             lc::dense(5, "relu", "int8_from_mixed_bfloat16"), lc::dense(4, "linear", "float8_from_float32"),
                             lc::softmax("float32")},
                            "cnn")
                   .get_config());
  out.add_json(RuntimeModel({5, 5, 2}, {lc::max_pooling2d(3, 2, "same", "float16"), lc::flatten("bfloat16"),
                                        lc::dense(2, "sigmoid", "float16")})
                   .get_config());
  out.add_json(fuzz::weights_model().get_config());
}

void weight_files(corpus& out) {
  for (std::string_view policy : {"mixed_bfloat16", "float32", "float16", "float64"}) {
    RuntimeModel model = fuzz::weights_model(policy);
    model.save_weights(out.next().string());
  }
}

/// Both models' checkpoints before any step, after one, and after a skipped step (the scaled
/// model's loss scale halved, its counters moved).
void checkpoint_files(corpus& out) {
  std::vector<float> overflowing(16, 1e30f);
  for (auto make : {fuzz::scaled_adam_model, fuzz::momentum_sgd_model}) {
    RuntimeModel model = make();
    save_checkpoint(model, out.next().string());
    model.train_on_batch(fuzz::training_inputs(), fuzz::training_labels());
    save_checkpoint(model, out.next().string());
    model.train_on_batch(AnyTensor({4, 4}, overflowing), fuzz::training_labels());
    model.train_on_batch(fuzz::training_inputs(), fuzz::training_labels());
    save_checkpoint(model, out.next().string());
  }
}

/// An IDX file of unsigned bytes: magic 0x0000080N, the extents (big-endian), the values.
std::string idx_file(const std::vector<std::uint32_t>& extents, std::string_view values) {
  std::string file = {0, 0, 8, static_cast<char>(extents.size())};
  for (std::uint32_t e : extents)
    for (int shift = 24; shift >= 0; shift -= 8) file += static_cast<char>((e >> shift) & 0xff);
  return file.append(values);
}

/// Small Fashion-MNIST splits in the format of Debian's files (no writer in mixprec to take
/// them from), each both as the harness gzips it and as gzip bytes.
void idx_files(corpus& out) {
  for (std::uint32_t images : {0u, 1u, 3u}) {
    std::string pixels(std::size_t{images} * 28 * 28, '\0'), labels;
    for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<char>(i * 7 % 256);
    for (std::uint32_t i = 0; i < images; ++i) labels += static_cast<char>(i * 3 % 10);
    const std::string image_file = idx_file({images, 28, 28}, pixels), label_file = idx_file({images}, labels);
    out.add(fuzz::encode_idx_input(fuzz::harness_gzips, image_file, label_file));
    out.add(fuzz::encode_idx_input(0, fuzz::gzip(image_file), fuzz::gzip(label_file)));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_seed_corpora <corpus directory>\n";
    return 2;
  }
  const fs::path root = argv[1];
  const auto policies = every_policy();
  corpus names(root, "policy_name"), json(root, "policy_json"), maps(root, "policy_map"), models(root, "model_config"),
      weights(root, "weights_file"), checkpoints(root, "checkpoint_file"), idx(root, "idx_file");
  policy_names(names, policies);
  policy_json(json, policies);
  policy_maps(maps);
  model_configs(models);
  weight_files(weights);
  checkpoint_files(checkpoints);
  idx_files(idx);
  for (const corpus* c : {&names, &json, &maps, &models, &weights, &checkpoints, &idx})
    std::cout << c->directory().string() << ": " << c->size() << " seeds\n";
  return 0;
}
