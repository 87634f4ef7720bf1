// Per-target quantize_rows, dequantize_rows and float8 quantize_dequantize (kernels/quantize.hpp). Bit-identical on every
// target: the row maximum is exact (reduce-inl.hpp's Amax on the encodings for float and
// bfloat16; a compare-and-select for double), the scale is one scalar rule (quantize_rule.hpp),
// each product, quotient and sum is one IEEE operation rounded to nearest (no fused
// multiply-add: MIXPREC_KERNELS_BEGIN turns contraction off), rounding to an integer adds and
// subtracts 1.5 * 2^23 (2^52 for double), and a ragged tail runs the same vector code on a
// zero-padded copy (common-inl.hpp's for_each_step).
//
// Toggle-guarded on MIXPREC_KERNELS_INT8_TOGGLE: int8_implementation.hpp compiles it once per
// target, after the other kernels (it uses their per-target helpers: convert-inl.hpp's loads and
// stores, reduce-inl.hpp's Amax).
#if defined(MIXPREC_KERNELS_QUANTIZE_INL_HPP_) == defined(MIXPREC_KERNELS_INT8_TOGGLE)
#ifdef MIXPREC_KERNELS_QUANTIZE_INL_HPP_
#undef MIXPREC_KERNELS_QUANTIZE_INL_HPP_
#else
#define MIXPREC_KERNELS_QUANTIZE_INL_HPP_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>

#include <hwy/highway.h>
#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/detail/gemm_entry_points.hpp>
#include <mixprec/kernels/detail/kernel_macros.hpp>
#include <mixprec/kernels/detail/quantize_rule.hpp>
#include <mixprec/kernels/thread_pool.hpp>

MIXPREC_KERNELS_BEGIN
namespace int8_rows {
namespace hn = hwy::HWY_NAMESPACE;
namespace kd = mixprec::kernels::detail;

using DD = hn::ScalableTag<double>;
constexpr std::size_t kMaxDoubleLanes = HWY_MAX_BYTES / sizeof(double);

/// row(r) for every r < rows; split into one block of rows per thread of the GEMM pool when the
/// rows hold at least int8_rows_parallel_elements elements. Rows are independent, so the split
/// cannot change a result.
template <class Row>
void for_each_row(std::size_t rows, std::size_t cols, Row&& row) {
  if (rows < 2 || rows * cols < kd::int8_rows_parallel_elements) {
    for (std::size_t r = 0; r < rows; ++r) row(r);
    return;
  }
  const std::shared_ptr<thread_pool> pool = kd::gemm_thread_pool();
  const std::size_t tasks = std::min(rows, pool->size());
  pool->run(tasks, [&](std::size_t task) {
    for (std::size_t r = rows * task / tasks; r < rows * (task + 1) / tasks; ++r) row(r);
  });
}

/// max |x[i]|, exactly; NaN (the canonical quiet NaN) if any element is NaN. 0 for n == 0.
inline double amax_f64(const double* x, std::size_t n) {
  const DD dd;
  auto largest = hn::Zero(dd);
  auto nan_seen = hn::Zero(dd);
  for_each_step<kMaxDoubleLanes>(n, hn::Lanes(dd), [&](const double* p) {
    const auto magnitude = hn::Abs(hn::LoadU(dd, p));
    nan_seen = hn::Or(nan_seen, hn::VecFromMask(dd, hn::IsNaN(magnitude)));
    largest = hn::IfThenElse(hn::Gt(magnitude, largest), magnitude, largest);
  }, x);
  if (!hn::AllFalse(dd, hn::MaskFromVec(nan_seen))) return std::numeric_limits<double>::quiet_NaN();
  return hn::GetLane(hn::MaxOfLanes(dd, largest));
}

/// q[i] = clamp(round_half_even(x[i] * scale), -127, 127) in float, NaN -> 0 (T float or bfloat16).
template <class T>
void quantize_row(const T* x, std::size_t n, float scale, std::int8_t* q) {
  const DF df;
  map(x, q, n, [&](const T* in, std::int8_t* out) {
    auto v = hn::Mul(load_as_f32(in), hn::Set(df, scale));
    v = hn::IfThenElseZero(hn::Eq(v, v), v);  // NaN -> 0
    v = hn::Min(hn::Max(v, hn::Set(df, -127.0f)), hn::Set(df, 127.0f));
    // + 1.5 * 2^23 rounds to an integer, ties to even, and leaves it in the low mantissa bits.
    const auto biased = hn::BitCast(DI(), hn::Add(v, hn::Set(df, 12582912.0f)));
    hn::StoreU(hn::DemoteTo(DI8(), hn::Sub(biased, hn::Set(DI(), 0x4B400000))), DI8(), out);
  });
}

/// The same in double, with the scale widened.
inline void quantize_row(const double* x, std::size_t n, float scale, std::int8_t* q) {
  const DD dd;
  const hn::Rebind<std::int32_t, DD> di32;
  const hn::Rebind<std::int8_t, DD> di8;
  for_each_block<kMaxDoubleLanes>(x, q, n, hn::Lanes(dd), [&](const double* in, std::int8_t* out) {
    auto v = hn::Mul(hn::LoadU(dd, in), hn::Set(dd, static_cast<double>(scale)));
    v = hn::IfThenElseZero(hn::Eq(v, v), v);
    v = hn::Min(hn::Max(v, hn::Set(dd, -127.0)), hn::Set(dd, 127.0));
    const auto magic = hn::Set(dd, 6755399441055744.0);  // 1.5 * 2^52: no fraction bits left
    v = hn::Sub(hn::Add(v, magic), magic);                 // nearest integer, ties to even
    hn::StoreU(hn::DemoteTo(di8, hn::DemoteTo(di32, v)), di8, out);
  });
}

template <class T>
float row_scale(const T* x, std::size_t n) {
  if constexpr (std::is_same_v<T, double>) return kd::int8_scale(amax_f64(x, n));
  else return kd::int8_scale(Amax(x, n));
}

/// out[c] = T(float(acc[c]) / (row_scale * col_scales[c]) (+ float(bias[c]))), NaN canonical
/// (T float or bfloat16; no bias when `bias` is null).
template <class T>
void dequantize_row(const std::int32_t* acc, std::size_t n, float row_scale, const float* col_scales, const T* bias,
                    T* out) {
  const DF df;
  const DI di;
  const auto scale = hn::Set(df, row_scale);
  const auto quotient = [&](const std::int32_t* a, const float* s) {
    return hn::Div(hn::ConvertTo(df, hn::LoadU(di, a)), hn::Mul(scale, hn::LoadU(df, s)));
  };
  if (bias != nullptr) {
    for_each_step<kMaxFloatLanes>(n, hn::Lanes(df), [&](const std::int32_t* a, const float* s, const T* b, T* o) {
      store_as(canonical_nan(hn::Add(quotient(a, s), load_as_f32(b))), o);
    }, acc, col_scales, bias, out);
  } else {
    for_each_step<kMaxFloatLanes>(n, hn::Lanes(df), [&](const std::int32_t* a, const float* s, T* o) {
      store_as(canonical_nan(quotient(a, s)), o);
    }, acc, col_scales, out);
  }
}

/// The same in double (the scales widened exactly).
inline void dequantize_row(const std::int32_t* acc, std::size_t n, float row_scale, const float* col_scales,
                           const double* bias, double* out) {
  const DD dd;
  const hn::Rebind<std::int32_t, DD> di32;
  const hn::Rebind<float, DD> df32;
  const auto scale = hn::Set(dd, static_cast<double>(row_scale));
  const auto quotient = [&](const std::int32_t* a, const float* s) {
    return hn::Div(hn::PromoteTo(dd, hn::LoadU(di32, a)), hn::Mul(scale, hn::PromoteTo(dd, hn::LoadU(df32, s))));
  };
  if (bias != nullptr) {
    for_each_step<kMaxDoubleLanes>(n, hn::Lanes(dd), [&](const std::int32_t* a, const float* s, const double* b,
                                                         double* o) {
      hn::StoreU(canonical_nan(hn::Add(quotient(a, s), hn::LoadU(dd, b))), dd, o);
    }, acc, col_scales, bias, out);
  } else {
    for_each_step<kMaxDoubleLanes>(n, hn::Lanes(dd), [&](const std::int32_t* a, const float* s, double* o) {
      hn::StoreU(canonical_nan(quotient(a, s)), dd, o);
    }, acc, col_scales, out);
  }
}

}  // namespace int8_rows

