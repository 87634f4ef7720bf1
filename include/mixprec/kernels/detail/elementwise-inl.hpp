// Per-target elementwise kernels: activations and their backward steps, bias adds, row softmax
// forward and backward, and the fused dense epilogue. Every T (float, bfloat16, float16) is
// widened exactly to float, computed in float and rounded once to T as convert does. The math
// is written here with plain Mul/Add/Sub/Div, never Highway's contrib math (whose MulAdd is
// fused on AVX2 but not on SSE4), and the kernel macros turn contraction off, so every target
// rounds every step alike: the results are bit-identical.
//
// Every NaN result is the canonical quiet NaN (which NaN an operation on NaNs returns depends on
// operand order, and on the instruction set).
#if defined(MIXPREC_KERNELS_ELEMENTWISE_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef MIXPREC_KERNELS_ELEMENTWISE_INL_HPP_
#undef MIXPREC_KERNELS_ELEMENTWISE_INL_HPP_
#else
#define MIXPREC_KERNELS_ELEMENTWISE_INL_HPP_
#endif

#include <cstddef>
#include <limits>
#include <type_traits>
#include <vector>

#include <hwy/highway.h>
#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/detail/common-inl.hpp>
#include <mixprec/kernels/detail/convert-inl.hpp>
#include <mixprec/kernels/detail/elementwise_entry_points.hpp>
#include <mixprec/kernels/detail/kernel_macros.hpp>
#include <mixprec/kernels/detail/reduce-inl.hpp>

MIXPREC_KERNELS_BEGIN
namespace hn = hwy::HWY_NAMESPACE;
using VF = hn::Vec<DF>;

/// 2^k for integer lanes k in [-126, 127].
HWY_INLINE VF power_of_two(hn::Vec<DI> k) {
  return hn::BitCast(DF(), hn::ShiftLeft<23>(hn::Add(k, hn::Set(DI(), 127))));
}

/// e^r 2^n for the reduced argument of exp_f32 below (n integral in [-150, 128], r about
/// [-ln2/2, ln2/2]): e^r = 1 + r + r^2 P(r), then 2^n in two steps.
HWY_INLINE VF exp_reconstruct(VF n, VF r) {
  const DF df;
  const DI di;
  VF p = hn::Set(df, 0x1.6a244cp-10f);
  p = hn::Add(hn::Mul(p, r), hn::Set(df, 0x1.1239d4p-7f));
  p = hn::Add(hn::Mul(p, r), hn::Set(df, 0x1.5558f2p-5f));
  p = hn::Add(hn::Mul(p, r), hn::Set(df, 0x1.555492p-3f));
  p = hn::Add(hn::Mul(p, r), hn::Set(df, 0x1.fffffcp-2f));
  const VF e_r = hn::Add(hn::Set(df, 1.0f), hn::Add(r, hn::Mul(hn::Mul(r, r), p)));
  const auto k = hn::ConvertTo(di, n);
  const auto half = hn::ShiftRight<1>(k);
  return hn::Mul(hn::Mul(e_r, power_of_two(hn::Sub(k, half))), power_of_two(half));
}

/// Beyond these bounds e^x is inf (e^89 > FLT_MAX) or rounds to 0 (e^-104 < 2^-150).
HWY_INLINE VF clamp_exp_argument(VF x) {
  const DF df;
  return hn::Min(hn::Max(x, hn::Set(df, -104.0f)), hn::Set(df, 89.0f));
}

/// n = round(x / ln2) for a clamped x.
HWY_INLINE VF exp_multiple_of_ln2(VF x) {
  const DF df;
  return round_half_even_small(df, hn::Mul(x, hn::Set(df, 0x1.715476p+0f)));  // log2(e)
}

