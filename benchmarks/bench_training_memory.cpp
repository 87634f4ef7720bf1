// The peak heap of one steady-state training step (bench_training's: Adam, sparse categorical
// crossentropy from logits) of bench_networks.hpp's MLP and CNN under float32, mixed_bfloat16 and
// mixed_float16, against the sum of what a step must hold: the weights, Adam's two slots and the
// saved activations.
//
// How: this program replaces the global operator new / delete (every variant, so every C++
// allocation of mixprec, of the standard library and of the thread pool's workers goes through
// it) with versions that count the live bytes requested and keep their high-water mark
// (tests/heap_counter.hpp, which test_fit uses too). Each
// case runs in a process of its own (the program re-runs itself with --case=...), because
// per-thread scratch buffers outlive a model and would hide the next case's. A case makes its
// input and labels, notes the live bytes (the base), builds and compiles the model, runs three
// steps, then resets the high-water mark and runs a fourth: its peak minus the base is the
// step's peak memory, everything the model and the step hold at the worst moment (weights,
// slots, gradients, every layer's record, scratch buffers, per-thread GEMM packing). Last,
// release_step_buffers() (what fit() calls when it returns) frees what a step keeps for the next, and the live bytes then are what a model holds after fit. Not counted:
// malloc's own overhead and fragmentation, thread stacks, the program's code; so this is a lower
// bound on what the process adds to its RSS.
//
// The sum: weights (parameter_count x the variable dtype), Adam's m and v (the same twice), and
// the saved activations: every tensor the backward pass reads, stored once in the compute dtype
// = each layer's output except Flatten's (a reshape of its input), plus the input cast to the
// compute dtype when that is not float32 (under float32 the caller's input is read in place).
//
//   bench_training_memory [--benchmark_filter=REGEX] [--benchmark_out=FILE.json]
// prints a table (and writes JSON when asked); other --benchmark_* flags (from run.sh) are ignored.
#include "bench_common.hpp"
#include "bench_networks.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <mixprec/kernels/gemm.hpp>
#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>
#include <mixprec/training.hpp>

#include "heap_counter.hpp"


// ---------------------------------------------------------------------------------------------
using namespace mixprec;

namespace {

/// Elements of every saved activation per sample (each layer's output but Flatten's), and of the
/// input.
// MLP: Dense 1024, Dense 1024, Dense 10.
constexpr std::size_t mlp_activations = 1024 + 1024 + 10;
// CNN: Conv2D 26x26x32, MaxPool 13x13x32, Conv2D 11x11x64, MaxPool 5x5x64, (Flatten: a view),
// Dense 128, Dense 10.
constexpr std::size_t cnn_activations = 26 * 26 * 32 + 13 * 13 * 32 + 11 * 11 * 64 + 5 * 5 * 64 + 128 + 10;

template <template <class> class Network>
struct network_case;
template <>
struct network_case<bench::mlp_logits> {
  using input_type = bench::mlp_input;
  static constexpr std::size_t batch = bench::mlp_batch, input_features = 784, activations = mlp_activations;
};
template <>
struct network_case<bench::cnn_logits> {
  using input_type = bench::cnn_input;
  static constexpr std::size_t batch = bench::cnn_batch, input_features = 28 * 28, activations = cnn_activations;
};

struct measurement {
  std::int64_t weights = 0, slots = 0, activations = 0;  // the sum's parts
  std::int64_t first_step_peak = 0, held_between_steps = 0, step_peak = 0;
  std::int64_t held_after_fit = 0;  // after release_step_buffers(), as fit() leaves the model
  std::int64_t sum() const { return weights + slots + activations; }
};

template <template <class> class Network, class P>
measurement measure(std::size_t threads) {
  using N = network_case<Network>;
  using C = typename P::compute_dtype;
  using V = typename P::variable_dtype;
  kernels::set_num_threads(threads);
  const auto x = bench::network_input<typename N::input_type>(N::batch);
  std::vector<std::int32_t> labels(N::batch);
  for (std::size_t i = 0; i < N::batch; ++i) labels[i] = static_cast<std::int32_t>((i * 7) % 10);
  const Tensor<std::int32_t, dynamic> y(labels);

  measurement m;
  const std::int64_t base = heap_counter::live_bytes.load();
  {
    Network<P> model;
    model.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(/*from_logits=*/true));
    const auto parameters = static_cast<std::int64_t>(model.parameter_count());
    m.weights = parameters * static_cast<std::int64_t>(sizeof(V));
    m.slots = 2 * m.weights;
    m.activations = static_cast<std::int64_t>(
        (N::batch * N::activations + (std::is_same_v<C, float> ? 0 : N::batch * N::input_features)) * sizeof(C));

    heap_counter::peak_bytes.store(heap_counter::live_bytes.load());
    model.train_on_batch(x, y);
    m.first_step_peak = heap_counter::peak_bytes.load() - base;
    model.train_on_batch(x, y);
    model.train_on_batch(x, y);
    m.held_between_steps = heap_counter::live_bytes.load() - base;
    heap_counter::peak_bytes.store(heap_counter::live_bytes.load());
    model.train_on_batch(x, y);
    m.step_peak = heap_counter::peak_bytes.load() - base;
    model.release_step_buffers();
    m.held_after_fit = heap_counter::live_bytes.load() - base;
  }
  return m;
}

