// One epoch of the demo's training (examples/train_fashion_mnist.cpp, whose models and compile()
// come from examples/fashion_mnist_models.hpp): model.fit on the 60000 Fashion-MNIST training
// images (Debian's dataset-fashion-mnist, scaled to [0, 1]), batch size 64 (the demo's default:
// 938 steps, the last one of 32 images), shuffled with a fixed seed, verbose 0, Adam with
// CosineDecay(1e-3) over the demo's default 5 epochs, sparse categorical crossentropy from logits
// and the accuracy metric, for the CNN and the MLP under float32, mixed_bfloat16 and
// mixed_float16 (with the dynamic loss scaling compile() gives it), on 1 and 2 threads.
// benchmarks/torch_fashion_mnist.py runs the same epoch in PyTorch.
//
// One epoch per iteration (a fresh model per repetition, after a warm-up fit of 10 steps that
// allocates the step's buffers and Adam's slots); the time is the epoch's wall time in seconds;
// counters: ms_per_step (the epoch / 938) and the epoch's training accuracy (a sanity check: the
// model learned). Without the dataset the cases are skipped with a message.
#include "bench_common.hpp"

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <mixprec/datasets.hpp>
#include <mixprec/kernels/gemm.hpp>

#include "fashion_mnist_models.hpp"

using namespace mixprec;
namespace demo = fashion_mnist_demo;

namespace {

constexpr std::size_t batch_size = 64, demo_epochs = 5, warmup_rows = 10 * batch_size;
constexpr std::uint64_t seed = 2026;  // the demo's

/// The training split, loaded once (nullopt with the reason when the dataset is missing).
struct training_data {
  Tensor<float, dynamic, 784> flat;
  Tensor<float, dynamic, 28, 28, 1> images;
  Tensor<std::int32_t, dynamic> labels;
};
const std::optional<training_data>& data(std::string& error) {
  static std::string load_error;
  static const std::optional<training_data> loaded = []() -> std::optional<training_data> {
    try {
      const auto split = datasets::fashion_mnist::load_data().train;
      const auto y = split.y.values();
      return training_data{datasets::scaled<784>(split.x), datasets::scaled<28, 28, 1>(split.x),
                           Tensor<std::int32_t, dynamic>(std::vector<std::int32_t>(y.begin(), y.end()))};
    } catch (const std::exception& e) {
      load_error = e.what();
      return std::nullopt;
    }
  }();
  error = load_error;
  return loaded;
}

template <class T>
T first_rows(const T& x, std::size_t rows) {
  const auto values = x.values();
  return T(value_buffer<typename T::dtype>(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(rows * T::row_size)));
}

struct cnn_case {
  template <class P>
  static auto make() {
    return demo::make_cnn<P>();
  }
  static const auto& x(const training_data& d) { return d.images; }
};
struct mlp_case {
  template <class P>
  static auto make() {
    return demo::make_mlp<P>();
  }
  static const auto& x(const training_data& d) { return d.flat; }
};

template <class Case, class P>
void BM_epoch(benchmark::State& state) {
  std::string error;
  const auto& d = data(error);
  if (!d) {
    state.SkipWithError(("Fashion-MNIST could not be loaded: " + error).c_str());
    return;
  }
  kernels::set_num_threads(static_cast<std::size_t>(state.range(0)));
  const auto& x = Case::x(*d);
  const std::size_t steps = demo::steps_per_epoch(x.batch(), batch_size);
  auto model = Case::template make<P>();
  demo::compile(model, static_cast<std::int64_t>(demo_epochs * steps));
  if (std::is_same_v<P, policies::mixed_float16> && model.loss_scale_optimizer() == nullptr)
    state.SkipWithError("compile() did not add loss scaling to mixed_float16");
  const FitOptions<std::remove_cvref_t<decltype(x)>, Tensor<std::int32_t, dynamic>> options{
      .batch_size = batch_size, .epochs = 1, .verbose = 0, .seed = seed};
  (void)model.fit(first_rows(x, warmup_rows), first_rows(d->labels, warmup_rows), options);

  double seconds = 0.0, accuracy = 0.0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const History history = model.fit(x, d->labels, options);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    accuracy = history.history.at("accuracy").back();
    if (!std::isfinite(history.history.at("loss").back())) state.SkipWithError("the loss went non-finite");
  }
  state.counters["ms_per_step"] = seconds * 1e3 / static_cast<double>(steps);
  state.counters["accuracy"] = accuracy;
}

void epoch_args(benchmark::internal::Benchmark* b) {
  b->ArgName("threads")->Arg(1)->Arg(2)->Iterations(1)->UseRealTime()->Unit(benchmark::kSecond);
}

}  // namespace

BENCHMARK(BM_epoch<cnn_case, policies::float32>)->Name("epoch/cnn/float32")->Apply(epoch_args);
BENCHMARK(BM_epoch<cnn_case, policies::mixed_bfloat16>)->Name("epoch/cnn/mixed_bfloat16")->Apply(epoch_args);
BENCHMARK(BM_epoch<cnn_case, policies::mixed_float16>)->Name("epoch/cnn/mixed_float16")->Apply(epoch_args);
BENCHMARK(BM_epoch<mlp_case, policies::float32>)->Name("epoch/mlp/float32")->Apply(epoch_args);
BENCHMARK(BM_epoch<mlp_case, policies::mixed_bfloat16>)->Name("epoch/mlp/mixed_bfloat16")->Apply(epoch_args);
BENCHMARK(BM_epoch<mlp_case, policies::mixed_float16>)->Name("epoch/mlp/mixed_float16")->Apply(epoch_args);

BENCHMARK_MAIN();
