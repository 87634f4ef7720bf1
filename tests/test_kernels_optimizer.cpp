// Optimizer kernels on every supported target: identical bits across targets; float32 results
// equal to a scalar float reference written here in Keras' order of operations, bit for bit,
// and within a few ulp of a double reference; 16-bit variables equal to the float computation
// rounded once per stored value; hand-computed steps; Nesterov, AMSGrad and the order of weight
// decay; special values; ragged lengths and unaligned starts; every error path, with the state
// untouched after a rejected call; the double path.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <mixprec/kernels/gemm.hpp>
#include <mixprec/kernels/optimizer.hpp>
#include <mixprec/kernels/reduce.hpp>

#include "kernel_targets.hpp"

using namespace mixprec;
using mixprec::test::for_each_target;
namespace k = mixprec::kernels;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float qnan = std::numeric_limits<float>::quiet_NaN();

template <class V>
std::uint32_t bits(V x) {
  if constexpr (std::is_same_v<V, float>) return std::bit_cast<std::uint32_t>(x);
  else return x.to_bits();
}

template <class V>
std::uint32_t canonical_nan_bits() {
  if constexpr (std::is_same_v<V, float>) return 0x7FC00000u;
  else if constexpr (std::is_same_v<V, bfloat16>) return 0x7FC0u;
  else return 0x7E00u;
}

template <class V>
float wide(V x) {
  return static_cast<float>(x);
}

/// What the kernels store for the float32 result x: x rounded once to V (to nearest even, as
/// V's constructor rounds), a NaN as the canonical quiet NaN.
template <class V>
V stored(float x) {
  if constexpr (std::is_same_v<V, float>) return std::isnan(x) ? std::bit_cast<float>(canonical_nan_bits<V>()) : x;
  else return std::isnan(x) ? V::from_bits(static_cast<std::uint16_t>(canonical_nan_bits<V>())) : V(x);
}

// ---- The references: Keras' rules, one element at a time, in float32, in Keras' order --------

/// Keras' `variable - variable * wd * lr`, which C++ groups the same way: w - ((w * wd) * lr).
float decayed_reference(float w, float wd, float lr) { return wd != 0.0f ? w - w * wd * lr : w; }

template <class V>
void sgd_reference(std::span<V> w, std::span<const V> g, std::span<V> velocity, const k::sgd_step& s) {
  // The hyperparameters as float32 arithmetic reads them.
  const float lr = s.learning_rate, wd = static_cast<float>(s.weight_decay), momentum = static_cast<float>(s.momentum);
  for (std::size_t i = 0; i < w.size(); ++i) {
    const float w0 = decayed_reference(wide(w[i]), wd, lr);
    const float gi = wide(g[i]);
    if (velocity.empty()) {
      w[i] = stored<V>(w0 - gi * lr);
      continue;
    }
    velocity[i] = stored<V>(wide(velocity[i]) * momentum - gi * lr);
    const float v = wide(velocity[i]);  // read back as stored
    w[i] = stored<V>(w0 + (s.nesterov ? v * momentum - gi * lr : v));
  }
}

/// float32(beta)^float32(t), evaluated in double and rounded once (the documented rule).
float power_reference(double beta, std::int64_t iteration) {
  const float t = static_cast<float>(iteration + 1);
  return static_cast<float>(std::pow(static_cast<double>(static_cast<float>(beta)), static_cast<double>(t)));
}

template <class V>
void adam_reference(std::span<V> w, std::span<const V> g, std::span<V> m, std::span<V> v, std::span<V> v_hat,
                    const k::adam_step& s) {
  const float alpha = s.learning_rate * std::sqrt(1.0f - power_reference(s.beta_2, s.iteration)) /
                      (1.0f - power_reference(s.beta_1, s.iteration));
  const auto one_minus_beta_1 = static_cast<float>(1.0 - s.beta_1);  // Python's 1 - beta, then float32
  const auto one_minus_beta_2 = static_cast<float>(1.0 - s.beta_2);
  const float wd = static_cast<float>(s.weight_decay), epsilon = static_cast<float>(s.epsilon);
  for (std::size_t i = 0; i < w.size(); ++i) {
    const float w0 = decayed_reference(wide(w[i]), wd, s.learning_rate);
    const float gi = wide(g[i]);
    m[i] = stored<V>(wide(m[i]) + (gi - wide(m[i])) * one_minus_beta_1);
    v[i] = stored<V>(wide(v[i]) + (gi * gi - wide(v[i])) * one_minus_beta_2);
    float second_moment = wide(v[i]);
    if (!v_hat.empty()) {
      const float held = wide(v_hat[i]);
      v_hat[i] = stored<V>(std::isnan(second_moment) || second_moment > held ? second_moment : held);
      second_moment = wide(v_hat[i]);
    }
    w[i] = stored<V>(w0 - (wide(m[i]) * alpha) / (std::sqrt(second_moment) + epsilon));
  }
}

// ---- States and cases ---------------------------------------------------------------------------

/// A variable and every slot, `offset` elements of padding in front (unaligned starts).
template <class V>
struct state {
  std::size_t offset = 0, n = 0;
  std::vector<V> w, g, velocity, m, v, v_hat;

  std::span<V> at(std::vector<V>& x) { return std::span<V>(x).subspan(offset, n); }
  std::span<const V> gradient() const { return std::span<const V>(g).subspan(offset, n); }
  std::vector<std::uint32_t> all_bits() const {
    std::vector<std::uint32_t> out;
    for (const auto* x : {&w, &g, &velocity, &m, &v, &v_hat})
      for (const V& value : *x) out.push_back(bits(value));
    return out;
  }
};

