// Per-target elementwise kernels: activations, bias adds, row softmax and the fused dense
// epilogue. Every T (float, bfloat16, float16) is widened exactly to float, computed in float and
// rounded once to T as convert does. The math is written here with plain Mul/Add/Sub/Div, never
// Highway's contrib math (whose MulAdd is fused on AVX2 but not on SSE4), and the kernel macros
// turn contraction off, so every target rounds every step alike: the results are bit-identical.
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
  const DF df;
  const DI di;
  // Beyond these bounds the result is inf (e^89 > FLT_MAX) or rounds to 0 (e^-104 < 2^-150).
  const VF clamped = hn::Min(hn::Max(x, hn::Set(df, -104.0f)), hn::Set(df, 89.0f));
  const VF n = round_half_even_small(df, hn::Mul(clamped, hn::Set(df, 0x1.715476p+0f)));  // log2(e)
  const VF r = hn::Sub(hn::Sub(clamped, hn::Mul(n, hn::Set(df, 0x1.62e4p-1f))), hn::Mul(n, hn::Set(df, 0x1.7f7d1cp-20f)));
  VF p = hn::Set(df, 0x1.6a244cp-10f);
  p = hn::Add(hn::Mul(p, r), hn::Set(df, 0x1.1239d4p-7f));
  p = hn::Add(hn::Mul(p, r), hn::Set(df, 0x1.5558f2p-5f));
  p = hn::Add(hn::Mul(p, r), hn::Set(df, 0x1.555492p-3f));
  p = hn::Add(hn::Mul(p, r), hn::Set(df, 0x1.fffffcp-2f));
  const VF e_r = hn::Add(hn::Set(df, 1.0f), hn::Add(r, hn::Mul(hn::Mul(r, r), p)));
  const auto k = hn::ConvertTo(di, n);
  const auto half = hn::ShiftRight<1>(k);
  const VF result = hn::Mul(hn::Mul(e_r, power_of_two(hn::Sub(k, half))), power_of_two(half));
  return hn::IfThenElse(hn::IsNaN(x), x, result);
}

/// 1 / (1 + e^-x), within about 2 ulp, never overflowing: with e = e^-|x| in (0, 1], it is
/// 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0, so tiny results keep their relative
/// accuracy down to the subnormals. sigmoid(-inf) = 0, sigmoid(+inf) = 1.
HWY_INLINE VF sigmoid_f32(VF x) {
  const DF df;
  const VF one = hn::Set(df, 1.0f);
  const VF e = exp_f32(hn::Neg(hn::Abs(x)));
  return hn::Div(hn::IfThenElse(hn::Lt(x, hn::Zero(df)), e, one), hn::Add(one, e));
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

/// GELU, tanh approximation: 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3),
/// computed as x sigmoid(2u) (the same function: 0.5 (1 + tanh(u)) = 1 / (1 + e^-2u)), which
/// has no cancellation for negative x. 2u = x (a + b x^2), a = 2 sqrt(2/pi), b = 0.044715 a.
/// gelu(-inf) = -0, the limit (the formula itself would give -inf * 0).
HWY_INLINE VF gelu_f32(VF x) {
  const DF df;
  const VF two_u = hn::Mul(x, hn::Add(hn::Set(df, 0x1.988454p+0f), hn::Mul(hn::Set(df, 0x1.2444f2p-4f), hn::Mul(x, x))));
  const VF y = hn::Mul(x, sigmoid_f32(two_u));
  return hn::IfThenElse(hn::Eq(x, hn::Set(df, -std::numeric_limits<float>::infinity())), hn::Set(df, -0.0f), y);
}

/// max(x, 0) with relu(-0) = +0 (a ReLU output is never negative) and relu(NaN) = NaN.
HWY_INLINE VF relu_f32(VF x) { return hn::IfThenZeroElse(hn::Le(x, hn::Zero(DF())), x); }

/// Calls f with the function object of `a`, so that the kernels are compiled once per
/// activation, with the switch outside their loops.
template <class F>
HWY_INLINE void with_activation(activation a, F&& f) {
  switch (a) {
    case activation::linear: return f([](VF x) { return x; });
    case activation::relu: return f([](VF x) { return relu_f32(x); });
    case activation::gelu: return f([](VF x) { return gelu_f32(x); });
    case activation::sigmoid: return f([](VF x) { return sigmoid_f32(x); });
    case activation::tanh: return f([](VF x) { return tanh_f32(x); });
    case activation::exp: return f([](VF x) { return exp_f32(x); });
  }
}

template <class T>
void Activate(activation a, const T* x, T* y, std::size_t n) {
  with_activation(a, [&](auto act) {
    for_each_block<kMaxFloatLanes>(x, y, n, hn::Lanes(DF()), [&](const T* in, T* out) {
      store_as(canonical_nan(act(load_as_f32(in))), out);
    });
  });
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

template <class T>
void BiasActivation(const float* acc, const T* bias, activation a, T* y, std::size_t n, std::size_t cols) {
  const std::size_t lanes = hn::Lanes(DF());
  with_activation(a, [&](auto act) {
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
}

void ActivateF32(activation a, const float* x, float* y, std::size_t n) { Activate(a, x, y, n); }
void ActivateBF16(activation a, const bfloat16* x, bfloat16* y, std::size_t n) { Activate(a, x, y, n); }
void ActivateF16(activation a, const float16* x, float16* y, std::size_t n) { Activate(a, x, y, n); }
void BiasAddF32(float* rows, std::size_t n, const float* bias, std::size_t cols) { BiasAdd(rows, n, bias, cols); }
void BiasAddBF16(bfloat16* rows, std::size_t n, const bfloat16* bias, std::size_t cols) { BiasAdd(rows, n, bias, cols); }
void BiasAddF16(float16* rows, std::size_t n, const float16* bias, std::size_t cols) { BiasAdd(rows, n, bias, cols); }
void SoftmaxRowsF32(const float* x, float* y, std::size_t n, std::size_t cols) { SoftmaxRows(x, y, n, cols); }
void SoftmaxRowsBF16(const bfloat16* x, bfloat16* y, std::size_t n, std::size_t cols) { SoftmaxRows(x, y, n, cols); }
void SoftmaxRowsF16(const float16* x, float16* y, std::size_t n, std::size_t cols) { SoftmaxRows(x, y, n, cols); }
void BiasActivationF32(const float* acc, const float* bias, activation a, float* y, std::size_t n, std::size_t cols) {
  BiasActivation(acc, bias, a, y, n, cols);
}
void BiasActivationBF16(const float* acc, const bfloat16* bias, activation a, bfloat16* y, std::size_t n, std::size_t cols) {
  BiasActivation(acc, bias, a, y, n, cols);
}
void BiasActivationF16(const float* acc, const float16* bias, activation a, float16* y, std::size_t n, std::size_t cols) {
  BiasActivation(acc, bias, a, y, n, cols);
}

MIXPREC_KERNELS_END

#endif  // toggle guard