struct case_entry {
  std::string name;
  measurement (*run)(std::size_t);
};

const std::vector<case_entry>& cases() {
  static const std::vector<case_entry> all = {
      {"mlp/float32", measure<bench::mlp_logits, policies::float32>},
      {"mlp/mixed_bfloat16", measure<bench::mlp_logits, policies::mixed_bfloat16>},
      {"mlp/mixed_float16", measure<bench::mlp_logits, policies::mixed_float16>},
      {"cnn/float32", measure<bench::cnn_logits, policies::float32>},
      {"cnn/mixed_bfloat16", measure<bench::cnn_logits, policies::mixed_bfloat16>},
      {"cnn/mixed_float16", measure<bench::cnn_logits, policies::mixed_float16>},
  };
  return all;
}

constexpr const char* fields =
    "weights slots activations first_step_peak held_between_steps step_peak held_after_fit";

int run_case(const std::string& spec) {  // "<network>/<policy>/<threads>"
  const std::size_t slash = spec.rfind('/');
  const std::string name = spec.substr(0, slash);
  const auto threads = static_cast<std::size_t>(std::stoul(spec.substr(slash + 1)));
  for (const auto& c : cases())
    if (c.name == name) {
      const measurement m = c.run(threads);
      std::printf("%lld %lld %lld %lld %lld %lld %lld\n", static_cast<long long>(m.weights),
                  static_cast<long long>(m.slots), static_cast<long long>(m.activations),
                  static_cast<long long>(m.first_step_peak), static_cast<long long>(m.held_between_steps),
                  static_cast<long long>(m.step_peak), static_cast<long long>(m.held_after_fit));
      return 0;
    }
  std::fprintf(stderr, "bench_training_memory: no case %s\n", name.c_str());
  return 2;
}

std::string mib(std::int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  std::string filter = ".*", out;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--case=", 0) == 0) return run_case(arg.substr(7));
    if (arg.rfind("--benchmark_filter=", 0) == 0) filter = arg.substr(19);
    if (arg.rfind("--benchmark_out=", 0) == 0) out = arg.substr(16);
  }
  const std::regex selected(filter);
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");  // popen's shell has its own
  std::printf("peak heap of one steady-state training step (Adam, from-logits crossentropy), MiB\n");
  std::printf("%-26s %8s %8s %8s %8s %10s %10s %10s %7s %10s\n", "case", "weights", "adam", "saved", "sum", "held",
              "step peak", "1st step", "peak/sum", "after fit");
  std::ostringstream json;
  json << "{\n  \"benchmarks\": [";
  bool first = true;
  for (const auto& c : cases())
    for (int threads : {1, 2}) {
      const std::string name = c.name + "/" + std::to_string(threads);
      if (!std::regex_search("training_memory/" + name, selected)) continue;
      const std::string command = "'" + self.string() + "' --case=" + name;
      FILE* pipe = popen(command.c_str(), "r");
      long long v[7] = {};
      const int read =
          pipe ? std::fscanf(pipe, "%lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6])
               : 0;
      if (pipe == nullptr || pclose(pipe) != 0 || read != 7) {
        std::fprintf(stderr, "bench_training_memory: case %s failed\n", name.c_str());
        return 1;
      }
      measurement m{v[0], v[1], v[2], v[3], v[4], v[5], v[6]};
      const double ratio = static_cast<double>(m.step_peak) / static_cast<double>(m.sum());
      std::printf("%-26s %8s %8s %8s %8s %10s %10s %10s %7.2f %10s\n", name.c_str(), mib(m.weights).c_str(),
                  mib(m.slots).c_str(), mib(m.activations).c_str(), mib(m.sum()).c_str(),
                  mib(m.held_between_steps).c_str(), mib(m.step_peak).c_str(), mib(m.first_step_peak).c_str(), ratio,
                  mib(m.held_after_fit).c_str());
      json << (first ? "\n" : ",\n") << "    {\"name\": \"training_memory/" << name << "\"";
      std::istringstream names(fields);
      for (long long value : v) {
        std::string field;
        names >> field;
        json << ", \"" << field << "_bytes\": " << value;
      }
      json << ", \"peak_over_sum\": " << ratio << "}";
      first = false;
    }
  json << "\n  ]\n}\n";
  std::printf("sum = weights + Adam's slots + saved activations; held = live between steps; peak/sum = step peak / "
              "sum; after fit = live after release_step_buffers(), which fit() calls when it returns\n");
  if (!out.empty()) std::ofstream(out) << json.str();
  return 0;
}