/// Normal values of the given spread; with `specials`, one in 16 a random bit pattern (NaNs with
/// payloads, infinities, subnormals, huge and tiny values).
template <class V>
std::vector<V> random_values(std::size_t n, std::mt19937& rng, float spread, bool specials, bool non_negative = false) {
  std::normal_distribution<float> normal(0.0f, spread);
  std::vector<V> x(n);
  for (auto& value : x) {
    if (specials && rng() % 16 == 0) {
      if constexpr (std::is_same_v<V, float>) value = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
      else value = V::from_bits(static_cast<std::uint16_t>(rng()));
    } else {
      const float r = normal(rng);
      value = V(non_negative ? std::fabs(r) : r);
    }
  }
  return x;
}

template <class V>
state<V> random_state(std::size_t n, std::size_t offset, std::uint32_t seed, bool specials) {
  std::mt19937 rng(seed);
  state<V> s;
  s.offset = offset;
  s.n = n;
  s.w = random_values<V>(n + offset, rng, 1.0f, specials);
  s.g = random_values<V>(n + offset, rng, 1.0f, specials);
  s.velocity = random_values<V>(n + offset, rng, 0.1f, specials);
  s.m = random_values<V>(n + offset, rng, 0.1f, specials);
  s.v = random_values<V>(n + offset, rng, 0.01f, specials, true);
  s.v_hat = random_values<V>(n + offset, rng, 0.01f, specials, true);
  return s;
}

const std::vector<k::sgd_step> sgd_cases{
    {.learning_rate = 0.01f},
    {.learning_rate = 0.1f, .momentum = 0.9},
    {.learning_rate = 0.1f, .momentum = 0.9, .nesterov = true},
    {.learning_rate = 0.05f, .momentum = 0.5, .nesterov = true, .weight_decay = 0.01},
    {.learning_rate = 0.01f, .weight_decay = 0.004},
    {.learning_rate = 0.3f, .momentum = 1.0, .weight_decay = -0.1},
};

struct adam_case {
  k::adam_step step;
  bool amsgrad;
};

const std::vector<adam_case> adam_cases{
    {{}, false},
    {{.iteration = 5}, true},
    {{.learning_rate = 0.002f, .iteration = 100, .weight_decay = 0.004}, false},  // AdamW
    {{.learning_rate = 0.1f, .beta_1 = 0.0, .beta_2 = 0.5, .epsilon = 0.0, .iteration = 2}, false},
    {{.learning_rate = 0.01f, .beta_1 = 0.8, .beta_2 = 0.99, .epsilon = 1e-3, .iteration = 1000000,
      .weight_decay = 0.1},
     true},
};

template <class V>
void run_sgd(state<V>& s, const k::sgd_step& step) {
  k::sgd_update<V>(s.at(s.w), s.gradient(), step.momentum == 0.0f ? std::span<V>() : s.at(s.velocity), step);
}
template <class V>
void run_sgd_reference(state<V>& s, const k::sgd_step& step) {
  sgd_reference<V>(s.at(s.w), s.gradient(), step.momentum == 0.0f ? std::span<V>() : s.at(s.velocity), step);
}
template <class V>
void run_adam(state<V>& s, const adam_case& c) {
  k::adam_update<V>(s.at(s.w), s.gradient(), s.at(s.m), s.at(s.v), c.amsgrad ? s.at(s.v_hat) : std::span<V>(), c.step);
}
template <class V>
void run_adam_reference(state<V>& s, const adam_case& c) {
  adam_reference<V>(s.at(s.w), s.gradient(), s.at(s.m), s.at(s.v), c.amsgrad ? s.at(s.v_hat) : std::span<V>(), c.step);
}

/// g = (g * multiplier) / divisor, rounded once (clip_by_value's and scale's rules, written out).
template <class V>
void scale_reference(std::span<V> g, float multiplier, float divisor) {
  for (V& x : g) x = stored<V>(wide(x) * multiplier / divisor);
}
template <class V>
void clip_reference(std::span<V> g, float clip) {
  for (V& x : g) {
    const float value = wide(x);
    x = stored<V>(value > clip ? clip : (value < -clip ? -clip : value));
  }
}

/// Lengths around every vector width (up to 16 floats per vector on AVX3) and a few longer.
std::vector<std::size_t> test_lengths() {
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 70; ++n) lengths.push_back(n);
  for (std::size_t n : {255, 256, 257, 1000}) lengths.push_back(n);
  return lengths;
}

/// Every kernel, two steps of each case, on every length and offset: the bits of every state.
template <class V>
std::vector<std::uint32_t> all_results() {
  std::vector<std::uint32_t> out;
  std::uint32_t seed = 1;
  for (std::size_t offset = 0; offset < 4; ++offset) {
    for (std::size_t n : test_lengths()) {
      const auto initial = random_state<V>(n, offset, ++seed, true);
      for (const auto& step : sgd_cases) {
        auto s = initial;
        run_sgd(s, step);
        run_sgd(s, step);
        const auto b = s.all_bits();
        out.insert(out.end(), b.begin(), b.end());
      }
      for (const auto& c : adam_cases) {
        auto s = initial;
        run_adam(s, c);
        auto next = c;
        ++next.step.iteration;
        run_adam(s, next);
        const auto b = s.all_bits();
        out.insert(out.end(), b.begin(), b.end());
      }
      auto s = initial;
      k::clip_by_value<V>(s.at(s.g), 0.5f);
      k::scale<V>(s.at(s.w), 0.3f);
      k::scale<V>(s.at(s.m), 2.0f, 3.0f);
      const auto b = s.all_bits();
      out.insert(out.end(), b.begin(), b.end());
    }
  }
  return out;
}

