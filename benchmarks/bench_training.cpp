// One training step, train_on_batch (forward in training mode, loss, backward, Adam update), of
// bench_networks.hpp's MLP 784-1024-1024-10 (batch 256) and CNN (batch 64), ending in logits,
// with Adam(1e-3) and SparseCategoricalCrossentropy(from_logits=true), under float32,
// mixed_bfloat16 and mixed_float16 on 1 and 2 threads; the RuntimeModel built from the same
// config (one policy) alone and paired with the Sequential; what loss scaling costs a
// mixed_float16 step (paired with the same step unscaled); the step's phases timed apart; and
// each GEMM of a step alone (step_gemm/...), in float32, bfloat16 and float16.
// benchmarks/torch_training.py runs the same steps in PyTorch. On CPUs with AMX-BF16,
// train_step/*/mixed_bfloat16_vdpbf16ps runs the mixed_bfloat16 step on the vdpbf16ps GEMM.
//
// GFLOP/s counts GEMM FLOPs only (bench_networks.hpp's training_step_flops): the forward
// GEMMs, then each layer's weight-gradient and input-gradient GEMMs (each as large as the
// forward one), less the first layer's input gradient, which nobody computes: 3x the forward
// pass less its first layer.
#include "bench_common.hpp"
#include "bench_networks.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <mixprec/kernels/gemm.hpp>
#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>
#include <mixprec/training.hpp>

using namespace mixprec;

namespace {

using clock_type = std::chrono::steady_clock;

template <template <class> class Network>
struct network_case;
template <>
struct network_case<bench::mlp_logits> {
  using input_type = bench::mlp_input;
  static constexpr std::size_t batch = bench::mlp_batch;
  static constexpr double step_flops = bench::mlp_step_flops;
};
template <>
struct network_case<bench::cnn_logits> {
  using input_type = bench::cnn_input;
  static constexpr std::size_t batch = bench::cnn_batch;
  static constexpr double step_flops = bench::cnn_step_flops;
};

/// Class ids 0..9, spread over the batch.
Tensor<std::int32_t, dynamic> labels(std::size_t batch) {
  std::vector<std::int32_t> y(batch);
  for (std::size_t i = 0; i < batch; ++i) y[i] = static_cast<std::int32_t>((i * 7) % 10);
  return Tensor<std::int32_t, dynamic>(y);
}

/// No metrics: PyTorch's step computes none either.
template <class Model>
void compile_for_step(Model& model) {
  model.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(/*from_logits=*/true));
}

void use_threads(const benchmark::State& state) { kernels::set_num_threads(static_cast<std::size_t>(state.range(0))); }

void set_flops(benchmark::State& state, double flops_per_step) {
  state.counters["GFLOP/s"] = benchmark::Counter(flops_per_step * 1e-9 * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate);
}

