// Forward passes: an MLP 784-1024-1024-10 (batch 256) and a small CNN (batch 64) under float32,
// mixed_bfloat16 and mixed_float16, as a compile-time Sequential and hand-written on the same
// kernels with preallocated buffers (the abstraction's cost), and the runtime model; and a
// weight read inside call against summing a plain buffer (a same-dtype read costs nothing).
// benchmarks/torch_models.py times the same networks in PyTorch.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

#include <mixprec/kernels/gemm.hpp>
#include <mixprec/kernels/reduce.hpp>
#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>

using namespace mixprec;

namespace {

constexpr std::size_t mlp_batch = 256;
constexpr std::size_t cnn_batch = 64;

template <class P>
using mlp = Sequential<P, Input<784>, Dense<1024, activations::relu>, Dense<1024, activations::relu>, Dense<10>,
                       Softmax<policies::float32>>;
template <class P>
using cnn = Sequential<P, Input<28, 28, 1>, Conv2D<32, 3, 3, activations::relu>, MaxPooling2D<2>,
                       Conv2D<64, 3, 3, activations::relu>, MaxPooling2D<2>, Flatten<>, Dense<128, activations::relu>,
                       Dense<10>, Softmax<policies::float32>>;

template <class X>
X input(std::size_t batch) {
  X x(batch);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 255) / 255.0f;
  return x;
}

/// The benchmark's argument is the kernels' thread count: 1 shows the abstraction's cost without
/// the scheduling noise of a thread pool on a shared machine, 2 uses both cores.
void use_threads(const benchmark::State& state) { kernels::set_num_threads(static_cast<std::size_t>(state.range(0))); }

void set_flops(benchmark::State& state, double flops_per_pass) {
  state.counters["GFLOP/s"] = benchmark::Counter(flops_per_pass * 1e-9 * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate);
}

constexpr double mlp_flops = 2.0 * mlp_batch * (784.0 * 1024 + 1024.0 * 1024 + 1024.0 * 10);

template <class P>
void BM_mlp_sequential(benchmark::State& state) {
  use_threads(state);
  mlp<P> model;
  const auto x = input<Tensor<float, dynamic, 784>>(mlp_batch);
  for (auto _ : state) benchmark::DoNotOptimize(model(x).data());
  set_flops(state, mlp_flops);
}

/// The same network hand-written on the kernels: buffers allocated once, weights already in the
/// compute dtype, one conversion of the input.
template <class P>
void BM_mlp_handwritten(benchmark::State& state) {
  use_threads(state);
  using C = typename P::compute_dtype;
  mlp<P> model;  // only for its weights
  const auto& l0 = model.template layer<0>();
  const auto& l1 = model.template layer<1>();
  const auto& l2 = model.template layer<2>();
  const auto x = input<Tensor<float, dynamic, 784>>(mlp_batch);
  std::vector<C> x_c(x.size()), h0(mlp_batch * 1024), h1(mlp_batch * 1024), logits(mlp_batch * 10);
  std::vector<float> acc(mlp_batch * 1024), logits32(mlp_batch * 10), probabilities(mlp_batch * 10);
  const auto dense = [&](std::span<const C> in, std::size_t k, const auto& layer, std::size_t units,
                         kernels::activation a, std::span<C> out) {
    kernels::gemm(kernels::transpose::no, kernels::transpose::no, mlp_batch, units, k, 1.0f, in.data(), k,
                  layer.kernel.compute_value().data(), units, 0.0f, acc.data(), units);
    kernels::bias_activation<C>(std::span(acc).first(mlp_batch * units), layer.bias.compute_value().values(), a, out,
                                units);
  };
  for (auto _ : state) {
    convert<float, C>(x.values(), std::span(x_c));
    dense(x_c, 784, l0, 1024, kernels::activation::relu, h0);
    dense(h0, 1024, l1, 1024, kernels::activation::relu, h1);
    dense(h1, 1024, l2, 10, kernels::activation::linear, logits);
    convert<C, float>(logits, std::span(logits32));
    kernels::softmax_rows<float>(logits32, probabilities, 10);
    benchmark::DoNotOptimize(probabilities.data());
  }
  set_flops(state, mlp_flops);
}