/// r = x - n ln2 as (x - n ln2_hi) - n ln2_lo, the first step exact (see exp_f32).
HWY_INLINE VF exp_reduce(VF x, VF n) {
  const DF df;
  return hn::Sub(hn::Sub(x, hn::Mul(n, hn::Set(df, 0x1.62e4p-1f))), hn::Mul(n, hn::Set(df, 0x1.7f7d1cp-20f)));
}

/// e^x within about 1 ulp; exp(NaN) is NaN, exp(+inf) = +inf, exp(-inf) = +0; results below
/// 2^-126 are rounded once to the subnormal grid.
///
/// Cody-Waite reduction: x = n ln2 + r with n = round(x / ln2), |r| <= ln2 / 2. ln2_hi has 15
/// significant bits, so n * ln2_hi is exact for |n| < 512 and x - n * ln2_hi is exact (Sterbenz);
/// ln2_lo = float(ln2 - ln2_hi). e^r = 1 + r + r^2 P(r), where P is the degree-4 minimax
/// polynomial for (e^r - 1 - r) / r^2 under relative error on [-ln2/2, ln2/2] (Remez exchange in
/// 50-digit arithmetic, coefficients rounded to float; approximation error 3.1e-9). 2^n is
/// applied in two exact-or-once-rounded multiplications by 2^(n - n/2) and 2^(n/2), which keeps
/// both factors normal for n in [-150, 128].
HWY_INLINE VF exp_f32(VF x) {
  const VF clamped = clamp_exp_argument(x);
  const VF n = exp_multiple_of_ln2(clamped);
  return hn::IfThenElse(hn::IsNaN(x), x, exp_reconstruct(n, exp_reduce(clamped, n)));
}

/// e^(hi + lo) for an argument held as an unevaluated sum, hi <= 0 (not NaN) and
/// -1/8 <= lo <= 0: n comes from the rounded sum, and lo joins the reduced argument after the
/// exact step hi - n ln2_hi, so the rounding of hi + lo never reaches the result (about 1 ulp,
/// as exp_f32).
HWY_INLINE VF exp_sum_f32(VF hi, VF lo) {
  const VF clamped = clamp_exp_argument(hi);  // hi < -104 leaves e^(-104 + lo), which rounds to 0
  const VF n = exp_multiple_of_ln2(hn::Add(clamped, lo));
  return exp_reconstruct(n, hn::Add(exp_reduce(clamped, n), lo));
}

/// sigmoid(x) given e = e^-|x|: 1 / (1 + e) for x >= 0, e / (1 + e) for x < 0.
HWY_INLINE VF sigmoid_from(VF x, VF e) {
  const DF df;
  const VF one = hn::Set(df, 1.0f);
  return hn::Div(hn::IfThenElse(hn::Lt(x, hn::Zero(df)), e, one), hn::Add(one, e));
}

/// 1 / (1 + e^-x), within about 2 ulp, never overflowing: with e = e^-|x| in (0, 1], it is
/// 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0, so tiny results keep their relative
/// accuracy down to the subnormals. sigmoid(-inf) = 0, sigmoid(+inf) = 1.
HWY_INLINE VF sigmoid_f32(VF x) { return sigmoid_from(x, exp_f32(hn::Neg(hn::Abs(x)))); }

/// sigmoid(x) sigmoid(-x) = e / (1 + e)^2 given e = e^-|x|: the slope of the sigmoid, with no
/// cancellation and no overflow (e = 0 gives 0).
HWY_INLINE VF sigmoid_slope_from(VF e) {
  const VF one_plus_e = hn::Add(hn::Set(DF(), 1.0f), e);
  return hn::Div(e, hn::Mul(one_plus_e, one_plus_e));
}

