// Layers: policies as types, autocast of inputs (nested), AutoCastVariable, add_weight,
// initializers, regularizers, constants (keras-semantics.md section 5, seed 000).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <new>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/hana/define_struct.hpp>

#include <mixprec/layers.hpp>
#include <mixprec/layers/detail/scratch.hpp>

using namespace mixprec;

namespace {

template <class T, std::size_t N>
Tensor<T, dynamic, N> filled(std::size_t batch, float start = 0.0f, float step = 0.25f) {
  Tensor<T, dynamic, N> t(batch);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = cast<T>(start + step * static_cast<float>(i));
  return t;
}

/// Seed 000's MyLayer: two tensor arguments, each + 1.
template <class Policy>
struct MyLayer : Layer<MyLayer<Policy>, Policy> {
  template <class A, class B>
  auto call(const call_context<Policy>& context, const A& a, const B& b) {
    return std::make_pair(a + context.constant_like(a, 1.0), b + context.constant_like(b, 1.0));
  }
};

/// Seed 000's NonAutoCastingLayer: returns its input as it came.
template <class Policy>
struct NonAutoCastingLayer : Layer<NonAutoCastingLayer<Policy>, Policy, /*Autocast=*/false> {
  template <class X>
  X call(const call_context<Policy>&, const X& x) {
    return x;
  }
};

/// Seed 000's layer with an autocast weight x and an opted-out weight y.
template <class Policy>
struct TwoWeights : Layer<TwoWeights<Policy>, Policy> {
  using base = Layer<TwoWeights<Policy>, Policy>;
  typename base::template weight_t<1> x;
  typename base::template plain_weight_t<1> y;
  template <class In>
  void build(const In&) {
    x = this->template add_weight<1>("x", initializers::ones{});
    y = this->template add_weight<1>("y", initializers::ones{}, no_autocast{});
  }
  /// What the call sees: the dtypes of both weights' reads.
  template <class In>
  auto call(const call_context<Policy>& context, const In&) {
    return std::pair{context.read(x), context.read(y)};
  }
  template <class Self>
  static auto weights_of(Self& self) {
    return std::tie(self.x, self.y);
  }
};

/// Seed 000's MyDense with a random term, made in the compute dtype.
struct MyDenseWithNoise : Layer<MyDenseWithNoise, policies::mixed_float16> {
  weight_t<dynamic, 10> kernel;
  template <class X>
  void build(const X&) {
    kernel = this->template add_weight<dynamic, 10>("kernel", {X::row_size, 10});
  }
  template <class X>
  auto call(const call_context<policies::mixed_float16>& context, const X& x) {
    Tensor<float16, dynamic, 10> y(x.batch());
    detail::dense_forward<float16>(x.values(), x.batch(), X::row_size, context.read(kernel).values(), {}, 10,
                                   kernels::activation::linear, y.values());
    const auto random = context.random_normal_like(y, 0.0, 1.0, 7);  // float16, like y
    return y + random;
  }
};

template <class T>
struct Pair {
  BOOST_HANA_DEFINE_STRUCT(Pair, (Tensor<T, dynamic, 3>, values), (Tensor<std::int32_t, dynamic, 3>, ids));
};

/// Sees what its call receives.
template <class Policy>
struct Probe : Layer<Probe<Policy>, Policy> {
  template <class... Args>
  std::tuple<Args...> call(const call_context<Policy>&, const Args&... args) {
    return {args...};
  }
};

}  // namespace

TEST_CASE("Tensor construction: zero-filled, uninitialized for outputs, from values with a size check") {
  const Tensor<bfloat16, dynamic, 4> zeros(3);
  CHECK(zeros.size() == 12);
  for (std::size_t i = 0; i < zeros.size(); ++i) CHECK(zeros[i].to_bits() == 0);
  Tensor<float, dynamic, 4> output(3, uninitialized);
  CHECK(output.batch() == 3);
  CHECK(output.size() == 12);
  const std::vector<float> values{1, 2, 3, 4, 5, 6, 7, 8};
  const Tensor<float, dynamic, 4> from_vector(values);
  CHECK(from_vector.batch() == 2);
  CHECK(from_vector[7] == 8.0f);
  CHECK_THROWS_WITH_AS((Tensor<float, dynamic, 4>(std::vector<float>{1, 2, 3})),
                       "Tensor: 3 values do not fill a whole number of 4-element rows.", std::invalid_argument);
}