template <class P>
void BM_mlp_runtime_model(benchmark::State& state) {
  use_threads(state);
  RuntimeModel model = RuntimeModel::from_config(mlp<P>().get_config());
  const auto x = input<Tensor<float, dynamic, 784>>(mlp_batch);
  const AnyTensor any(x);
  for (auto _ : state) benchmark::DoNotOptimize(model(any).size());
  set_flops(state, mlp_flops);
}

// conv1 26x26x32 (k=9), conv2 11x11x64 (k=288), dense 1600x128, 128x10
constexpr double cnn_flops = 2.0 * cnn_batch * (26.0 * 26 * 32 * 9 + 11.0 * 11 * 64 * 288 + 1600.0 * 128 + 128.0 * 10);

template <class P>
void BM_cnn_sequential(benchmark::State& state) {
  use_threads(state);
  cnn<P> model;
  const auto x = input<Tensor<float, dynamic, 28, 28, 1>>(cnn_batch);
  for (auto _ : state) benchmark::DoNotOptimize(model(x).data());
  set_flops(state, cnn_flops);
}

/// The CNN hand-written on the kernels, every buffer allocated once.
template <class P>
void BM_cnn_handwritten(benchmark::State& state) {
  use_threads(state);
  using C = typename P::compute_dtype;
  cnn<P> model;  // only for its weights
  const auto x = input<Tensor<float, dynamic, 28, 28, 1>>(cnn_batch);
  const detail::conv_geometry g1{cnn_batch, 28, 28, 1, 3, 3, 1, 1, false};
  const detail::conv_geometry p1{cnn_batch, 26, 26, 32, 2, 2, 2, 2, false};
  const detail::conv_geometry g2{cnn_batch, 13, 13, 32, 3, 3, 1, 1, false};
  const detail::conv_geometry p2{cnn_batch, 11, 11, 64, 2, 2, 2, 2, false};
  std::vector<C> x_c(x.size()), columns(cnn_batch * 26 * 26 * 288), c1(cnn_batch * 26 * 26 * 32),
      m1(cnn_batch * 13 * 13 * 32), c2(cnn_batch * 11 * 11 * 64), m2(cnn_batch * 5 * 5 * 64), d1(cnn_batch * 128),
      logits(cnn_batch * 10);
  std::vector<float> acc(cnn_batch * 26 * 26 * 64), logits32(cnn_batch * 10), probabilities(cnn_batch * 10);
  const auto gemm_layer = [&](std::span<const C> in, std::size_t rows, std::size_t k, const auto& layer,
                              std::size_t units, kernels::activation a, std::span<C> out) {
    kernels::gemm(kernels::transpose::no, kernels::transpose::no, rows, units, k, 1.0f, in.data(), k,
                  layer.kernel.compute_value().data(), units, 0.0f, acc.data(), units);
    kernels::bias_activation<C>(std::span(acc).first(rows * units), layer.bias.compute_value().values(), a, out, units);
  };
  for (auto _ : state) {
    convert<float, C>(x.values(), std::span(x_c));
    detail::im2col<C>(x_c, g1, std::span(columns).first(cnn_batch * 26 * 26 * 9));
    gemm_layer(std::span(columns).first(cnn_batch * 26 * 26 * 9), cnn_batch * 26 * 26, 9, model.template layer<0>(), 32,
               kernels::activation::relu, c1);
    detail::max_pool2d<C>(c1, p1, m1);
    detail::im2col<C>(m1, g2, std::span(columns).first(cnn_batch * 11 * 11 * 288));
    gemm_layer(std::span(columns).first(cnn_batch * 11 * 11 * 288), cnn_batch * 11 * 11, 288, model.template layer<2>(),
               64, kernels::activation::relu, c2);
    detail::max_pool2d<C>(c2, p2, m2);
    gemm_layer(m2, cnn_batch, 1600, model.template layer<5>(), 128, kernels::activation::relu, d1);
    gemm_layer(d1, cnn_batch, 128, model.template layer<6>(), 10, kernels::activation::linear, logits);
    convert<C, float>(logits, std::span(logits32));
    kernels::softmax_rows<float>(logits32, probabilities, 10);
    benchmark::DoNotOptimize(probabilities.data());
  }
  set_flops(state, cnn_flops);
}