/// tanh(x) within about 2 ulp, computed on |x| with the sign of x copied back (so tanh is odd
/// bit for bit, and tanh(-0) = -0). |x| < 0.625: |x| + |x|^3 Q(x^2), Q the degree-4 minimax
/// polynomial for (tanh(x) - x) / x^3 under relative error on [0, 0.625] (Remez, as for exp;
/// approximation error 4.4e-9), which keeps the relative accuracy near 0. Elsewhere
/// (1 - e) / (1 + e) with e = e^-2|x|, which cannot overflow.
HWY_INLINE VF tanh_f32(VF x) {
  const DF df;
  const VF one = hn::Set(df, 1.0f);
  const VF ax = hn::Abs(x);
  const VF s = hn::Mul(ax, ax);
  VF q = hn::Set(df, -0x1.75e1cep-8f);
  q = hn::Add(hn::Mul(q, s), hn::Set(df, 0x1.52269cp-6f));
  q = hn::Add(hn::Mul(q, s), hn::Set(df, -0x1.b83c5ap-5f));
  q = hn::Add(hn::Mul(q, s), hn::Set(df, 0x1.110726p-3f));
  q = hn::Add(hn::Mul(q, s), hn::Set(df, -0x1.555532p-2f));
  const VF small = hn::Add(ax, hn::Mul(hn::Mul(ax, s), q));
  const VF e = exp_f32(hn::Mul(ax, hn::Set(df, -2.0f)));
  const VF large = hn::Div(hn::Sub(one, e), hn::Add(one, e));
  return hn::CopySignToAbs(hn::IfThenElse(hn::Lt(ax, hn::Set(df, 0.625f)), small, large), x);
}

/// The upper tail of the standard normal distribution, Q(t) = erfc(t / sqrt(2)) / 2, in two
/// factors for t = min(|x|, 16) (Q(16) < 2^-190 already rounds to 0, and the bound keeps every
/// step finite; a NaN x gives some t, the callers pass NaN on themselves):
///  - gaussian = e^(-t^2/2). t^2/2 reaches 128, and its rounding error (up to 2^-24 of it)
///    would come out of exp magnified to up to 2^7 ulp. So t = t_hi + t_lo with t_hi holding
///    the upper 12 significant bits: t_hi^2/2 is exact and so are t_hi t_lo and t_lo^2/2 (12-bit
///    factors), and exp_sum_f32 takes t^2/2 as t_hi^2/2 + (t_hi t_lo + t_lo^2/2), rounded only
///    in the small second term.
///  - ratio = R(t) = Q(t) e^(t^2/2) (the Mills ratio over sqrt(2 pi)), the degree-4/5 rational
///    minimax approximation under relative error on [0, 16] (Remez exchange in 40-digit
///    arithmetic, coefficients rounded to float; approximation error 7.1e-9). Every
///    coefficient is positive, so no step of its evaluation cancels.
/// Q(t) = gaussian * ratio keeps its relative accuracy through the whole tail, where the
/// 1 - Phi of a float formula for the CDF would have lost it.
struct normal_tail {
  VF t;
  VF gaussian;
  VF ratio;
};

HWY_INLINE normal_tail normal_tail_of(VF x) {
  const DF df;
  const DU du;
  const VF t = hn::Min(hn::Abs(x), hn::Set(df, 16.0f));
  const VF t_hi = hn::BitCast(df, hn::And(hn::BitCast(du, t), hn::Set(du, 0xFFFFF000u)));
  const VF t_lo = hn::Sub(t, t_hi);
  const VF half = hn::Set(df, 0.5f);
  const VF minus_square_hi = hn::Neg(hn::Mul(hn::Mul(t_hi, t_hi), half));
  const VF minus_square_lo = hn::Neg(hn::Add(hn::Mul(t_hi, t_lo), hn::Mul(hn::Mul(t_lo, t_lo), half)));
  // Estrin's scheme: shorter chains of roundings than Horner's (4.1 instead of 5.4 ulp for R).
  const VF t2 = hn::Mul(t, t);
  const VF t4 = hn::Mul(t2, t2);
  const auto linear = [&](float c0, float c1) { return hn::Add(hn::Set(df, c0), hn::Mul(hn::Set(df, c1), t)); };
  const VF p = hn::Add(hn::Add(linear(0.5f, 0x1.c3b20ap-2f), hn::Mul(t2, linear(0x1.7b8df4p-3f, 0x1.52abf6p-5f))),
                       hn::Mul(t4, hn::Set(df, 0x1.14b3bep-8f)));
  const VF q = hn::Add(hn::Add(linear(1.0f, 0x1.ae1b36p+0f), hn::Mul(t2, linear(0x1.360ff8p+0f, 0x1.e666acp-2f))),
                       hn::Mul(t4, linear(0x1.a87c18p-4f, 0x1.5aca9cp-7f)));
  return {t, exp_sum_f32(minus_square_hi, minus_square_lo), hn::Div(p, q)};
}