TEST_CASE("a layer's dtype is its variable dtype; compute and variable dtypes come from the policy") {
  using D16 = Dense<4, policies::mixed_float16>;
  static_assert(std::is_same_v<D16::dtype, float> && std::is_same_v<D16::variable_dtype, float>);
  static_assert(std::is_same_v<D16::compute_dtype, float16>);
  CHECK(to_dtype_policy<D16::policy>() == DTypePolicy("mixed_float16"));
  CHECK(D16().dtype_policy() == DTypePolicy("mixed_float16"));
  using D = Dense<4>;  // standalone without a policy: float32, Keras' default global policy
  static_assert(std::is_same_v<D::compute_dtype, float> && std::is_same_v<D::policy, policies::float32>);
  CHECK(D().dtype_policy().name() == "float32");
}

TEST_CASE_TEMPLATE("Dense output and weight dtypes under every float policy", P, policies::float16, policies::bfloat16,
                   policies::float32, policies::float64, policies::mixed_float16, policies::mixed_bfloat16,
                   Policy<float, bfloat16>, Policy<bfloat16, double>) {
  Dense<3, P> layer;
  const auto x = filled<double, 5>(2);
  auto y = layer(x);
  static_assert(std::is_same_v<decltype(y), Tensor<typename P::compute_dtype, dynamic, 3>>);
  static_assert(std::is_same_v<typename decltype(layer.kernel)::true_dtype, typename P::variable_dtype>);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(layer.kernel.value())>,
                               Tensor<typename P::variable_dtype, dynamic, 3>>);
  CHECK(layer.kernel.shape() == std::vector<std::size_t>{5, 3});
  CHECK(layer.bias.shape() == std::vector<std::size_t>{3});
  CHECK(y.batch() == 2);
}

TEST_CASE("every floating tensor argument is cast, nested ones included; masks and ids are not") {
  // Seed 000's "Bug! b will not be casted" cannot happen: both arguments arrive as float64.
  MyLayer<policies::float64> layer;
  const Tensor<float, dynamic, 1> a({1.0f}), b({1.0f});
  const auto [x, y] = layer(a, b);
  static_assert(std::is_same_v<decltype(x), const Tensor<double, dynamic, 1>>);
  static_assert(std::is_same_v<decltype(y), const Tensor<double, dynamic, 1>>);
  CHECK(x[0] == 2.0);
  CHECK(y[0] == 2.0);

  Probe<policies::mixed_bfloat16> probe;
  const auto values = filled<float, 3>(2);
  const Tensor<std::int32_t, dynamic, 3> ids({1, 2, 3, 4, 5, 6});
  const Tensor<bool, dynamic, 3> mask({true, false, true, false, true, false});
  const auto nested = std::make_tuple(values, std::make_pair(mask, values), std::array{values, values});
  const auto [got_values, got_ids, got_nested, got_struct] = probe(values, ids, nested, Pair<float>{values, ids});
  static_assert(std::is_same_v<decltype(got_values), const Tensor<bfloat16, dynamic, 3>>);
  static_assert(std::is_same_v<decltype(got_ids), const Tensor<std::int32_t, dynamic, 3>>);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(std::get<0>(got_nested))>, Tensor<bfloat16, dynamic, 3>>);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(std::get<1>(got_nested).first)>, Tensor<bool, dynamic, 3>>);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(std::get<1>(got_nested).second)>, Tensor<bfloat16, dynamic, 3>>);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(std::get<2>(got_nested))>,
                               std::array<Tensor<bfloat16, dynamic, 3>, 2>>);
  static_assert(std::is_same_v<decltype(got_struct), const Pair<bfloat16>>);
  CHECK(got_ids == ids);
  CHECK(std::get<1>(got_nested).first == mask);
  CHECK(static_cast<float>(got_values[5]) == 1.25f);
  CHECK(static_cast<float>(got_struct.values[1]) == 0.25f);
  CHECK(got_struct.ids == ids);
}

TEST_CASE("an input already in the compute dtype is passed by reference, not copied") {
  using X = Tensor<float, dynamic, 4>;
  static_assert(std::is_same_v<autocast_t<float, X>, const X&>);
  static_assert(std::is_same_v<autocast_t<float, std::tuple<X, X>>, const std::tuple<X, X>&>);
  static_assert(std::is_same_v<autocast_t<float16, std::tuple<X, Tensor<float16, dynamic, 4>>>,
                               std::tuple<Tensor<float16, dynamic, 4>, const Tensor<float16, dynamic, 4>&>>);
  const X x(3);
  const auto& same = autocast_to<float>(x);
  CHECK(&same == &x);
}