template <class V>
void check_identical_on_every_target() {
  std::map<std::string, std::vector<std::uint32_t>> results;
  for_each_target([&](const std::string& target) { results[target] = all_results<V>(); });
  // References, not bindings: doctest's INFO captures them in a lambda.
  const std::string& first_target = results.begin()->first;
  const auto& expected = results.begin()->second;
  for (const auto& result : results) {
    const std::string& target = result.first;
    const auto& got = result.second;
    INFO(target, " against ", first_target);
    REQUIRE(got.size() == expected.size());
    CHECK(std::mismatch(got.begin(), got.end(), expected.begin()).first == got.end());
  }
}

/// Three steps of every case against the reference, bit for bit, on every target.
template <class V>
void check_against_the_float_reference() {
  for_each_target([&](const std::string&) {
    std::uint32_t seed = 100;
    for (std::size_t offset : {0, 3}) {
      for (std::size_t n : {1, 7, 8, 9, 31, 33, 64, 100, 1000}) {
        for (bool specials : {false, true}) {
          const auto initial = random_state<V>(n, offset, ++seed, specials);
          INFO("n = ", n, ", offset = ", offset, ", specials = ", specials);
          for (const auto& step : sgd_cases) {
            auto got = initial, want = initial;
            for (int i = 0; i < 3; ++i) {
              run_sgd(got, step);
              run_sgd_reference(want, step);
            }
            INFO("sgd: momentum ", step.momentum, ", nesterov ", step.nesterov, ", weight decay ", step.weight_decay);
            REQUIRE(got.all_bits() == want.all_bits());
          }
          for (auto c : adam_cases) {
            auto got = initial, want = initial;
            for (int i = 0; i < 3; ++i, ++c.step.iteration) {
              run_adam(got, c);
              run_adam_reference(want, c);
            }
            INFO("adam: iteration ", c.step.iteration, ", amsgrad ", c.amsgrad);
            REQUIRE(got.all_bits() == want.all_bits());
          }
          auto got = initial, want = initial;
          k::clip_by_value<V>(got.at(got.g), 0.25f);
          clip_reference<V>(want.at(want.g), 0.25f);
          k::scale<V>(got.at(got.w), 1.7f);
          scale_reference<V>(want.at(want.w), 1.7f, 1.0f);
          k::scale<V>(got.at(got.m), 0.5f, 3.0f);
          scale_reference<V>(want.at(want.m), 0.5f, 3.0f);
          REQUIRE(got.all_bits() == want.all_bits());
        }
      }
    }
  });
}

/// Runs `call`, which must throw std::invalid_argument with `message`, and checks that the
/// state did not change.
template <class V>
void check_rejected(state<V>& s, const std::function<void()>& call, const std::string& message) {
  const auto before = s.all_bits();
  CHECK_THROWS_WITH_AS(call(), message.c_str(), std::invalid_argument);
  CHECK(s.all_bits() == before);
}

}  // namespace

TEST_CASE("optimizer kernels return the same bits on every target") {
  check_identical_on_every_target<float>();
  check_identical_on_every_target<bfloat16>();
  check_identical_on_every_target<float16>();
}

TEST_CASE("float32 arithmetic in Keras' order, bit for bit; 16-bit variables rounded once per stored value") {
  check_against_the_float_reference<float>();
  check_against_the_float_reference<bfloat16>();
  check_against_the_float_reference<float16>();
}

/// Variables large enough to be updated in blocks on the kernels' threads, on 1, 2 and 3
/// threads, against the reference bit for bit.
template <class V>
void check_blocked_updates() {
  const std::size_t n = (std::size_t{1} << 17) + 3 * 32768 + 5;  // 7 blocks, the last one short
  const auto initial = random_state<V>(n, 3, 77, true);
  for (std::size_t threads : {1, 2, 3}) {
    k::set_num_threads(threads);
    INFO("threads: ", threads);
    for (const auto& step : {sgd_cases.front(), sgd_cases.back()}) {
      auto got = initial, want = initial;
      run_sgd(got, step);
      run_sgd_reference(want, step);
      REQUIRE(got.all_bits() == want.all_bits());
    }
    for (const auto& c : adam_cases) {
      auto got = initial, want = initial;
      run_adam(got, c);
      run_adam_reference(want, c);
      REQUIRE(got.all_bits() == want.all_bits());
    }
  }
  k::set_num_threads(1);
}

TEST_CASE("large variables are updated in blocks on the kernels' threads, with the same bits") {
  check_blocked_updates<float>();
  check_blocked_updates<bfloat16>();
  check_blocked_updates<float16>();
}