/// A layer whose call reads one 4096-float weight through the call context and sums it: when the
/// compute dtype is the variable dtype the read is a reference, so this must run as fast as
/// summing a plain buffer (BM_weight_read_plain_buffer).
template <class Policy>
struct WeightSum : Layer<WeightSum<Policy>, Policy> {
  using base = Layer<WeightSum<Policy>, Policy>;
  typename base::template weight_t<4096> w;
  template <class X>
  void build(const X&) {
    w = this->template add_weight<4096>("w", initializers::ones{});
  }
  template <class X>
  float call(const call_context<Policy>& context, const X&) {
    return sum<typename base::compute_dtype>(context.read(w).values());
  }
  template <class Self>
  static auto weights_of(Self& self) {
    return std::tie(self.w);
  }
};

void BM_weight_read_in_call(benchmark::State& state) {
  WeightSum<policies::float32> layer;
  const Tensor<float, 1> x({0.0f});
  for (auto _ : state) benchmark::DoNotOptimize(layer(x));
}

void BM_weight_read_plain_buffer(benchmark::State& state) {
  const std::vector<float> w(4096, 1.0f);
  for (auto _ : state) benchmark::DoNotOptimize(sum(std::span<const float>(w)));
}

/// Threads 1 and 2, and a "min" statistic for --benchmark_repetitions: on a shared machine the
/// fastest repetition is the best estimate of a pass's own cost (the others add interference).
void model_settings(benchmark::internal::Benchmark* b) {
  b->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
  b->ComputeStatistics("min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
}

}  // namespace

BENCHMARK(BM_mlp_sequential<policies::float32>)->Apply(model_settings);
BENCHMARK(BM_mlp_handwritten<policies::float32>)->Apply(model_settings);
BENCHMARK(BM_mlp_runtime_model<policies::float32>)->Apply(model_settings);
BENCHMARK(BM_mlp_sequential<policies::mixed_bfloat16>)->Apply(model_settings);
BENCHMARK(BM_mlp_handwritten<policies::mixed_bfloat16>)->Apply(model_settings);
BENCHMARK(BM_mlp_runtime_model<policies::mixed_bfloat16>)->Apply(model_settings);
BENCHMARK(BM_mlp_sequential<policies::mixed_float16>)->Apply(model_settings);
BENCHMARK(BM_mlp_handwritten<policies::mixed_float16>)->Apply(model_settings);
BENCHMARK(BM_mlp_runtime_model<policies::mixed_float16>)->Apply(model_settings);
BENCHMARK(BM_cnn_sequential<policies::float32>)->Apply(model_settings);
BENCHMARK(BM_cnn_handwritten<policies::float32>)->Apply(model_settings);
BENCHMARK(BM_cnn_sequential<policies::mixed_bfloat16>)->Apply(model_settings);
BENCHMARK(BM_cnn_handwritten<policies::mixed_bfloat16>)->Apply(model_settings);
BENCHMARK(BM_cnn_sequential<policies::mixed_float16>)->Apply(model_settings);
BENCHMARK(BM_cnn_handwritten<policies::mixed_float16>)->Apply(model_settings);

BENCHMARK(BM_weight_read_in_call);
BENCHMARK(BM_weight_read_plain_buffer);

BENCHMARK_MAIN();