TEST_CASE("an rvalue input reaches call as an rvalue: Flatten, Activation and Dropout reuse its buffer") {
  using X = Tensor<bfloat16, dynamic, 2, 3>;
  X x(4);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = bfloat16(static_cast<float>(i) - 10.0f);
  const X original = x;
  Flatten<policies::bfloat16> flatten;
  Activation<activations::relu, policies::bfloat16> relu;
  Dropout<policies::bfloat16> dropout(0.5);

  // An lvalue is left as it was: the layer works on a copy.
  const auto flat_copy = flatten(x);
  const auto relu_copy = relu(x);
  CHECK(x == original);
  CHECK(flat_copy.data() != x.data());
  CHECK(static_cast<float>(relu_copy[0]) == 0.0f);
  CHECK(static_cast<float>(relu_copy[23]) == 13.0f);

  // An rvalue's buffer is handed on, through the three layers, without a copy.
  const bfloat16* buffer = x.data();
  const auto flat = flatten(std::move(x));
  static_assert(std::is_same_v<decltype(flat), const Tensor<bfloat16, dynamic, 6>>);
  CHECK(flat.data() == buffer);
  CHECK(flat.values().size() == original.size());
  auto activated = relu(Tensor<bfloat16, dynamic, 6>(flat));
  const bfloat16* activated_buffer = activated.data();
  const auto kept = dropout(std::move(activated));
  CHECK(kept.data() == activated_buffer);
  for (std::size_t i = 0; i < kept.size(); ++i) CHECK(static_cast<float>(kept[i]) == static_cast<float>(relu_copy[i]));

  // An input that needs a cast is converted into a new tensor, which the layer then reuses.
  const Tensor<float, dynamic, 2, 3> wide(4);
  CHECK(flatten(wide).size() == wide.size());
}

TEST_CASE("autocast=false (Keras' NonAutoCastingLayer): the input keeps its dtype") {
  NonAutoCastingLayer<policies::float64> layer;
  const auto x = filled<float, 4>(4);
  const auto y = layer(x);
  static_assert(std::is_same_v<decltype(y), const Tensor<float, dynamic, 4>>);
  CHECK(y == x);
}

TEST_CASE("weights: true dtype outside call, compute dtype inside; experimental_autocast=false opts out") {
  TwoWeights<policies::mixed_float16> layer;
  const auto [x_in_call, y_in_call] = layer(filled<float, 1>(1));
  static_assert(std::is_same_v<decltype(x_in_call), const Tensor<float16, 1>>);  // AutoCastVariable: float16 inside
  static_assert(std::is_same_v<decltype(y_in_call), const Tensor<float, 1>>);    // opted out: float32 inside
  static_assert(std::is_same_v<decltype(layer.x)::true_dtype, float> && std::is_same_v<decltype(layer.x)::dtype, float16>);
  static_assert(std::is_same_v<decltype(layer.y)::true_dtype, float> && std::is_same_v<decltype(layer.y)::dtype, float>);
  static_assert(std::is_same_v<decltype(layer.x.value()), const Tensor<float, 1>&>);  // outside call: float32
  CHECK(static_cast<float>(x_in_call[0]) == 1.0f);
  CHECK(layer.x.value()[0] == 1.0f);
}

TEST_CASE("AutoCastVariable assignments keep the true dtype's precision (1 + eps16/2)") {
  const float eps16 = 0x1p-10f;  // float16 epsilon
  AutoCastVariable<float, float16, 1> v("v", Tensor<float, 1>({1.0f}));
  v.assign(Tensor<float, 1>({1.0f + eps16 / 2}));
  CHECK(v.value()[0] == 1.0f + eps16 / 2);                       // float32 keeps it
  CHECK(v.compute_value()[0].to_bits() == float16(1.0f).to_bits());  // the float16 read rounds to 1 (tie to even)
  v.assign_add(Tensor<float, 1>({eps16 / 2}));
  CHECK(v.value()[0] == 1.0f + eps16);
  CHECK(static_cast<float>(v.compute_value()[0]) == 1.0f + eps16);
  v.assign_sub(Tensor<float16, 1>({float16(eps16)}));
  CHECK(v.value()[0] == 1.0f);
  // Assigning in the compute dtype converts to the true dtype exactly.
  v.assign(Tensor<float16, 1>({float16(3.5f)}));
  CHECK(v.value()[0] == 3.5f);
  AutoCastVariable<float, float16, dynamic> rows("rows", Tensor<float, dynamic>({1.0f}));
  CHECK_THROWS_WITH_AS(rows.assign(Tensor<float, dynamic>({1.0f, 2.0f})),
                       "Variable 'rows': assign with 2 values, but the variable holds 1.", std::invalid_argument);
  CHECK(rows.value()[0] == 1.0f);  // unchanged
}