TEST_CASE("float32 results lie within a few ulp of a double reference") {
  // Each stored value against the exact rule, evaluated in double on the values it reads (a
  // slot's formula on the initial state, w's on the stored slots): the roundings of float32
  // arithmetic stay within a few units of 2^-24 of the magnitudes of the terms. The powers
  // beta^t are taken as the rule defines them, rounded to float32 (1 - beta^t would magnify
  // that rounding of a beta near 1 in any float32 evaluation).
  constexpr double unit = 0x1p-24;
  for_each_target([&](const std::string&) {
    const auto initial = random_state<float>(2000, 0, 7, false);
    for (const auto& step : sgd_cases) {
      auto s = initial;
      run_sgd(s, step);
      const double lr = step.learning_rate, wd = step.weight_decay, momentum = step.momentum;
      for (std::size_t i = 0; i < s.n; ++i) {
        const double w = initial.w[i], g = initial.g[i];
        const double decay = w * wd * lr;
        double delta = -g * lr, magnitude = std::fabs(w) + std::fabs(decay) + std::fabs(g * lr);
        if (momentum != 0.0) {
          const double velocity = initial.velocity[i] * momentum - g * lr;
          REQUIRE(std::fabs(s.velocity[i] - velocity) <=
                  3 * unit * (std::fabs(initial.velocity[i] * momentum) + std::fabs(g * lr)));
          const double stored_velocity = s.velocity[i];
          delta = step.nesterov ? stored_velocity * momentum - g * lr : stored_velocity;
          magnitude += std::fabs(stored_velocity);
        }
        REQUIRE(std::fabs(s.w[i] - (w - decay + delta)) <= 6 * unit * magnitude);
      }
    }
    for (const auto& c : adam_cases) {
      auto s = initial;
      run_adam(s, c);
      const double beta_1_power = power_reference(c.step.beta_1, c.step.iteration);
      const double beta_2_power = power_reference(c.step.beta_2, c.step.iteration);
      const double lr = c.step.learning_rate, wd = c.step.weight_decay, epsilon = c.step.epsilon;
      const double alpha = lr * std::sqrt(1 - beta_2_power) / (1 - beta_1_power);
      for (std::size_t i = 0; i < s.n; ++i) {
        const double w = initial.w[i], g = initial.g[i], m0 = initial.m[i], v0 = initial.v[i];
        const double m = m0 + (g - m0) * (1 - c.step.beta_1);
        REQUIRE(std::fabs(s.m[i] - m) <= 4 * unit * (std::fabs(m0) + std::fabs(g - m0)));
        const double v = v0 + (g * g - v0) * (1 - c.step.beta_2);
        REQUIRE(std::fabs(s.v[i] - v) <= 5 * unit * (v0 + g * g));
        if (c.amsgrad) REQUIRE(s.v_hat[i] == std::max(initial.v_hat[i], s.v[i]));
        const double second_moment = c.amsgrad ? s.v_hat[i] : s.v[i];
        // alpha's roundings (sqrt, multiply, divide), then multiply, sqrt, add, divide.
        const double delta = s.m[i] * alpha / (std::sqrt(second_moment) + epsilon);
        const double decay = w * wd * lr;
        REQUIRE(std::fabs(s.w[i] - (w - decay - delta)) <=
                12 * unit * (std::fabs(w) + std::fabs(decay) + std::fabs(delta)));
      }
    }
  });
}

TEST_CASE("hand-computed steps") {
  for_each_target([&](const std::string&) {
    // Adam, lr 0.001, beta_1 0.9, beta_2 0.999, epsilon 1e-7, from w = 1, m = v = 0, g = 0.5:
    //  step 1 (t = 1): alpha = 0.001 sqrt(1 - 0.999) / (1 - 0.9) = 3.1622777e-4
    //    m = 0 + (0.5 - 0) 0.1 = 0.05;  v = 0 + (0.25 - 0) 0.001 = 2.5e-4;  sqrt(v) = 0.015811388
    //    w = 1 - 0.05 * 3.1622777e-4 / (0.015811388 + 1e-7) = 1 - 9.9999368e-4 = 0.99900000632
    //  step 2 (t = 2): alpha = 0.001 sqrt(1 - 0.998001) / (1 - 0.81) = 2.3531673e-4
    //    m = 0.05 + (0.5 - 0.05) 0.1 = 0.095;  v = 2.5e-4 + (0.25 - 2.5e-4) 0.001 = 4.9975e-4
    //    w = 0.99900000632 - 0.095 * 2.3531673e-4 / (0.022355089 + 1e-7) = 0.99800001080
    std::vector<float> w{1.0f}, m{0.0f}, v{0.0f};
    const std::vector<float> g{0.5f};
    k::adam_update<float>(w, g, m, v, {}, {.learning_rate = 0.001f, .iteration = 0});
    CHECK(m[0] == doctest::Approx(0.05).epsilon(1e-7));
    CHECK(v[0] == doctest::Approx(2.5e-4).epsilon(1e-7));
    CHECK(w[0] == doctest::Approx(0.99900000632).epsilon(1e-7));
    k::adam_update<float>(w, g, m, v, {}, {.learning_rate = 0.001f, .iteration = 1});
    CHECK(m[0] == doctest::Approx(0.095).epsilon(1e-7));
    CHECK(v[0] == doctest::Approx(4.9975e-4).epsilon(1e-7));
    CHECK(w[0] == doctest::Approx(0.99800001080).epsilon(1e-7));

    // SGD, lr 0.1, momentum 0.9, g = 0.5 twice from w = 1:
    //  plain:    v = -0.05, w = 0.95;   v = 0.9 (-0.05) - 0.05 = -0.095, w = 0.855
    //  nesterov: v = -0.05, w = 1 + (0.9 (-0.05) - 0.05) = 0.905;
    //            v = -0.095, w = 0.905 + (0.9 (-0.095) - 0.05) = 0.7695
    for (bool nesterov : {false, true}) {
      std::vector<float> weight{1.0f}, velocity{0.0f};
      const k::sgd_step step{.learning_rate = 0.1f, .momentum = 0.9, .nesterov = nesterov};
      k::sgd_update<float>(weight, g, velocity, step);
      CHECK(velocity[0] == doctest::Approx(-0.05).epsilon(1e-7));
      CHECK(weight[0] == doctest::Approx(nesterov ? 0.905 : 0.95).epsilon(1e-7));
      k::sgd_update<float>(weight, g, velocity, step);
      CHECK(velocity[0] == doctest::Approx(-0.095).epsilon(1e-7));
      CHECK(weight[0] == doctest::Approx(nesterov ? 0.7695 : 0.855).epsilon(1e-7));
    }
    // Without momentum: w = 1 - 0.5 * 0.1 = 0.95, and no velocity.
    std::vector<float> plain{1.0f};
    k::sgd_update<float>(plain, g, {}, {.learning_rate = 0.1f});
    CHECK(plain[0] == doctest::Approx(0.95).epsilon(1e-7));

    // Weight decay comes first: w = 1, wd 0.1, lr 0.1: 1 - 1 * 0.1 * 0.1 = 0.99, then
    // 0.99 - 0.5 * 0.1 = 0.94 (decaying after the gradient step would give 0.95 * 0.99 = 0.9405).
    std::vector<float> decayed{1.0f};
    k::sgd_update<float>(decayed, g, {}, {.learning_rate = 0.1f, .weight_decay = 0.1});
    CHECK(decayed[0] == doctest::Approx(0.94).epsilon(1e-7));
    std::vector<float> adamw{1.0f}, m_w{0.0f}, v_w{0.0f};
    k::adam_update<float>(adamw, g, m_w, v_w, {}, {.learning_rate = 0.001f, .weight_decay = 0.004});
    // 1 - 1 * 0.004 * 0.001 = 0.999996, then - 9.9999368e-4 as in Adam's first step above.
    CHECK(adamw[0] == doctest::Approx(0.999996 - 9.9999368e-4).epsilon(1e-7));
  });
}

