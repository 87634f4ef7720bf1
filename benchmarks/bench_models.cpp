// Forward passes: an MLP 784-1024-1024-10 (batch 256) and a small CNN (batch 64) under float32,
// mixed_bfloat16 and mixed_float16, as a compile-time Sequential and hand-written on the same
// kernels with preallocated buffers (the abstraction's cost), and the runtime model; and a
// weight read inside call against summing a plain buffer (a same-dtype read costs nothing); and
// the MLP quantized to int8.
// benchmarks/torch_models.py times the same networks in PyTorch. The networks are bench_networks.hpp's.
#include "bench_common.hpp"
#include "bench_networks.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <span>
#include <type_traits>
#include <vector>

#include <mixprec/kernels/gemm.hpp>
#include <mixprec/kernels/reduce.hpp>
#include <mixprec/layers.hpp>
#include <mixprec/models.hpp>

using namespace mixprec;

namespace {

using bench::cnn;
using bench::cnn_batch;
using bench::cnn_flops;
using bench::mlp;
using bench::mlp_batch;
using bench::mlp_flops;

template <class X>
X input(std::size_t batch) {
  return bench::network_input<X>(batch);
}

/// The benchmark's argument is the kernels' thread count: 1 shows the abstraction's cost without
/// the scheduling noise of a thread pool on a shared machine, 2 uses both cores.
void use_threads(const benchmark::State& state) { kernels::set_num_threads(static_cast<std::size_t>(state.range(0))); }

void set_flops(benchmark::State& state, double flops_per_pass) {
  state.counters["GFLOP/s"] = benchmark::Counter(flops_per_pass * 1e-9 * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate);
}

/// A layer's kernel (k x units) packed once for products computing in C, as the library's
/// inference calls keep it.
template <class C, class Layer>
kernels::packed_b<C> packed_kernel(const Layer& layer, std::size_t k, std::size_t units) {
  return kernels::pack_b<C>(kernels::transpose::no, k, units, layer.kernel.value().values(), units);
}

/// A Dense layer by hand: the GEMM (its kernel packed once) accumulates in float32 (a float32
/// output is its own accumulator, as in the library; 16-bit outputs use `scratch`), then the fused
/// bias + activation epilogue rounds once to C.
template <class C, class Layer>
void dense_by_hand(std::span<const C> in, std::size_t rows, const kernels::packed_b<C>& kernel, const Layer& layer,
                   kernels::activation a, std::span<C> out, std::span<float> scratch) {
  const std::size_t units = kernel.n();
  const std::span<float> acc = [&] {
    if constexpr (std::is_same_v<C, float>) return out.first(rows * units);
    else return scratch.first(rows * units);
  }();
  kernels::gemm(kernels::transpose::no, rows, 1.0f, in.data(), kernel.k(), kernel, 0.0f, acc.data(), units);
  kernels::bias_activation<C>(acc, layer.bias.compute_value().values(), a, out.first(rows * units), units);
}

/// The MLP hand-written on the kernels: buffers allocated once, kernels packed once (taken from a
/// Sequential, so both compute the same thing), one conversion of the input.
template <class P>
class handwritten_mlp {
  using C = typename P::compute_dtype;

 public:
  explicit handwritten_mlp(const mlp<P>& model)
      : model_(model),
        kernels_{packed_kernel<C>(model.template layer<0>(), 784, 1024),
                 packed_kernel<C>(model.template layer<1>(), 1024, 1024),
                 packed_kernel<C>(model.template layer<2>(), 1024, 10)} {}

  const float* operator()(const Tensor<float, dynamic, 784>& x) {
    kernels::convert<float, C>(x.values(), std::span(x_c_));
    dense(x_c_, kernels_[0], model_.template layer<0>(), kernels::activation::relu, h0_);
    dense(h0_, kernels_[1], model_.template layer<1>(), kernels::activation::relu, h1_);
    dense(h1_, kernels_[2], model_.template layer<2>(), kernels::activation::linear, logits_);
    kernels::convert<C, float>(logits_, std::span(logits32_));
    kernels::softmax_rows<float>(logits32_, probabilities_, 10);
    return probabilities_.data();
  }

 private:
  template <class Layer>
  void dense(std::span<const C> in, const kernels::packed_b<C>& kernel, const Layer& layer, kernels::activation a,
             std::span<C> out) {
    dense_by_hand<C>(in, mlp_batch, kernel, layer, a, out, acc_);
  }