/// A step that went non-finite would time other code paths: fail the case instead.
void check_loss(benchmark::State& state, const Logs& logs) {
  if (!std::isfinite(logs.at("loss"))) state.SkipWithError("the loss went non-finite");
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

template <class F>
double milliseconds(F&& f) {
  const auto start = clock_type::now();
  f();
  return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

/// The compile-time Sequential's train_on_batch.
/// Times train_on_batch steps of a model (either kind) after one warm-up step (the step's
/// buffers, Adam's slots).
template <class N, class Model, class X, class Y>
void time_steps(benchmark::State& state, Model& model, const X& x, const Y& y) {
  compile_for_step(model);
  model.train_on_batch(x, y);
  for (auto _ : state) benchmark::DoNotOptimize(model.train_on_batch(x, y));
  set_flops(state, N::step_flops);
  check_loss(state, model.train_on_batch(x, y));
}

template <template <class> class Network, class P>
void BM_sequential_step(benchmark::State& state) {
  using N = network_case<Network>;
  use_threads(state);
  Network<P> model;
  time_steps<N>(state, model, bench::network_input<typename N::input_type>(N::batch), labels(N::batch));
}

/// A mixed_bfloat16 step on the vdpbf16ps GEMM where the CPU would run AMX-BF16 (skipped
/// elsewhere: there train_step/<network>/mixed_bfloat16 is that step).
template <template <class> class Network>
void BM_sequential_step_vdpbf16ps(benchmark::State& state) {
  if (!kernels::detail::amx_bf16_supported()) {
    state.SkipWithError("this CPU has no AMX-BF16: train_step/*/mixed_bfloat16 runs vdpbf16ps (or Highway) already");
    return;
  }
  kernels::detail::set_amx_bf16_enabled(false);
  BM_sequential_step<Network, policies::mixed_bfloat16>(state);
  kernels::detail::set_amx_bf16_enabled(true);
}

/// The RuntimeModel built from the same Sequential's config.
template <template <class> class Network, class P>
void BM_runtime_step(benchmark::State& state) {
  using N = network_case<Network>;
  use_threads(state);
  RuntimeModel model = RuntimeModel::from_config(Network<P>().get_config());
  time_steps<N>(state, model, AnyTensor(bench::network_input<typename N::input_type>(N::batch)),
                AnyTensor(labels(N::batch)));
}

/// Two steps in pairs: each iteration runs one step of each, back to back, alternating which
/// goes first, so that the shared machine's slow phases hit both alike. Reports the median step
/// of each (counters "<a>_ms", "<b>_ms") and the median of the per-pair ratios b / a ("ratio").
template <class A, class B>
void time_pairs(benchmark::State& state, const char* a_name, A&& step_a, const char* b_name, B&& step_b) {
  step_a();
  step_b();
  std::vector<double> a, b;
  bool a_first = true;
  for (auto _ : state) {
    const auto run_a = [&] { a.push_back(milliseconds(step_a)); };
    const auto run_b = [&] { b.push_back(milliseconds(step_b)); };
    if (a_first) {
      run_a();
      run_b();
    } else {
      run_b();
      run_a();
    }
    a_first = !a_first;
  }
  std::vector<double> ratios(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) ratios[i] = b[i] / a[i];
  state.counters[std::string(a_name) + "_ms"] = median(a);
  state.counters[std::string(b_name) + "_ms"] = median(b);
  state.counters["ratio"] = median(ratios);
}

/// RuntimeModel against Sequential in pairs (ratio: runtime / sequential).
template <template <class> class Network, class P>
void BM_runtime_over_sequential(benchmark::State& state) {
  using N = network_case<Network>;
  use_threads(state);
  Network<P> sequential;
  RuntimeModel runtime = RuntimeModel::from_config(sequential.get_config());
  compile_for_step(sequential);
  compile_for_step(runtime);
  const auto x = bench::network_input<typename N::input_type>(N::batch);
  const auto y = labels(N::batch);
  const AnyTensor x_any(x), y_any(y);
  time_pairs(
      state, "sequential", [&] { benchmark::DoNotOptimize(sequential.train_on_batch(x, y)); }, "runtime",
      [&] { benchmark::DoNotOptimize(runtime.train_on_batch(x_any, y_any)); });
}

/// What dynamic loss scaling costs a mixed_float16 step, in pairs: the step compile() gives the
/// model (a LossScaleOptimizer: the loss gradient scaled, one fused unscale-and-check pass over
/// the gradients) against the same model with auto_scale_loss = false (ratio: scaled / plain).
template <template <class> class Network>
void BM_loss_scaling_cost(benchmark::State& state) {
  using N = network_case<Network>;
  use_threads(state);
  Network<policies::mixed_float16> scaled, plain;
  scaled.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(true));
  plain.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(true), {}, {.auto_scale_loss = false});
  if (scaled.loss_scale_optimizer() == nullptr || plain.loss_scale_optimizer() != nullptr)
    state.SkipWithError("compile() did not choose loss scaling as expected");
  const auto x = bench::network_input<typename N::input_type>(N::batch);
  const auto y = labels(N::batch);
  time_pairs(
      state, "plain", [&] { benchmark::DoNotOptimize(plain.train_on_batch(x, y)); }, "scaled",
      [&] { benchmark::DoNotOptimize(scaled.train_on_batch(x, y)); });
  check_loss(state, plain.train_on_batch(x, y));
  const Logs last = scaled.train_on_batch(x, y);
  check_loss(state, last);
  state.counters["skipped_steps"] = static_cast<double>(scaled.loss_scale_optimizer()->skipped_steps());
}