/// GELU, exact: x Phi(x), Phi the standard normal CDF: Phi(x) = Q(t) for x < 0 and 1 - Q(t)
/// otherwise (at least 1/2, no cancellation). For x < 0 the result is
/// -(gaussian (t ratio)), the Gaussian factor multiplied in last, so the tiny results of the
/// negative tail keep their relative accuracy down to the subnormals. gelu(-inf) = -0 (t is
/// bounded), gelu(+inf) = +inf, gelu(-0) = -0; a NaN x makes x (1 - Q) NaN.
HWY_INLINE VF gelu_f32(VF x) {
  const DF df;
  const normal_tail tail = normal_tail_of(x);
  const VF negative = hn::Neg(hn::Mul(tail.gaussian, hn::Mul(tail.t, tail.ratio)));
  const VF positive = hn::Mul(x, hn::Sub(hn::Set(df, 1.0f), hn::Mul(tail.gaussian, tail.ratio)));
  return hn::IfThenElse(hn::Lt(x, hn::Zero(df)), negative, positive);
}

/// gelu'(x) = Phi(x) + x phi(x), phi(x) = e^(-x^2/2) / sqrt(2 pi). With
/// g = gaussian (ratio - t / sqrt(2 pi)) it is g for x < 0 and 1 - g otherwise, written with
/// the bounded t so that gelu'(-inf) = 0 and gelu'(+inf) = 1. g is tiny in the negative tail
/// and keeps its relative accuracy there; near the minimum of gelu (x = -0.7518, where the
/// derivative is 0) ratio and t / sqrt(2 pi) cancel, as any formula's terms must.
HWY_INLINE VF gelu_derivative_f32(VF x) {
  const DF df;
  const normal_tail tail = normal_tail_of(x);
  const VF density_term = hn::Mul(tail.t, hn::Set(df, 0x1.988454p-2f));  // 1 / sqrt(2 pi)
  const VF g = hn::Mul(tail.gaussian, hn::Sub(tail.ratio, density_term));
  const VF d = hn::IfThenElse(hn::Lt(x, hn::Zero(df)), g, hn::Sub(hn::Set(df, 1.0f), g));
  return hn::IfThenElse(hn::IsNaN(x), x, d);
}

/// 2u = x (a + b x^2) of the tanh approximation below, a = 2 sqrt(2/pi), b = 0.044715 a.
HWY_INLINE VF gelu_approximate_two_u(VF x) {
  const DF df;
  return hn::Mul(x, hn::Add(hn::Set(df, 0x1.988454p+0f), hn::Mul(hn::Set(df, 0x1.2444f2p-4f), hn::Mul(x, x))));
}

/// GELU, tanh approximation: 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3),
/// computed as x sigmoid(2u) (the same function: 0.5 (1 + tanh(u)) = 1 / (1 + e^-2u)), which
/// has no cancellation for negative x. gelu_approximate(-inf) = -0, the limit (the formula
/// itself would give -inf * 0).
HWY_INLINE VF gelu_approximate_f32(VF x) {
  const DF df;
  const VF y = hn::Mul(x, sigmoid_f32(gelu_approximate_two_u(x)));
  return hn::IfThenElse(hn::Eq(x, hn::Set(df, -std::numeric_limits<float>::infinity())), hn::Set(df, -0.0f), y);
}