TEST_CASE("reading a weight: a plain reference in its own dtype, a tensor rounded on each read in another") {
  Variable<float, dynamic, 8> w("w", Tensor<float, dynamic, 8>(2));
  static_assert(std::is_same_v<decltype(w.compute_value()), const Tensor<float, dynamic, 8>&>);
  CHECK(&w.compute_value() == &w.value());
  // No compute-dtype copy is kept (Keras casts on every read): an autocast variable is as large
  // as a plain one, and its read is a new tensor that follows the true value.
  static_assert(sizeof(Variable<float, 4>) == sizeof(AutoCastVariable<float, bfloat16, 4>));
  AutoCastVariable<float, bfloat16, 4> v("v", Tensor<float, 4>({1.0f, 2.0f, 3.0f, 4.0f}));
  static_assert(std::is_same_v<decltype(v.compute_value()), Tensor<bfloat16, 4>>);
  v.values_to_update()[1] = 1.00390625f;  // 1 + 2^-8: a bfloat16 tie, to 1
  CHECK(v.compute_value()[1].to_bits() == bfloat16(1.0f).to_bits());
}

TEST_CASE("initializers: glorot_uniform bounds and reproducibility, zeros, ones, constant") {
  Dense<64> a("a"), b("b"), a_again("a");
  const auto x = filled<float, 32>(1);
  a(x);
  b(x);
  a_again(x);
  const double limit = std::sqrt(6.0 / (32 + 64));
  double sum = 0;
  for (float v : a.kernel.value().values()) {
    CHECK(std::abs(v) <= limit);
    sum += v;
  }
  CHECK(std::abs(sum / (32 * 64)) < limit / 10);  // centred
  CHECK(a.kernel.value() == a_again.kernel.value());  // seeded by the weight's path
  CHECK_FALSE(a.kernel.value() == b.kernel.value());
  for (float v : a.bias.value().values()) CHECK(v == 0.0f);
  Dense<2> constant_init("c", weight_settings{.kernel_initializer = initializers::constant{0.5},
                                              .bias_initializer = initializers::ones{}});
  constant_init(x);
  for (float v : constant_init.kernel.value().values()) CHECK(v == 0.5f);
  for (float v : constant_init.bias.value().values()) CHECK(v == 1.0f);
}

TEST_CASE("initial values are the correctly rounded draws in the variable dtype") {
  Dense<8, policies::bfloat16> narrow("same");
  Dense<8, policies::float64> wide("same");
  const auto x = filled<float, 4>(1);
  narrow(x);
  wide(x);
  for (std::size_t i = 0; i < 32; ++i)
    CHECK(narrow.kernel.value()[i].to_bits() == bfloat16(wide.kernel.value()[i]).to_bits());
}

TEST_CASE("regularizers run in the variable dtype") {
  Dense<2, policies::mixed_bfloat16> layer("r", weight_settings{.kernel_initializer = initializers::constant{0.5},
                                                                .kernel_regularizer = regularizers::l2{0.01},
                                                                .bias_regularizer = regularizers::l1{1.0}});
  layer(filled<float, 3>(1));
  static_assert(std::is_same_v<decltype(layer.kernel.regularization_loss()), float>);  // float32: the variable dtype
  CHECK(layer.kernel.regularization_loss() == doctest::Approx(0.01 * 6 * 0.25));
  CHECK(layer.regularization_loss() == doctest::Approx(0.015));
  Dense<1, policies::float16> half("h", weight_settings{.kernel_initializer = initializers::constant{300.0},
                                                       .kernel_regularizer = regularizers::l2{1.0}});
  half(filled<float, 1>(1));
  static_assert(std::is_same_v<decltype(half.kernel.regularization_loss()), float16>);
  CHECK(std::isinf(static_cast<float>(half.kernel.regularization_loss())));  // 90000 overflows float16
}

