// Optimizer entry points: plain pointers and sizes, no Highway types. Each call dispatches to the
// best compiled target for this CPU (or the one forced with kernels::target_scope).
// The typed public API, its checks, and what each function computes are in optimizer.hpp: here
// the spans have n elements each and lie apart, and the step's values have been checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/config.hpp>

namespace mixprec::kernels {

// The hyperparameters are double, as Keras holds them (Python floats), which it casts to the
// variable's dtype: float32 arithmetic (float, bfloat16, float16 variables) reads them rounded to
// float, a double variable's arithmetic as they are. The learning rate is a float, as Keras'
// learning-rate variable is float32 whatever the variables' dtype.

/// One step of Keras' SGD (see optimizer.hpp). The defaults are Keras'; weight_decay 0 means
/// none (Keras' None).
struct sgd_step {
  float learning_rate = 0.01f;
  double momentum = 0.0;
  bool nesterov = false;
  double weight_decay = 0.0;
};

/// One step of Keras' Adam, or AdamW with weight_decay set (see optimizer.hpp). The defaults are
/// Keras'. Keras computes 1 - beta in double before the float32 multiply, which a float beta
/// could not reproduce (1 - 0.9 rounds to 0.1f, 1 - 0.9f is 0.100000024f).
struct adam_step {
  float learning_rate = 0.001f;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  std::int64_t iteration = 0;  ///< the optimizer's iteration count before this step
  double weight_decay = 0.0;
};

namespace detail {

/// The per-step scalars of Adam, derived once from an adam_step by adam_update.
struct adam_scalars {
  float learning_rate;
  float weight_decay;      ///< 0: none
  float alpha;             ///< lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)
  float one_minus_beta_1;  ///< float32(1 - beta_1), the difference taken in double
  float one_minus_beta_2;
  float epsilon;
};

/// The dtypes the optimizer kernels take (optimizer.hpp runs scalar loops for double). The
/// entry points below are templates over them in both modes: header-only mode compiles a dtype's
/// kernel where it is called; in single-TU mode the kernels' translation unit instantiates them
/// for each of these dtypes (dispatch_optimizer.hpp) and every other one sees these declarations.
template <class V>
inline constexpr bool has_optimizer_kernel =
    std::is_same_v<V, float> || std::is_same_v<V, bfloat16> || std::is_same_v<V, float16>;

/// velocity == nullptr: no momentum slot (step.momentum is 0).
template <class V>
void sgd_update(V* w, const V* g, V* velocity, std::size_t n, const sgd_step& step);
/// v_hat == nullptr without AMSGrad.
template <class V>
void adam_update(V* w, const V* g, V* m, V* v, V* v_hat, std::size_t n, const adam_scalars& step);
/// clip >= 0.
template <class V>
void clip_by_value(V* g, std::size_t n, float clip);
/// g = (g * multiplier) / divisor.
template <class V>
void scale(V* g, std::size_t n, float multiplier, float divisor);

}  // namespace detail
}  // namespace mixprec::kernels