/// Where a step's time goes: train_on_batch's phases run one by one (the same calls the step
/// makes, minus its checks and logs), each timed; reports each phase's median in ms.
template <template <class> class Network, class P>
void BM_step_phases(benchmark::State& state) {
  using N = network_case<Network>;
  use_threads(state);
  Network<P> model;
  const auto x = bench::network_input<typename N::input_type>(N::batch);
  const auto y = labels(N::batch);
  const losses::targets targets = std::span<const std::int32_t>(y.values());
  const losses::SparseCategoricalCrossentropy loss(/*from_logits=*/true);
  optimizers::Adam adam(1e-3);
  std::vector<double> forward, loss_ms, backward, update;
  const auto step = [&](bool record) {
    decltype(model.forward_for_training(x)) output;
    const double f = milliseconds([&] { output = model.forward_for_training(x); });
    using T = std::remove_const_t<typename decltype(output)::element_type>;
    value_buffer<T> gradient(output.size());
    const double l = milliseconds([&] {
      benchmark::DoNotOptimize(loss.compute<T>(targets, output, Network<P>::output_columns(), std::span(gradient)));
    });
    const double b = milliseconds([&] { model.backward(std::span<T>(gradient)); });
    const double u = milliseconds([&] {
      std::vector<gradient_and_variable> pairs;
      model.collect_gradients(pairs);
      adam.apply(pairs);
      model.finish_step();
    });
    if (record) {
      forward.push_back(f);
      loss_ms.push_back(l);
      backward.push_back(b);
      update.push_back(u);
    }
  };
  step(false);
  for (auto _ : state) step(true);
  state.counters["forward_ms"] = median(forward);
  state.counters["loss_ms"] = median(loss_ms);
  state.counters["backward_ms"] = median(backward);
  state.counters["adam_ms"] = median(update);
}

/// The GEMMs of one step, alone (kernels::gemm, C in float32 as the layers' accumulators): the
/// forward product, then the backward's weight gradient (x^T dz: A transposed) and input gradient
/// (dz W^T: B transposed) of each layer; a Conv2D's rows are its im2col rows (batch x output
/// pixels) and its k the patch (kh kw channels_in).
struct gemm_shape {
  const char* name;
  kernels::transpose ta, tb;
  std::size_t m, n, k;
};
constexpr kernels::transpose N_ = kernels::transpose::no, T_ = kernels::transpose::yes;
constexpr gemm_shape step_gemm_shapes[] = {
    {"mlp/dense1_forward", N_, N_, 256, 1024, 784},   {"mlp/dense2_forward", N_, N_, 256, 1024, 1024},
    {"mlp/dense3_forward", N_, N_, 256, 10, 1024},    {"mlp/dense3_kernel_gradient", T_, N_, 1024, 10, 256},
    {"mlp/dense3_input_gradient", N_, T_, 256, 1024, 10}, {"mlp/dense2_kernel_gradient", T_, N_, 1024, 1024, 256},
    {"mlp/dense2_input_gradient", N_, T_, 256, 1024, 1024}, {"mlp/dense1_kernel_gradient", T_, N_, 784, 1024, 256},
    {"cnn/conv1_forward", N_, N_, 43264, 32, 9},      {"cnn/conv2_forward", N_, N_, 7744, 64, 288},
    {"cnn/dense1_forward", N_, N_, 64, 128, 1600},    {"cnn/dense2_forward", N_, N_, 64, 10, 128},
    {"cnn/dense2_kernel_gradient", T_, N_, 128, 10, 64}, {"cnn/dense2_input_gradient", N_, T_, 64, 128, 10},
    {"cnn/dense1_kernel_gradient", T_, N_, 1600, 128, 64}, {"cnn/dense1_input_gradient", N_, T_, 64, 1600, 128},
    {"cnn/conv2_kernel_gradient", T_, N_, 288, 64, 7744}, {"cnn/conv2_input_gradient", N_, T_, 7744, 288, 64},
    {"cnn/conv1_kernel_gradient", T_, N_, 9, 32, 43264},
};

template <class T>
void BM_step_gemm(benchmark::State& state, gemm_shape s) {
  use_threads(state);
  const std::vector<T> a(s.m * s.k, T(0.5f)), b(s.k * s.n, T(0.25f));
  std::vector<float> c(s.m * s.n);
  const std::size_t lda = s.ta == N_ ? s.k : s.m, ldb = s.tb == N_ ? s.n : s.k;
  for (auto _ : state) {
    kernels::gemm(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), s.n);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k));
}

/// Threads 1 and 2, milliseconds, wall time; "min" and the default mean/median/stddev for
/// --benchmark_repetitions.
void step_settings(benchmark::internal::Benchmark* b) {
  b->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
  b->ComputeStatistics("min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
}
/// Threads 1 and 2, about a hundred pairs (or phase records) per case.
void pair_settings(benchmark::internal::Benchmark* b) {
  b->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
}

}  // namespace