  const mlp<P>& model_;
  kernels::packed_b<C> kernels_[3];
  std::vector<C> x_c_ = std::vector<C>(mlp_batch * 784), h0_ = std::vector<C>(mlp_batch * 1024),
                 h1_ = std::vector<C>(mlp_batch * 1024), logits_ = std::vector<C>(mlp_batch * 10);
  std::vector<float> acc_ = std::vector<float>(mlp_batch * 1024), logits32_ = std::vector<float>(mlp_batch * 10),
                     probabilities_ = std::vector<float>(mlp_batch * 10);
};

/// The CNN hand-written on the kernels, every buffer allocated once.
template <class P>
class handwritten_cnn {
  using C = typename P::compute_dtype;
  static constexpr detail::conv_geometry g1{cnn_batch, 28, 28, 1, 3, 3, 1, 1, false};
  static constexpr detail::conv_geometry p1{cnn_batch, 26, 26, 32, 2, 2, 2, 2, false};
  static constexpr detail::conv_geometry g2{cnn_batch, 13, 13, 32, 3, 3, 1, 1, false};
  static constexpr detail::conv_geometry p2{cnn_batch, 11, 11, 64, 2, 2, 2, 2, false};

 public:
  explicit handwritten_cnn(const cnn<P>& model)
      : model_(model),
        kernels_{packed_kernel<C>(model.template layer<0>(), g1.patch(), 32),
                 packed_kernel<C>(model.template layer<2>(), g2.patch(), 64),
                 packed_kernel<C>(model.template layer<5>(), 1600, 128),
                 packed_kernel<C>(model.template layer<6>(), 128, 10)} {}

  const float* operator()(const Tensor<float, dynamic, 28, 28, 1>& x) {
    kernels::convert<float, C>(x.values(), std::span(x_c_));
    conv(x_c_, g1, kernels_[0], model_.template layer<0>(), c1_);
    layer_kinds::max_pooling2d::pool<C>(c1_, p1, m1_);
    conv(m1_, g2, kernels_[1], model_.template layer<2>(), c2_);
    layer_kinds::max_pooling2d::pool<C>(c2_, p2, m2_);
    dense(m2_, cnn_batch, kernels_[2], model_.template layer<5>(), kernels::activation::relu, d1_);
    dense(d1_, cnn_batch, kernels_[3], model_.template layer<6>(), kernels::activation::linear, logits_);
    kernels::convert<C, float>(logits_, std::span(logits32_));
    kernels::softmax_rows<float>(logits32_, probabilities_, 10);
    return probabilities_.data();
  }

 private:
  template <class Layer>
  void dense(std::span<const C> in, std::size_t rows, const kernels::packed_b<C>& kernel, const Layer& layer,
             kernels::activation a, std::span<C> out) {
    dense_by_hand<C>(in, rows, kernel, layer, a, out, acc_);
  }
  template <class Layer>
  void conv(std::span<const C> in, const detail::conv_geometry& g, const kernels::packed_b<C>& kernel,
            const Layer& layer, std::span<C> out) {
    const std::size_t rows = g.batch * g.out_height() * g.out_width();
    const auto columns = std::span(columns_).first(rows * g.patch());
    detail::im2col<C>(in, g, columns);
    dense(columns, rows, kernel, layer, kernels::activation::relu, out);
  }