TEST_CASE("weight decay multiplies w by wd, then by lr, as Keras' `w - w * wd * lr`") {
  // Find variables where (w * wd) * lr and w * (wd * lr) round differently: the kernel must
  // take Keras' order on every one of them.
  const float wd = 0.03f, lr = 0.7f;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(0.5f, 4.0f);
  std::vector<float> w;
  while (w.size() < 64) {
    const float x = uniform(rng);
    if (x - x * wd * lr != x - x * (wd * lr)) w.push_back(x);
  }
  const std::vector<float> zero(w.size(), 0.0f);
  for_each_target([&](const std::string&) {
    std::vector<float> updated = w;
    k::sgd_update<float>(updated, zero, {}, {.learning_rate = lr, .weight_decay = wd});
    for (std::size_t i = 0; i < w.size(); ++i) REQUIRE(bits(updated[i]) == bits(w[i] - (w[i] * wd) * lr));
  });
}

TEST_CASE("AMSGrad keeps the largest second moment and divides by it") {
  for_each_target([&](const std::string&) {
    // v_hat = 1 stays (the new v is 2.5e-4): w = 1 - 0.05 * 3.1622777e-4 / (1 + 1e-7) = 0.99998418861
    std::vector<float> w{1.0f, 1.0f}, m{0.0f, 0.0f}, v{0.0f, 0.0f}, v_hat{1.0f, 0.0f};
    const std::vector<float> g{0.5f, 0.5f};
    k::adam_update<float>(w, g, m, v, v_hat, {});
    CHECK(v_hat[0] == 1.0f);
    CHECK(w[0] == doctest::Approx(0.99998418861).epsilon(1e-7));
    // v_hat = 0 takes the new v, and the step is plain Adam's.
    CHECK(v_hat[1] == v[1]);
    CHECK(w[1] == doctest::Approx(0.99900000632).epsilon(1e-7));
    // A smaller v later leaves the maximum: g = 0 decays v, v_hat holds.
    const float held = v_hat[1];
    k::adam_update<float>(w, std::vector<float>{0.0f, 0.0f}, m, v, v_hat, {.iteration = 1});
    CHECK(v[1] < held);
    CHECK(v_hat[1] == held);
  });
}

TEST_CASE("special values propagate") {
  const float signaling = std::bit_cast<float>(0xFF800001u);
  for_each_target([&](const std::string&) {
    // SGD without momentum: NaN gradients give the canonical NaN; infinite ones infinite weights.
    std::vector<float> w{1.0f, 1.0f, 1.0f, inf, -0.0f, 2.0f};
    const std::vector<float> g{signaling, inf, -inf, 1.0f, 0.0f, 0x1p-149f};
    k::sgd_update<float>(w, g, {}, {.learning_rate = 0.5f});
    CHECK(bits(w[0]) == 0x7FC00000u);
    CHECK(w[1] == -inf);
    CHECK(w[2] == inf);
    CHECK(w[3] == inf);
    CHECK(bits(w[4]) == 0x80000000u);  // -0 - 0 * 0.5 = -0
    CHECK(w[5] == 2.0f);                // a subnormal step vanishes against 2
    // Adam: a NaN gradient makes m, v and w NaN; an infinite one makes m and v infinite and w
    // NaN (inf / inf); AMSGrad's maximum carries the NaN.
    std::vector<float> aw{1.0f, 1.0f}, m{0.0f, 0.0f}, v{0.0f, 0.0f}, v_hat{0.5f, 0.5f};
    k::adam_update<float>(aw, std::vector<float>{qnan, inf}, m, v, v_hat, {});
    for (float x : {aw[0], m[0], v[0], v_hat[0], aw[1]}) CHECK(bits(x) == 0x7FC00000u);
    CHECK(m[1] == inf);
    CHECK(v[1] == inf);
    CHECK(v_hat[1] == inf);
    // 16-bit: float16's range ends at 65504, so g * g for g = 300 overflows the stored v to inf,
    // and the step divides by sqrt(inf): w is left as it was decayed (here, not at all).
    std::vector<float16> hw{float16(1.0f)}, hm{float16(0.0f)}, hv{float16(0.0f)};
    k::adam_update<float16>(hw, std::vector<float16>{float16(300.0f)}, hm, hv, {}, {.beta_2 = 0.0});
    CHECK(hv[0].to_bits() == 0x7C00u);
    CHECK(hw[0].to_bits() == float16(1.0f).to_bits());
    std::vector<bfloat16> bw{bfloat16(1.0f)};
    k::sgd_update<bfloat16>(bw, std::vector<bfloat16>{bfloat16::from_bits(0xFFC1)}, {}, {});
    CHECK(bw[0].to_bits() == 0x7FC0u);
  });
}