BENCHMARK(BM_sequential_step<bench::mlp_logits, policies::float32>)->Name("train_step/mlp/float32")->Apply(step_settings);
BENCHMARK(BM_sequential_step<bench::mlp_logits, policies::mixed_bfloat16>)->Name("train_step/mlp/mixed_bfloat16")->Apply(step_settings);
BENCHMARK(BM_sequential_step<bench::mlp_logits, policies::mixed_float16>)->Name("train_step/mlp/mixed_float16")->Apply(step_settings);
BENCHMARK(BM_sequential_step<bench::cnn_logits, policies::float32>)->Name("train_step/cnn/float32")->Apply(step_settings);
BENCHMARK(BM_sequential_step<bench::cnn_logits, policies::mixed_bfloat16>)->Name("train_step/cnn/mixed_bfloat16")->Apply(step_settings);
BENCHMARK(BM_sequential_step<bench::cnn_logits, policies::mixed_float16>)->Name("train_step/cnn/mixed_float16")->Apply(step_settings);
BENCHMARK(BM_sequential_step_vdpbf16ps<bench::mlp_logits>)->Name("train_step/mlp/mixed_bfloat16_vdpbf16ps")->Apply(step_settings);
BENCHMARK(BM_sequential_step_vdpbf16ps<bench::cnn_logits>)->Name("train_step/cnn/mixed_bfloat16_vdpbf16ps")->Apply(step_settings);
BENCHMARK(BM_runtime_step<bench::mlp_logits, policies::mixed_bfloat16>)->Name("train_step_runtime/mlp/mixed_bfloat16")->Apply(step_settings);
BENCHMARK(BM_runtime_step<bench::cnn_logits, policies::mixed_bfloat16>)->Name("train_step_runtime/cnn/mixed_bfloat16")->Apply(step_settings);
BENCHMARK(BM_runtime_over_sequential<bench::mlp_logits, policies::mixed_bfloat16>)->Name("runtime_over_sequential/mlp/mixed_bfloat16")->Apply(pair_settings);
BENCHMARK(BM_runtime_over_sequential<bench::cnn_logits, policies::mixed_bfloat16>)->Name("runtime_over_sequential/cnn/mixed_bfloat16")->Apply(pair_settings);
BENCHMARK(BM_loss_scaling_cost<bench::mlp_logits>)->Name("loss_scaling_cost/mlp/mixed_float16")->Apply(pair_settings);
BENCHMARK(BM_loss_scaling_cost<bench::cnn_logits>)->Name("loss_scaling_cost/cnn/mixed_float16")->Apply(pair_settings);
BENCHMARK(BM_step_phases<bench::mlp_logits, policies::float32>)->Name("step_phases/mlp/float32")->Apply(pair_settings);
BENCHMARK(BM_step_phases<bench::mlp_logits, policies::mixed_bfloat16>)->Name("step_phases/mlp/mixed_bfloat16")->Apply(pair_settings);
BENCHMARK(BM_step_phases<bench::mlp_logits, policies::mixed_float16>)->Name("step_phases/mlp/mixed_float16")->Apply(pair_settings);
BENCHMARK(BM_step_phases<bench::cnn_logits, policies::float32>)->Name("step_phases/cnn/float32")->Apply(pair_settings);
BENCHMARK(BM_step_phases<bench::cnn_logits, policies::mixed_bfloat16>)->Name("step_phases/cnn/mixed_bfloat16")->Apply(pair_settings);
BENCHMARK(BM_step_phases<bench::cnn_logits, policies::mixed_float16>)->Name("step_phases/cnn/mixed_float16")->Apply(pair_settings);

[[maybe_unused]] const bool step_gemms_registered = [] {
  for (const gemm_shape& s : step_gemm_shapes) {
    const std::string name = std::string("step_gemm/") + s.name;
    benchmark::RegisterBenchmark((name + "/float32").c_str(), BM_step_gemm<float>, s)->Apply(step_settings);
    benchmark::RegisterBenchmark((name + "/bfloat16").c_str(), BM_step_gemm<bfloat16>, s)->Apply(step_settings);
    benchmark::RegisterBenchmark((name + "/float16").c_str(), BM_step_gemm<float16>, s)->Apply(step_settings);
  }
  return true;
}();

BENCHMARK_MAIN();