  const cnn<P>& model_;
  kernels::packed_b<C> kernels_[4];
  std::vector<C> x_c_ = std::vector<C>(cnn_batch * 28 * 28), columns_ = std::vector<C>(cnn_batch * 11 * 11 * 288),
                 c1_ = std::vector<C>(cnn_batch * 26 * 26 * 32), m1_ = std::vector<C>(cnn_batch * 13 * 13 * 32),
                 c2_ = std::vector<C>(cnn_batch * 11 * 11 * 64), m2_ = std::vector<C>(cnn_batch * 5 * 5 * 64),
                 d1_ = std::vector<C>(cnn_batch * 128), logits_ = std::vector<C>(cnn_batch * 10);
  std::vector<float> acc_ = std::vector<float>(cnn_batch * 26 * 26 * 32), logits32_ = std::vector<float>(cnn_batch * 10),
                     probabilities_ = std::vector<float>(cnn_batch * 10);
};

/// Network N under policy P: its Sequential, input, FLOPs and hand-written twin.
template <template <class> class Network, class P>
struct model_case;
template <class P>
struct model_case<mlp, P> {
  using input_type = Tensor<float, dynamic, 784>;
  static constexpr std::size_t batch = mlp_batch;
  static constexpr double flops = mlp_flops;
  using handwritten = handwritten_mlp<P>;
};
template <class P>
struct model_case<cnn, P> {
  using input_type = Tensor<float, dynamic, 28, 28, 1>;
  static constexpr std::size_t batch = cnn_batch;
  static constexpr double flops = cnn_flops;
  using handwritten = handwritten_cnn<P>;
};

template <template <class> class Network, class P>
void BM_sequential(benchmark::State& state) {
  using M = model_case<Network, P>;
  use_threads(state);
  Network<P> model;
  const auto x = input<typename M::input_type>(M::batch);
  for (auto _ : state) benchmark::DoNotOptimize(model(x).data());
  set_flops(state, M::flops);
}

template <template <class> class Network, class P>
void BM_handwritten(benchmark::State& state) {
  using M = model_case<Network, P>;
  use_threads(state);
  const Network<P> model;  // only for its weights
  typename M::handwritten network(model);
  const auto x = input<typename M::input_type>(M::batch);
  for (auto _ : state) benchmark::DoNotOptimize(network(x));
  set_flops(state, M::flops);
}

/// The same network after model.quantize("int8"): its Dense layers run int8 x int8 products
/// (the peer: PyTorch's quantize_dynamic of nn.Linear, torch_models.py).
template <template <class> class Network, class P>
void BM_sequential_int8(benchmark::State& state) {
  using M = model_case<Network, P>;
  use_threads(state);
  Network<P> model;
  model.quantize("int8");
  const auto x = input<typename M::input_type>(M::batch);
  for (auto _ : state) benchmark::DoNotOptimize(model(x).data());
  set_flops(state, M::flops);
}

template <template <class> class Network, class P>
void BM_runtime_model(benchmark::State& state) {
  using M = model_case<Network, P>;
  use_threads(state);
  RuntimeModel model = RuntimeModel::from_config(Network<P>().get_config());
  const AnyTensor x(input<typename M::input_type>(M::batch));
  for (auto _ : state) benchmark::DoNotOptimize(model(x).size());
  set_flops(state, M::flops);
}

/// The abstraction's cost, measured in pairs: each iteration runs the Sequential and its
/// hand-written twin back to back (alternating which goes first) and times each pass, so that
/// the machine's slow phases hit both alike. Reports the median pass of each and the median of
/// the per-pair ratios.
template <template <class> class Network, class P>
void BM_sequential_over_handwritten(benchmark::State& state) {
  using M = model_case<Network, P>;
  using clock = std::chrono::steady_clock;
  use_threads(state);
  Network<P> model;
  typename M::handwritten network(model);
  const auto x = input<typename M::input_type>(M::batch);
  std::vector<double> sequential, handwritten;
  bool sequential_first = true;
  const auto time = [](auto&& pass) {
    const auto start = clock::now();
    pass();
    return std::chrono::duration<double, std::milli>(clock::now() - start).count();
  };
  for (auto _ : state) {
    const auto run_sequential = [&] { sequential.push_back(time([&] { benchmark::DoNotOptimize(model(x).data()); })); };
    const auto run_handwritten = [&] { handwritten.push_back(time([&] { benchmark::DoNotOptimize(network(x)); })); };
    if (sequential_first) {
      run_sequential();
      run_handwritten();
    } else {
      run_handwritten();
      run_sequential();
    }
    sequential_first = !sequential_first;
  }
  const auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  std::vector<double> ratios(sequential.size());
  for (std::size_t i = 0; i < ratios.size(); ++i) ratios[i] = sequential[i] / handwritten[i];
  state.counters["sequential_ms"] = median(sequential);
  state.counters["handwritten_ms"] = median(handwritten);
  state.counters["ratio"] = median(ratios);
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
    return kernels::sum<typename base::compute_dtype>(context.read(w).values());
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
  for (auto _ : state) benchmark::DoNotOptimize(kernels::sum(std::span<const float>(w)));
}

/// Threads 1 and 2, and a "min" statistic for --benchmark_repetitions: on a shared machine the
/// fastest repetition is the best estimate of a pass's own cost (the others add interference).
void model_settings(benchmark::internal::Benchmark* b) {
  b->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
  b->ComputeStatistics("min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
}

/// Threads 1 and 2, with about a hundred pairs per case.
void pair_settings(benchmark::internal::Benchmark* b) {
  b->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->MinTime(3.0);
}

}  // namespace

BENCHMARK(BM_sequential<mlp, policies::float32>)->Name("mlp/sequential/float32")->Apply(model_settings);
BENCHMARK(BM_handwritten<mlp, policies::float32>)->Name("mlp/handwritten/float32")->Apply(model_settings);
BENCHMARK(BM_runtime_model<mlp, policies::float32>)->Name("mlp/runtime_model/float32")->Apply(model_settings);
BENCHMARK(BM_sequential_over_handwritten<mlp, policies::float32>)->Name("mlp/sequential_over_handwritten/float32")->Apply(pair_settings);
BENCHMARK(BM_sequential<mlp, policies::mixed_bfloat16>)->Name("mlp/sequential/mixed_bfloat16")->Apply(model_settings);
BENCHMARK(BM_handwritten<mlp, policies::mixed_bfloat16>)->Name("mlp/handwritten/mixed_bfloat16")->Apply(model_settings);
BENCHMARK(BM_runtime_model<mlp, policies::mixed_bfloat16>)->Name("mlp/runtime_model/mixed_bfloat16")->Apply(model_settings);
BENCHMARK(BM_sequential_over_handwritten<mlp, policies::mixed_bfloat16>)->Name("mlp/sequential_over_handwritten/mixed_bfloat16")->Apply(pair_settings);
BENCHMARK(BM_sequential_int8<mlp, policies::float32>)->Name("mlp/sequential_int8/float32")->Apply(model_settings);
BENCHMARK(BM_sequential_int8<mlp, policies::mixed_bfloat16>)->Name("mlp/sequential_int8/mixed_bfloat16")->Apply(model_settings);
BENCHMARK(BM_sequential<mlp, policies::mixed_float16>)->Name("mlp/sequential/mixed_float16")->Apply(model_settings);
BENCHMARK(BM_handwritten<mlp, policies::mixed_float16>)->Name("mlp/handwritten/mixed_float16")->Apply(model_settings);
BENCHMARK(BM_runtime_model<mlp, policies::mixed_float16>)->Name("mlp/runtime_model/mixed_float16")->Apply(model_settings);
BENCHMARK(BM_sequential_over_handwritten<mlp, policies::mixed_float16>)->Name("mlp/sequential_over_handwritten/mixed_float16")->Apply(pair_settings);
BENCHMARK(BM_sequential<cnn, policies::float32>)->Name("cnn/sequential/float32")->Apply(model_settings);
BENCHMARK(BM_handwritten<cnn, policies::float32>)->Name("cnn/handwritten/float32")->Apply(model_settings);
BENCHMARK(BM_runtime_model<cnn, policies::float32>)->Name("cnn/runtime_model/float32")->Apply(model_settings);
BENCHMARK(BM_sequential_over_handwritten<cnn, policies::float32>)->Name("cnn/sequential_over_handwritten/float32")->Apply(pair_settings);
BENCHMARK(BM_sequential<cnn, policies::mixed_bfloat16>)->Name("cnn/sequential/mixed_bfloat16")->Apply(model_settings);
BENCHMARK(BM_handwritten<cnn, policies::mixed_bfloat16>)->Name("cnn/handwritten/mixed_bfloat16")->Apply(model_settings);
BENCHMARK(BM_runtime_model<cnn, policies::mixed_bfloat16>)->Name("cnn/runtime_model/mixed_bfloat16")->Apply(model_settings);
BENCHMARK(BM_sequential_over_handwritten<cnn, policies::mixed_bfloat16>)->Name("cnn/sequential_over_handwritten/mixed_bfloat16")->Apply(pair_settings);
BENCHMARK(BM_sequential<cnn, policies::mixed_float16>)->Name("cnn/sequential/mixed_float16")->Apply(model_settings);
BENCHMARK(BM_handwritten<cnn, policies::mixed_float16>)->Name("cnn/handwritten/mixed_float16")->Apply(model_settings);
BENCHMARK(BM_runtime_model<cnn, policies::mixed_float16>)->Name("cnn/runtime_model/mixed_float16")->Apply(model_settings);
BENCHMARK(BM_sequential_over_handwritten<cnn, policies::mixed_float16>)->Name("cnn/sequential_over_handwritten/mixed_float16")->Apply(pair_settings);
BENCHMARK(BM_weight_read_in_call);
BENCHMARK(BM_weight_read_plain_buffer);

BENCHMARK_MAIN();