TEST_CASE("clip_by_value and scale") {
  for_each_target([&](const std::string&) {
    std::vector<float> g{-3.0f, -0.5f, -0.0f, 0.0f, 0.5f, 3.0f, inf, -inf, std::bit_cast<float>(0x7FA00001u), 0x1p-140f};
    k::clip_by_value<float>(g, 1.0f);
    const std::vector<float> clipped{-1.0f, -0.5f, -0.0f, 0.0f, 0.5f, 1.0f, 1.0f, -1.0f, qnan, 0x1p-140f};
    for (std::size_t i = 0; i < g.size(); ++i)
      CHECK(bits(g[i]) == (std::isnan(clipped[i]) ? 0x7FC00000u : bits(clipped[i])));
    // A clamped bfloat16 becomes bfloat16(clip); clip = inf changes nothing.
    std::vector<bfloat16> b{bfloat16(1.0f), bfloat16(-0.05f), bfloat16(0.25f)};
    k::clip_by_value<bfloat16>(b, 0.1f);
    CHECK(b[0].to_bits() == bfloat16(0.1f).to_bits());
    CHECK(b[1].to_bits() == bfloat16(-0.05f).to_bits());
    CHECK(b[2].to_bits() == bfloat16(0.1f).to_bits());
    std::vector<float> unchanged{-1e30f, 1e30f};
    k::clip_by_value<float>(unchanged, inf);
    CHECK(unchanged == std::vector<float>{-1e30f, 1e30f});

    // clipnorm as Keras does it: (g * clipnorm) / max(norm, clipnorm), norm = 5 here.
    std::vector<float> norm_clipped{3.0f, 4.0f};
    const float norm = std::sqrt(kernels::dot<float>(norm_clipped, norm_clipped));
    k::scale<float>(norm_clipped, 1.0f, std::max(norm, 1.0f));
    CHECK(norm_clipped == std::vector<float>{0.6f, 0.8f});
    // global_clipnorm's factor is NaN for a norm that is not finite: every gradient turns NaN.
    std::vector<bfloat16> h{bfloat16(1.0f), bfloat16(-2.0f)};
    k::scale<bfloat16>(h, qnan);
    CHECK(h[0].to_bits() == 0x7FC0u);
    CHECK(h[1].to_bits() == 0x7FC0u);
    std::vector<float16> overflow{float16(40000.0f)};
    k::scale<float16>(overflow, 2.0f);  // rounded once to float16: beyond 65504 is inf
    CHECK(overflow[0].to_bits() == 0x7C00u);
  });
}

TEST_CASE("double variables run the same rules in double, on the hyperparameters as given") {
  std::mt19937 rng(9);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> w(50), g(50), m(50), v(50), v_hat(50, 0.0), velocity(50);
  for (auto* x : {&w, &g, &m, &velocity}) std::generate(x->begin(), x->end(), [&] { return normal(rng); });
  std::generate(v.begin(), v.end(), [&] { return std::fabs(normal(rng)) * 0.01; });

  // The learning rate is a float (Keras' float32 variable); momentum and weight decay stay double.
  const k::sgd_step sgd{.learning_rate = 0.1f, .momentum = 0.9, .nesterov = true, .weight_decay = 0.01};
  auto sw = w, sv = velocity;
  k::sgd_update<double>(sw, g, sv, sgd);
  const double lr = 0.1f, momentum = 0.9, wd = 0.01;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double vi = velocity[i] * momentum - g[i] * lr;
    CHECK(sv[i] == vi);
    CHECK(sw[i] == (w[i] - w[i] * wd * lr) + (vi * momentum - g[i] * lr));
  }

  // Adam (AMSGrad from v_hat = 0): t = 4; lr is the float value, widened; epsilon Keras' 1e-7.
  const k::adam_step adam{.learning_rate = 0.01f, .beta_1 = 0.8, .beta_2 = 0.99, .iteration = 3};
  auto aw = w, am = m, av = v, ah = v_hat;
  k::adam_update<double>(aw, g, am, av, ah, adam);
  const double adam_lr = 0.01f, epsilon = 1e-7;
  const double alpha = adam_lr * std::sqrt(1 - std::pow(0.99, 4.0)) / (1 - std::pow(0.8, 4.0));
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double mi = m[i] + (g[i] - m[i]) * (1 - 0.8);
    const double vi = v[i] + (g[i] * g[i] - v[i]) * (1 - 0.99);
    CHECK(am[i] == mi);
    CHECK(av[i] == vi);
    CHECK(ah[i] == vi);
    CHECK(aw[i] == w[i] - (mi * alpha) / (std::sqrt(vi) + epsilon));
  }

  std::vector<double> clipped{-2.0, 0.5, std::numeric_limits<double>::quiet_NaN()};
  k::clip_by_value<double>(clipped, 0.1);  // 0.1 itself, not float32's 0.100000001
  CHECK(clipped[0] == -0.1);
  CHECK(clipped[1] == 0.1);
  CHECK(std::isnan(clipped[2]));
  k::scale<double>(clipped, 3.0, 0.7);
  CHECK(clipped[0] == -0.1 * 3.0 / 0.7);
  // A float variable reads the same values rounded to float32.
  std::vector<float> f{-2.0f, 1.0f};
  k::clip_by_value<float>(f, 0.1);
  CHECK(f[0] == -0.1f);
  k::scale<float>(f, 3.0, 0.7);
  CHECK(f[1] == 0.1f * 3.0f / 0.7f);
}