TEST_CASE("constants in the compute dtype (seed 000's MyDense with a random term)") {
  MyDenseWithNoise layer;
  const auto y = layer(filled<double, 10>(10));
  static_assert(std::is_same_v<decltype(y), const Tensor<float16, dynamic, 10>>);
  CHECK(y.batch() == 10);
  for (std::size_t i = 0; i < y.size(); ++i) CHECK(std::isfinite(static_cast<float>(y[i])));
}

TEST_CASE("scratch memory: a per-thread stack, given back when its scope ends, merged into one block") {
  using detail::scratch_arena;
  using detail::scratch_buffer;
  using detail::scratch_scope;
  // Run on a thread of its own: its arena starts empty whatever the other tests left.
  std::thread([] {
    CHECK_THROWS_WITH_AS(scratch_buffer<float>(4), doctest::Contains("outside a scratch_scope"), std::logic_error);
    const scratch_arena& arena = scratch_arena::of_this_thread();
    const auto address = [](auto span) { return reinterpret_cast<std::uintptr_t>(span.data()); };
    std::uintptr_t first_inner = 0;
    {
      const scratch_scope outer;
      const auto a = scratch_buffer<float>(100);  // 400 bytes, rounded up to 448
      CHECK(a.size() == 100);
      CHECK(address(a) % 64 == 0);
      for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i);
      {
        const scratch_scope inner;
        const auto b = scratch_buffer<double>(3);
        CHECK(address(b) == address(a) + 448);
        first_inner = address(b);
        // Past the first block (64 KiB): a new one; a and b stay where they are.
        const auto c = scratch_buffer<std::int8_t>(100000);  // 100032 bytes
        CHECK(arena.capacity() == 65536 + 100032);
        CHECK(address(c) % 64 == 0);
        CHECK((address(c) + 100000 <= address(a) || address(c) >= address(b) + 64));
        c[99999] = 1;
      }
      // The inner scope's memory is taken again from where it began.
      const scratch_scope again;
      CHECK(address(scratch_buffer<double>(3)) == first_inner);
      for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == static_cast<float>(i));
    }
    // The two blocks became one, as large as the most in use at once.
    CHECK(arena.capacity() == 448 + 64 + 100032);
    {
      const scratch_scope outer;
      const auto a = scratch_buffer<float>(100);
      const scratch_scope inner;
      scratch_buffer<double>(3);
      const auto c = scratch_buffer<std::int8_t>(100000);
      CHECK(address(c) == address(a) + 448 + 64);  // the same calls now fit in one block
    }
    CHECK(arena.capacity() == 448 + 64 + 100032);
    {
      // A size that would wrap around when rounded up is refused, and the arena still works.
      const scratch_scope scope;
      CHECK_THROWS_AS(scratch_buffer<std::int8_t>(static_cast<std::size_t>(-1) - 10), std::bad_alloc);
      CHECK_THROWS_AS(scratch_buffer<float>(static_cast<std::size_t>(-1) / 2), std::bad_alloc);
      CHECK(scratch_buffer<float>(100).size() == 100);
    }
  }).join();
}

TEST_CASE("layer settings are validated") {
  CHECK_THROWS_WITH_AS(Dropout<>(1.5), "Dropout: rate must be in [0, 1]; got 1.5.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(BatchNormalization<>("bn", 2.0), doctest::Contains("momentum must be in [0, 1]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(BatchNormalization<>("bn", 0.9, 0.0), doctest::Contains("epsilon must be positive"),
                       std::invalid_argument);
}

TEST_CASE("layers name their activations with the kernels' enum") {
  static_assert(std::is_same_v<decltype(activations::relu::kind), const kernels::activation>);
  static_assert(activations::exponential::kind == kernels::activation::exponential);
  static_assert(activations::exponential::name == "exponential");
  static_assert(activations::softmax::name == kernels::activation_name(kernels::activation::softmax));
}

// The names of the previous release still work (and warn: the project itself must not use them).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST_CASE("the deprecated activation_kind, activation_name, find_activation, activation_names and activation::exp forward to kernels::") {
  static_assert(std::is_same_v<activation_kind, kernels::activation>);
  const activation_kind kind = activation_kind::gelu;
  CHECK(mixprec::activation_name(kind) == "gelu");
  CHECK(activation_name(kind) == "gelu");  // unqualified: kernels::activation_name, found by its argument
  CHECK(find_activation("tanh") == kernels::activation::tanh);
  CHECK(find_activation("swish") == std::nullopt);
  CHECK(&mixprec::activation_names == &kernels::activation_names);
  static_assert(kernels::activation::exp == kernels::activation::exponential);
}
#pragma GCC diagnostic pop