/// The derivative of gelu_approximate_f32's x sigmoid(2u):
/// sigmoid(2u) + x sigmoid(2u) sigmoid(-2u) (a + 3b x^2), the sigmoid and its slope both from
/// e = e^-|2u| (sigmoid_from, sigmoid_slope_from). x is clamped to [-20, 20] first: beyond
/// |x| = 10.7 e is already 0 and the derivative exactly 0 or 1, and the bound keeps
/// x * 0 * (a + 3b x^2) from becoming inf * 0.
HWY_INLINE VF gelu_approximate_derivative_f32(VF x) {
  const DF df;
  const VF bound = hn::Set(df, 20.0f);
  const VF clamped = hn::Min(hn::Max(x, hn::Neg(bound)), bound);
  const VF two_u = gelu_approximate_two_u(clamped);
  const VF e = exp_f32(hn::Neg(hn::Abs(two_u)));
  const VF two_u_slope =
      hn::Add(hn::Set(df, 0x1.988454p+0f), hn::Mul(hn::Set(df, 0x1.b6676cp-3f), hn::Mul(clamped, clamped)));  // 3b
  const VF d = hn::Add(sigmoid_from(two_u, e), hn::Mul(sigmoid_slope_from(e), hn::Mul(clamped, two_u_slope)));
  return hn::IfThenElse(hn::IsNaN(x), x, d);
}

/// sigmoid'(x) = sigmoid(x) sigmoid(-x), from e = e^-|x|.
HWY_INLINE VF sigmoid_derivative_f32(VF x) { return sigmoid_slope_from(exp_f32(hn::Neg(hn::Abs(x)))); }

/// tanh'(x) = 1 - tanh(x)^2 = 4 e / (1 + e)^2 with e = e^-2|x|, which does not cancel as
/// |tanh(x)| approaches 1 (tanh' = 4 sigmoid'(2x)).
HWY_INLINE VF tanh_derivative_f32(VF x) {
  const DF df;
  return hn::Mul(hn::Set(df, 4.0f), sigmoid_slope_from(exp_f32(hn::Mul(hn::Abs(x), hn::Set(df, -2.0f)))));
}

/// max(x, 0) with relu(-0) = +0 (a ReLU output is never negative) and relu(NaN) = NaN.
HWY_INLINE VF relu_f32(VF x) { return hn::IfThenZeroElse(hn::Le(x, hn::Zero(DF())), x); }

/// relu's backward step: dy where x > 0, 0 elsewhere (relu'(0) = 0, and NaN x gives 0).
HWY_INLINE VF relu_backward_f32(VF x, VF dy) { return hn::IfThenElseZero(hn::Gt(x, hn::Zero(DF())), dy); }

/// Calls f with the function object of `a`, so that ActivateFloats is compiled once per
/// activation, with the switch outside its loops.
template <class F>
HWY_INLINE void with_activation(activation a, F&& f) {
  switch (a) {
    case activation::linear: return f([](VF x) { return x; });
    case activation::relu: return f([](VF x) { return relu_f32(x); });
    case activation::gelu: return f([](VF x) { return gelu_f32(x); });
    case activation::gelu_approximate: return f([](VF x) { return gelu_approximate_f32(x); });
    case activation::sigmoid: return f([](VF x) { return sigmoid_f32(x); });
    case activation::tanh: return f([](VF x) { return tanh_f32(x); });
    case activation::exponential: return f([](VF x) { return exp_f32(x); });
    case activation::softmax: return;  // a row operation: elementwise.hpp rejects it
  }
}