TEST_CASE("sgd_update rejects bad arguments and leaves the state as it was") {
  auto s = random_state<float>(8, 0, 3, false);
  const auto w = s.at(s.w);
  const auto g = s.gradient();
  const auto velocity = s.at(s.velocity);
  const auto call = [&](std::span<float> ww, std::span<const float> gg, std::span<float> vv, k::sgd_step step) {
    return [=] { k::sgd_update<float>(ww, gg, vv, step); };
  };
  const k::sgd_step good{.learning_rate = 0.1f, .momentum = 0.9};
  check_rejected(s, call(w, g, velocity, {.learning_rate = inf, .momentum = 0.9}),
                 "sgd_update: the learning rate must be finite; got inf.");
  check_rejected(s, call(w, g, velocity, {.learning_rate = qnan, .momentum = 0.9}),
                 "sgd_update: the learning rate must be finite; got nan.");
  check_rejected(s, call(w, g, velocity, {.momentum = 1.5}),
                 "sgd_update: `momentum` must be a float between [0, 1]. Got 1.5.");
  check_rejected(s, call(w, g, velocity, {.momentum = -0.1}),
                 "sgd_update: `momentum` must be a float between [0, 1]. Got -0.1.");
  check_rejected(s, call(w, g, velocity, {.momentum = qnan}),
                 "sgd_update: `momentum` must be a float between [0, 1]. Got nan.");
  check_rejected(s, call(w, g, velocity, {.momentum = 0.9, .weight_decay = -inf}),
                 "sgd_update: weight_decay must be finite in float32; got -inf.");
  check_rejected(s, call(w, g, velocity, {.momentum = 0.9, .weight_decay = 1e39}),
                 "sgd_update: weight_decay must be finite in float32; got 1e+39.");
  check_rejected(s, call(w, g.first(7), velocity, good), "sgd_update: g has 7 elements but w has 8; they must match.");
  check_rejected(s, call(w, g, velocity.first(5), good),
                 "sgd_update: velocity has 5 elements but w has 8; they must match.");
  check_rejected(s, call(w, g, {}, good),
                 "sgd_update: momentum 0.9 needs a velocity as large as w (8 elements); it is empty.");
  check_rejected(s, call(w, std::span<const float>(w), velocity, good),
                 "sgd_update: w and g overlap; they must lie apart.");
  check_rejected(s, call(w.first(4), g.first(4), w.subspan(3, 4), good),
                 "sgd_update: w and velocity overlap; they must lie apart.");
  check_rejected(s, call(w.first(4), g.first(4), std::span<float>(s.g).subspan(2, 4), good),
                 "sgd_update: g and velocity overlap; they must lie apart.");
  // Adjacent spans do not overlap; and the good step goes through.
  k::sgd_update<float>(w.first(4), g.first(4), w.subspan(4, 4), good);
}

TEST_CASE("sgd_update with a velocity and momentum 0 updates it as Keras does (v = v * 0 - g * lr)") {
  // Keras keeps a momentum slot whenever momentum != 0 as given; one that rounds to 0 in float32
  // (1e-46) then updates the slot with a zero momentum: the same w as without momentum.
  for (const double momentum : {0.0, 1e-46}) {
    std::vector<float> w{1.0f, -2.0f, 0.5f}, plain = w, velocity{3.0f, -1.0f, 0.25f};
    const std::vector<float> g{0.5f, 0.25f, -4.0f}, before = velocity;
    k::sgd_update<float>(w, g, velocity, {.learning_rate = 0.1f, .momentum = momentum});
    k::sgd_update<float>(plain, g, {}, {.learning_rate = 0.1f});
    for (std::size_t i = 0; i < w.size(); ++i) {
      CHECK(velocity[i] == before[i] * 0.0f - g[i] * 0.1f);
      CHECK(w[i] == plain[i]);
    }
  }
}