/// y[i] = T(decode(encode<F>(clamp(x[i] / scale, -max, max))) * scale) in float (NaN stays NaN,
/// canonical), F float8_e4m3fn or float8_e5m2, T float, bfloat16 or float16; returns max |x[i]|
/// (NaN if any is NaN).
template <class F, class T>
float QuantizeDequantize(const T* x, std::size_t n, float scale, T* y) {
  constexpr minifloat_format format = F::format;
  const DF df;
  const auto s = hn::Set(df, scale);
  const auto limit = hn::Set(df, mixprec::kernels::detail::float8_max_finite<format>());
  auto largest = hn::Zero(df);
  auto nan_seen = hn::Zero(df);
  for_each_step<kMaxFloatLanes>(n, hn::Lanes(df), [&](const T* in, T* out) {
    const auto v = load_as_f32(in);
    const auto magnitude = hn::Abs(v);
    nan_seen = hn::Or(nan_seen, hn::VecFromMask(df, hn::IsNaN(magnitude)));
    largest = hn::IfThenElse(hn::Gt(magnitude, largest), magnitude, largest);
    const auto scaled = hn::Div(v, s);
    const auto clipped = hn::IfThenElse(hn::IsNaN(scaled), scaled, hn::Min(hn::Max(scaled, hn::Neg(limit)), limit));
    store_as(canonical_nan(hn::Mul(decode<format>(encode<format>(clipped, true)), s)), out);
  }, x, y);
  if (!hn::AllFalse(df, hn::MaskFromVec(nan_seen))) return std::numeric_limits<float>::quiet_NaN();
  return hn::GetLane(hn::MaxOfLanes(df, largest));
}

/// Each row's scale, then its int8 values (T float, bfloat16 or double).
template <class T>
void QuantizeRows(const T* x, std::size_t rows, std::size_t cols, std::int8_t* q, float* scales) {
  int8_rows::for_each_row(rows, cols, [&](std::size_t r) {
    const T* row = x + r * cols;
    const float scale = int8_rows::row_scale(row, cols);
    scales[r] = scale;
    int8_rows::quantize_row(row, cols, scale, q + r * cols);
  });
}

/// The epilogue, row by row (T float, bfloat16 or double).
template <class T>
void DequantizeRows(const std::int32_t* acc, std::size_t rows, std::size_t cols, const float* row_scales,
                    const float* col_scales, const T* bias, T* out) {
  int8_rows::for_each_row(rows, cols, [&](std::size_t r) {
    int8_rows::dequantize_row(acc + r * cols, cols, row_scales[r], col_scales, bias, out + r * cols);
  });
}

MIXPREC_KERNELS_END

#endif  // toggle guard