/// y = a(x) over floats (y may be x). The one place each activation's loop is compiled, once
/// per target: the kernels on other element types and the fused bias epilogue stage their
/// values through float buffers (activate_staged) instead of compiling every activation into
/// each of them. A value goes through the same float operations either way (float buffers hold
/// it exactly), so the bits are those of a fused loop.
template <class = void>
HWY_NOINLINE void ActivateFloats(activation a, const float* x, float* y, std::size_t n) {
  with_activation(a, [&](auto act) {
    for_each_block<kMaxFloatLanes>(x, y, n, hn::Lanes(DF()), [&](const float* in, float* out) {
      store_as(canonical_nan(act(load_f32(in))), out);
    });
  });
}

/// The activations that cost a few instructions, which the kernels keep fused into their own
/// loops (a staged pass would cost more than the activation): calls f with the function object
/// and returns true, or returns false for the others.
template <class F>
HWY_INLINE bool with_cheap_activation(activation a, F&& f) {
  if (a == activation::linear) f([](VF x) { return x; });
  else if (a == activation::relu) f([](VF x) { return relu_f32(x); });
  else return false;
  return true;
}

/// The elements the kernels on 16-bit types stage through float buffers on the stack.
constexpr std::size_t kActivationStage = 512;

/// Applies `a` (not a cheap one) to n values and rounds them into y: stage(offset, count, buffer)
/// returns the count float inputs at `offset`, written into `buffer` or already floats elsewhere.
/// Float outputs take the results in place; other types through a buffer.
template <class T, class Stage>
HWY_INLINE void activate_staged(activation a, T* y, std::size_t n, Stage&& stage) {
  [[maybe_unused]] HWY_ALIGN float buffer[kActivationStage];
  for (std::size_t offset = 0; offset < n; offset += kActivationStage) {
    const std::size_t count = HWY_MIN(kActivationStage, n - offset);
    if constexpr (std::is_same_v<T, float>) {
      ActivateFloats(a, stage(offset, count, y + offset), y + offset, count);
    } else {
      ActivateFloats(a, stage(offset, count, buffer), buffer, count);
      for_each_block<kMaxFloatLanes>(static_cast<const float*>(buffer), y + offset, count, hn::Lanes(DF()),
                                     [](const float* in, T* out) { store_as(load_f32(in), out); });
    }
  }
}

/// `count` values of T widened into the float buffer `to`; returns it.
template <class T>
HWY_INLINE const float* widened(const T* from, std::size_t count, float* to) {
  for_each_block<kMaxFloatLanes>(from, to, count, hn::Lanes(DF()),
                                 [](const T* in, float* out) { hn::StoreU(load_as_f32(in), DF(), out); });
  return to;
}

template <class T>
void Activate(activation a, const T* x, T* y, std::size_t n) {
  if constexpr (std::is_same_v<T, float>) {
    ActivateFloats(a, x, y, n);
  } else {
    const bool cheap = with_cheap_activation(a, [&](auto act) {
      for_each_block<kMaxFloatLanes>(x, y, n, hn::Lanes(DF()), [&](const T* in, T* out) {
        store_as(canonical_nan(act(load_as_f32(in))), out);
      });
    });
    if (!cheap)
      activate_staged(a, y, n, [&](std::size_t offset, std::size_t count, float* buffer) {
        return widened(x + offset, count, buffer);
      });
  }
}

/// Calls f with the function object (x, dy) -> dx of `a`'s backward step: dx = dy a'(x), but
/// relu selects dy where x > 0 and 0 elsewhere (so relu'(0) = 0, and NaN x gives 0), and linear
/// passes dy on.
template <class F>
HWY_INLINE void with_activation_backward(activation a, F&& f) {
  switch (a) {
    case activation::linear: return f([](VF, VF dy) { return dy; });
    case activation::relu: return f([](VF x, VF dy) { return relu_backward_f32(x, dy); });
    case activation::gelu: return f([](VF x, VF dy) { return hn::Mul(dy, gelu_derivative_f32(x)); });
    case activation::gelu_approximate:
      return f([](VF x, VF dy) { return hn::Mul(dy, gelu_approximate_derivative_f32(x)); });
    case activation::sigmoid: return f([](VF x, VF dy) { return hn::Mul(dy, sigmoid_derivative_f32(x)); });
    case activation::tanh: return f([](VF x, VF dy) { return hn::Mul(dy, tanh_derivative_f32(x)); });
    case activation::exponential: return f([](VF x, VF dy) { return hn::Mul(dy, exp_f32(x)); });
    case activation::softmax: return;  // a row operation: elementwise.hpp rejects it
  }
}