TEST_CASE("adam_update rejects bad arguments and leaves the state as it was") {
  auto s = random_state<bfloat16>(8, 0, 4, false);
  const auto w = s.at(s.w);
  const auto g = s.gradient();
  const auto m = s.at(s.m);
  const auto v = s.at(s.v);
  const auto v_hat = s.at(s.v_hat);
  const auto call = [&](std::span<bfloat16> ww, std::span<const bfloat16> gg, std::span<bfloat16> mm,
                        std::span<bfloat16> vv, std::span<bfloat16> hh, k::adam_step step) {
    return [=] { k::adam_update<bfloat16>(ww, gg, mm, vv, hh, step); };
  };
  check_rejected(s, call(w, g, m, v, v_hat, {.learning_rate = -inf}),
                 "adam_update: the learning rate must be finite; got -inf.");
  check_rejected(s, call(w, g, m, v, v_hat, {.beta_1 = 1.0}), "adam_update: beta_1 must be in [0, 1); got 1.");
  check_rejected(s, call(w, g, m, v, v_hat, {.beta_2 = -0.5}), "adam_update: beta_2 must be in [0, 1); got -0.5.");
  check_rejected(s, call(w, g, m, v, v_hat, {.beta_2 = std::nan("")}), "adam_update: beta_2 must be in [0, 1); got nan.");
  check_rejected(s, call(w, g, m, v, v_hat, {.beta_2 = 0.99999999}),
                 "adam_update: beta_2 = 0.99999999 rounds to 1 in float32, which float32 arithmetic needs below 1.");
  check_rejected(s, call(w, g, m, v, v_hat, {.epsilon = -1e-7}),
                 "adam_update: epsilon must be finite and >= 0; got -1e-07.");
  check_rejected(s, call(w, g, m, v, v_hat, {.epsilon = inf}), "adam_update: epsilon must be finite and >= 0; got inf.");
  check_rejected(s, call(w, g, m, v, v_hat, {.iteration = -1}),
                 "adam_update: iteration (the steps taken before this one) must be in [0, 2^63 - 1); got -1.");
  check_rejected(s, call(w, g, m, v, v_hat, {.iteration = std::numeric_limits<std::int64_t>::max()}),
                 "adam_update: iteration (the steps taken before this one) must be in [0, 2^63 - 1); got "
                 "9223372036854775807.");
  check_rejected(s, call(w, g, m, v, v_hat, {.weight_decay = qnan}), "adam_update: weight_decay must be finite in float32; got nan.");
  check_rejected(s, call(w, g.first(1), m, v, v_hat, {}), "adam_update: g has 1 elements but w has 8; they must match.");
  check_rejected(s, call(w, g, m.first(0), v, v_hat, {}), "adam_update: m has 0 elements but w has 8; they must match.");
  check_rejected(s, call(w, g, m, v.first(7), v_hat, {}), "adam_update: v has 7 elements but w has 8; they must match.");
  check_rejected(s, call(w, g, m, v, v_hat.first(2), {}),
                 "adam_update: v_hat (AMSGrad's slot, or empty) has 2 elements but w has 8; they must match.");
  check_rejected(s, call(w, g, m, m, v_hat, {}), "adam_update: m and v overlap; they must lie apart.");
  check_rejected(s, call(w, g, m, v, std::span<bfloat16>(s.g), {}), "adam_update: g and v_hat overlap; they must lie apart.");
  check_rejected(s, call(w, g, m, v, w, {}), "adam_update: w and v_hat overlap; they must lie apart.");
  // double: a beta just below 1 is fine there (no float32 rounding).
  std::vector<double> dw{1.0}, dg{0.5}, dm{0.0}, dv{0.0};
  k::adam_update<double>(dw, dg, dm, dv, {}, {.beta_2 = 0.99999999});
  CHECK(std::isfinite(dw[0]));
}

TEST_CASE("clip_by_value rejects a negative or NaN clip") {
  std::vector<float> g{1.0f, -2.0f};
  CHECK_THROWS_WITH_AS(k::clip_by_value<float>(g, -1.0f), "clip_by_value: clip must be >= 0; got -1.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(k::clip_by_value<float>(g, qnan), "clip_by_value: clip must be >= 0; got nan.", std::invalid_argument);
  CHECK(g == std::vector<float>{1.0f, -2.0f});
  k::clip_by_value<float>(g, 0.0f);  // clip 0: everything to +-0
  CHECK(bits(g[0]) == 0u);
  CHECK(bits(g[1]) == 0x80000000u);
}

TEST_CASE("the optimizer kernels deduce the variable's dtype from containers") {
  const kernels::sgd_step sgd{.learning_rate = 0.5f, .momentum = 0.5};
  std::vector<bfloat16> w{bfloat16(1.0f), bfloat16(2.0f)}, velocity(2);
  const std::vector<bfloat16> g{bfloat16(1.0f), bfloat16(-1.0f)};
  std::vector<bfloat16> w_named = w, velocity_named = velocity;
  kernels::sgd_update(w, g, velocity, sgd);
  kernels::sgd_update<bfloat16>(w_named, g, velocity_named, sgd);
  CHECK(static_cast<float>(w[0]) == 0.5f);
  CHECK(w[1].to_bits() == w_named[1].to_bits());
  CHECK(velocity[1].to_bits() == velocity_named[1].to_bits());

  std::vector<float> wf{1.0f}, m(1), v(1);
  kernels::adam_update(wf, std::vector<float>{1.0f}, m, v, {}, {.learning_rate = 0.1f});  // {}: no AMSGrad
  CHECK(wf[0] == doctest::Approx(0.9f));
  std::vector<float> clipped{3.0f, -3.0f};
  kernels::clip_by_value(clipped, 1.0f);
  CHECK(clipped == std::vector<float>{1.0f, -1.0f});
  kernels::scale(clipped, 2.0f);
  kernels::scale(clipped, 3.0f, 2.0f);
  CHECK(clipped == std::vector<float>{3.0f, -3.0f});
}
