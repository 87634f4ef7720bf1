// Per-target optimizer kernels: Keras' SGD and Adam updates, and gradient clipping. Every V
// (float, bfloat16, float16) is widened exactly to float and computed in float32 in Keras' order
// of operations, with plain Mul/Add/Sub/Div/Sqrt (each correctly rounded on every target, and
// the kernel macros turn contraction off), so the results are bit-identical on every target and,
// for float variables, equal to Keras' float32 arithmetic. Each stored value is rounded once to
// V; every NaN stored is the canonical quiet NaN.
#if defined(MIXPREC_KERNELS_OPTIMIZER_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef MIXPREC_KERNELS_OPTIMIZER_INL_HPP_
#undef MIXPREC_KERNELS_OPTIMIZER_INL_HPP_
#else
#define MIXPREC_KERNELS_OPTIMIZER_INL_HPP_
#endif

#include <cstddef>
#include <type_traits>

#include <hwy/highway.h>
#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/detail/common-inl.hpp>
#include <mixprec/kernels/detail/convert-inl.hpp>
#include <mixprec/kernels/detail/kernel_macros.hpp>
#include <mixprec/kernels/detail/optimizer_entry_points.hpp>

MIXPREC_KERNELS_BEGIN
namespace hn = hwy::HWY_NAMESPACE;

/// Rounds x once to V and stores it (a NaN as the canonical quiet NaN).
template <class V>
HWY_INLINE void store_value(hn::Vec<DF> x, V* p) {
  store_as(canonical_nan(x), p);
}

/// store_value, returning what was stored, widened back: the rest of the step reads a slot as
/// stored, as Keras reads its slot variable after assigning it.
template <class V>
HWY_INLINE hn::Vec<DF> store_slot(hn::Vec<DF> x, V* p) {
  store_value(x, p);
  if constexpr (std::is_same_v<V, float>) return canonical_nan(x);
  else return load_as_f32(p);
}

/// Keras' decoupled weight decay, `variable - variable * wd * lr`: w - (w * wd) * lr, in that
/// order (not wd * lr first, which rounds differently). wd == 0 means none.
struct decoupled_weight_decay {
  hn::Vec<DF> decay, learning_rate;
  bool enabled;

  decoupled_weight_decay(float wd, float lr)
      : decay(hn::Set(DF(), wd)), learning_rate(hn::Set(DF(), lr)), enabled(wd != 0.0f) {}
  HWY_INLINE hn::Vec<DF> operator()(hn::Vec<DF> w) const {
    return enabled ? hn::Sub(w, hn::Mul(hn::Mul(w, decay), learning_rate)) : w;
  }
};

template <class V>
void SgdUpdate(V* w, const V* g, V* velocity, std::size_t n, const sgd_step& step) {
  const DF df;
  const std::size_t lanes = hn::Lanes(df);
  const decoupled_weight_decay decayed(static_cast<float>(step.weight_decay), step.learning_rate);
  const auto lr = hn::Set(df, step.learning_rate);
  if (velocity == nullptr) {  // momentum 0: w - g * lr
    for_each_step<kMaxFloatLanes>(n, lanes, [&](V* pw, const V* pg) {
      store_value(hn::Sub(decayed(load_as_f32(pw)), hn::Mul(load_as_f32(pg), lr)), pw);
    }, w, g);
    return;
  }
  const auto momentum = hn::Set(df, static_cast<float>(step.momentum));
  const bool nesterov = step.nesterov;
  for_each_step<kMaxFloatLanes>(n, lanes, [&](V* pw, const V* pg, V* pv) {
    const auto w0 = decayed(load_as_f32(pw));
    const auto scaled_g = hn::Mul(load_as_f32(pg), lr);
    const auto v = store_slot(hn::Sub(hn::Mul(load_as_f32(pv), momentum), scaled_g), pv);
    // Keras adds (v * momentum - g * lr) as one term, not momentum * v, then - g * lr.
    const auto delta = nesterov ? hn::Sub(hn::Mul(v, momentum), scaled_g) : v;
    store_value(hn::Add(w0, delta), pw);
  }, w, g, velocity);
}

/// AMSGrad's max(v_hat, v): NaN in either gives NaN; of equal values (+0, -0) v_hat stays.
HWY_INLINE hn::Vec<DF> amsgrad_max(hn::Vec<DF> v_hat, hn::Vec<DF> v) {
  const auto larger = hn::IfThenElse(hn::Gt(v, v_hat), v, v_hat);
  return hn::IfThenElse(hn::IsNaN(v), v, larger);
}

template <class V>
void AdamUpdate(V* w, const V* g, V* m, V* v, V* v_hat, std::size_t n, const detail::adam_scalars& step) {
  const DF df;
  const std::size_t lanes = hn::Lanes(df);
  const decoupled_weight_decay decayed(step.weight_decay, step.learning_rate);
  const auto alpha = hn::Set(df, step.alpha);
  const auto one_minus_beta_1 = hn::Set(df, step.one_minus_beta_1);
  const auto one_minus_beta_2 = hn::Set(df, step.one_minus_beta_2);
  const auto epsilon = hn::Set(df, step.epsilon);
  // pvh == nullptr (a constant once inlined) without AMSGrad.
  const auto update = [&](V* pw, const V* pg, V* pm, V* pv, V* pvh) {
    const auto w0 = decayed(load_as_f32(pw));
    const auto grad = load_as_f32(pg);
    const auto m0 = load_as_f32(pm);
    const auto v0 = load_as_f32(pv);
    const auto m1 = store_slot(hn::Add(m0, hn::Mul(hn::Sub(grad, m0), one_minus_beta_1)), pm);
    auto v1 = store_slot(hn::Add(v0, hn::Mul(hn::Sub(hn::Mul(grad, grad), v0), one_minus_beta_2)), pv);
    if (pvh != nullptr) v1 = store_slot(amsgrad_max(load_as_f32(pvh), v1), pvh);
    store_value(hn::Sub(w0, hn::Div(hn::Mul(m1, alpha), hn::Add(hn::Sqrt(v1), epsilon))), pw);
  };
  if (v_hat == nullptr) {
    for_each_step<kMaxFloatLanes>(n, lanes, [&](V* pw, const V* pg, V* pm, V* pv) {
      update(pw, pg, pm, pv, nullptr);
    }, w, g, m, v);
  } else {
    for_each_step<kMaxFloatLanes>(n, lanes, update, w, g, m, v, v_hat);
  }
}

/// Clamps to [-clip, clip] with compares (Min and Max treat NaN and -0 differently on different
/// targets): NaN stays NaN, -0 stays -0.
template <class V>
void ClipByValue(V* g, std::size_t n, float clip) {
  const DF df;
  const auto upper = hn::Set(df, clip);
  const auto lower = hn::Set(df, -clip);
  for_each_block<kMaxFloatLanes>(g, g, n, hn::Lanes(df), [&](const V* in, V* out) {
    const auto x = load_as_f32(in);
    store_value(hn::IfThenElse(hn::Gt(x, upper), upper, hn::IfThenElse(hn::Lt(x, lower), lower, x)), out);
  });
}

template <class V>
void Scale(V* g, std::size_t n, float multiplier, float divisor) {
  const DF df;
  const auto times = hn::Set(df, multiplier);
  const auto over = hn::Set(df, divisor);
  for_each_block<kMaxFloatLanes>(g, g, n, hn::Lanes(df), [&](const V* in, V* out) {
    store_value(hn::Div(hn::Mul(load_as_f32(in), times), over), out);
  });
}

MIXPREC_KERNELS_END

#endif  // toggle guard