/// dx = a's backward step over floats (dx may be x or dy): each activation's loop compiled once
/// per target, as ActivateFloats.
template <class = void>
HWY_NOINLINE void ActivationBackwardFloats(activation a, const float* x, const float* dy, float* dx, std::size_t n) {
  with_activation_backward(a, [&](auto step) {
    for_each_step<kMaxFloatLanes>(n, hn::Lanes(DF()), [&](const float* in, const float* gradient, float* out) {
      store_as(canonical_nan(step(load_f32(in), load_f32(gradient))), out);
    }, x, dy, dx);
  });
}

template <class T>
void ActivationBackward(activation a, const T* x, const T* dy, T* dx, std::size_t n) {
  if constexpr (std::is_same_v<T, float>) {
    ActivationBackwardFloats(a, x, dy, dx, n);
  } else if (a == activation::linear || a == activation::relu) {
    // Cheap: fused (linear's dx is dy, rounded as every result is).
    const auto step = [&](auto backward) {
      for_each_step<kMaxFloatLanes>(n, hn::Lanes(DF()), [&](const T* in, const T* gradient, T* out) {
        store_as(canonical_nan(backward(load_as_f32(in), load_as_f32(gradient))), out);
      }, x, dy, dx);
    };
    if (a == activation::relu) step([](VF in, VF gradient) { return relu_backward_f32(in, gradient); });
    else step([](VF, VF gradient) { return gradient; });
  } else {
    HWY_ALIGN float inputs[kActivationStage];
    HWY_ALIGN float gradients[kActivationStage];
    for (std::size_t offset = 0; offset < n; offset += kActivationStage) {
      const std::size_t count = HWY_MIN(kActivationStage, n - offset);
      ActivationBackwardFloats(a, widened(x + offset, count, inputs), widened(dy + offset, count, gradients), gradients,
                               count);
      for_each_block<kMaxFloatLanes>(static_cast<const float*>(gradients), dx + offset, count, hn::Lanes(DF()),
                                     [](const float* in, T* out) { store_as(load_f32(in), out); });
    }
  }
}

template <class = void>
void AddRowsF32(const float* from, std::size_t from_stride, float* to, std::size_t to_stride, std::size_t rows,
                std::size_t row_length) {
  for (std::size_t r = 0; r < rows; ++r)
    for_each_step<kMaxFloatLanes>(row_length, hn::Lanes(DF()), [](const float* x, float* y) {
      hn::StoreU(canonical_nan(hn::Add(hn::LoadU(DF(), y), hn::LoadU(DF(), x))), DF(), y);
    }, from + r * from_stride, to + r * to_stride);
}

template <class T>
void BiasAdd(T* rows, std::size_t n, const T* bias, std::size_t cols) {
  for (std::size_t start = 0; start < n; start += cols) {
    for_each_step<kMaxFloatLanes>(cols, hn::Lanes(DF()), [](const T* b, T* y) {
      store_as(canonical_nan(hn::Add(load_as_f32(y), load_as_f32(b))), y);
    }, bias, rows + start);
  }
}

/// The largest element of a row (any NaN among them makes the row NaN downstream anyway).
template <class T>
HWY_INLINE float row_max(const T* x, std::size_t cols) {
  const DF df;
  const std::size_t lanes = hn::Lanes(df);
  float largest = -std::numeric_limits<float>::infinity();
  std::size_t i = 0;
  if (cols >= lanes) {
    VF m = load_as_f32(x);
    for (i = lanes; i + lanes <= cols; i += lanes) m = hn::Max(m, load_as_f32(x + i));
    largest = hn::GetLane(hn::MaxOfLanes(df, m));
  }
  // Zero padding would be wrong for a maximum: the ragged tail goes one element at a time.
  for (; i < cols; ++i) {
    const float v = static_cast<float>(x[i]);
    largest = v > largest ? v : largest;
  }
  return largest;
}

