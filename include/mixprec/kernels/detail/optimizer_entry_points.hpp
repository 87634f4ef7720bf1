// Optimizer entry points: plain pointers and sizes, no Highway types. Each call dispatches to the
// best compiled target for this CPU (or the one forced with kernels::target_scope).
// The typed public API, its checks, and what each function computes are in optimizer.hpp: here
// the spans have n elements each and lie apart, and the step's values have been checked.
#pragma once

#include <cstddef>
#include <cstdint>

#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/config.hpp>

namespace mixprec::kernels {

/// One step of Keras' SGD (see optimizer.hpp). The defaults are Keras'; weight_decay 0 means
/// none (Keras' None).
struct sgd_step {
  float learning_rate = 0.01f;
  float momentum = 0.0f;
  bool nesterov = false;
  float weight_decay = 0.0f;
};

/// One step of Keras' Adam, or AdamW with weight_decay set (see optimizer.hpp). The defaults are
/// Keras'. beta_1 and beta_2 are double, as Keras holds them (Python floats): Keras computes
/// 1 - beta in double before the float32 multiply, which a float beta could not reproduce
/// (1 - 0.9 rounds to 0.1f, 1 - 0.9f is 0.100000024f).
struct adam_step {
  float learning_rate = 0.001f;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  float epsilon = 1e-7f;
  std::int64_t iteration = 0;  ///< the optimizer's iteration count before this step
  float weight_decay = 0.0f;
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

/// velocity == nullptr when step.momentum == 0.
MIXPREC_KERNEL_ENTRY void sgd_update_f32(float* w, const float* g, float* velocity, std::size_t n, const sgd_step& step);
MIXPREC_KERNEL_ENTRY void sgd_update_bf16(bfloat16* w, const bfloat16* g, bfloat16* velocity, std::size_t n,
                                        const sgd_step& step);
MIXPREC_KERNEL_ENTRY void sgd_update_f16(float16* w, const float16* g, float16* velocity, std::size_t n,
                                       const sgd_step& step);
/// v_hat == nullptr without AMSGrad.
MIXPREC_KERNEL_ENTRY void adam_update_f32(float* w, const float* g, float* m, float* v, float* v_hat, std::size_t n,
                                        const adam_scalars& step);
MIXPREC_KERNEL_ENTRY void adam_update_bf16(bfloat16* w, const bfloat16* g, bfloat16* m, bfloat16* v, bfloat16* v_hat,
                                         std::size_t n, const adam_scalars& step);
MIXPREC_KERNEL_ENTRY void adam_update_f16(float16* w, const float16* g, float16* m, float16* v, float16* v_hat,
                                        std::size_t n, const adam_scalars& step);
/// clip >= 0.
MIXPREC_KERNEL_ENTRY void clip_by_value_f32(float* g, std::size_t n, float clip);
MIXPREC_KERNEL_ENTRY void clip_by_value_bf16(bfloat16* g, std::size_t n, float clip);
MIXPREC_KERNEL_ENTRY void clip_by_value_f16(float16* g, std::size_t n, float clip);
/// g = (g * multiplier) / divisor.
MIXPREC_KERNEL_ENTRY void scale_f32(float* g, std::size_t n, float multiplier, float divisor);
MIXPREC_KERNEL_ENTRY void scale_bf16(bfloat16* g, std::size_t n, float multiplier, float divisor);
MIXPREC_KERNEL_ENTRY void scale_f16(float16* g, std::size_t n, float multiplier, float divisor);

}  // namespace detail
}  // namespace mixprec::kernels