template <class T>
void SoftmaxRows(const T* x, T* y, std::size_t n, std::size_t cols) {
  const DF df;
  const std::size_t lanes = hn::Lanes(df);
  // e^(x - max) needs float precision until the division: float rows hold it in y itself.
  std::vector<float> scratch(std::is_same_v<T, float> ? 0 : cols);
  for (std::size_t start = 0; start < n; start += cols) {
    const T* in = x + start;
    float* exps;
    if constexpr (std::is_same_v<T, float>) exps = y + start;
    else exps = scratch.data();
    const VF shift = hn::Set(df, row_max(in, cols));
    for_each_block<kMaxFloatLanes>(in, exps, cols, lanes, [&](const T* p, float* e) {
      hn::StoreU(exp_f32(hn::Sub(load_as_f32(p), shift)), df, e);
    });
    const VF total = hn::Set(df, Sum(exps, cols));
    for_each_block<kMaxFloatLanes>(static_cast<const float*>(exps), y + start, cols, lanes, [&](const float* e, T* out) {
      store_as(canonical_nan(hn::Div(load_f32(e), total)), out);
    });
  }
}

/// Per row: s = dot(dy, y) in the fixed order of dot(), then dx = y (dy - s), rounded once.
/// Each element of dx reads only y and dy at its own index, so dx may replace dy.
template <class T>
void SoftmaxRowsBackward(const T* y, const T* dy, T* dx, std::size_t n, std::size_t cols) {
  const DF df;
  for (std::size_t start = 0; start < n; start += cols) {
    const VF weighted_sum = hn::Set(df, Dot(dy + start, y + start, cols));
    for_each_step<kMaxFloatLanes>(cols, hn::Lanes(df), [&](const T* probability, const T* gradient, T* out) {
      store_as(canonical_nan(hn::Mul(load_as_f32(probability), hn::Sub(load_as_f32(gradient), weighted_sum))), out);
    }, y + start, dy + start, dx + start);
  }
}

template <class T>
void BiasActivation(const float* acc, const T* bias, activation a, T* y, std::size_t n, std::size_t cols) {
  const std::size_t lanes = hn::Lanes(DF());
  const bool cheap = with_cheap_activation(a, [&](auto act) {
    if (bias == nullptr) {
      for_each_block<kMaxFloatLanes>(acc, y, n, lanes, [&](const float* in, T* out) {
        store_as(canonical_nan(act(load_f32(in))), out);
      });
      return;
    }
    for (std::size_t start = 0; start < n; start += cols) {
      for_each_step<kMaxFloatLanes>(cols, lanes, [&](const float* in, const T* b, T* out) {
        store_as(canonical_nan(act(hn::Add(load_f32(in), load_as_f32(b)))), out);
      }, acc + start, bias, y + start);
    }
  });
  if (cheap) return;
  if (bias == nullptr) {
    activate_staged(a, y, n, [&](std::size_t offset, std::size_t, float*) { return acc + offset; });
    return;
  }
  for (std::size_t start = 0; start < n; start += cols) {
    activate_staged(a, y + start, cols, [&](std::size_t offset, std::size_t count, float* buffer) {
      for_each_step<kMaxFloatLanes>(count, lanes, [](const float* in, const T* b, float* out) {
        hn::StoreU(hn::Add(load_f32(in), load_as_f32(b)), DF(), out);
      }, acc + start + offset, bias + offset, buffer);
      return static_cast<const float*>(buffer);
    });
  }
}

MIXPREC_KERNELS_END

#endif  // toggle guard
