// Per-target reductions over float, bfloat16 and float16. all_finite and amax are exact integer
// work on the encodings (sign cleared), so lane count and order cannot change them. sum and dot
// add in the fixed order of summation_order.hpp, without fused multiply-adds, so they return the
// same bits on every target. column_max only selects, lane by lane; column_sum adds each column
// in row order, one lane per column, so the vector width never changes an order.
#if defined(MIXPREC_KERNELS_REDUCE_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef MIXPREC_KERNELS_REDUCE_INL_HPP_
#undef MIXPREC_KERNELS_REDUCE_INL_HPP_
#else
#define MIXPREC_KERNELS_REDUCE_INL_HPP_
#endif

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include <hwy/highway.h>
#include <mixprec/core/cast.hpp>
#include <mixprec/core/detail/minifloat_codec.hpp>
#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/detail/batch_norm_rule.hpp>
#include <mixprec/kernels/detail/common-inl.hpp>
#include <mixprec/kernels/detail/convert-inl.hpp>
#include <mixprec/kernels/detail/kernel_macros.hpp>
#include <mixprec/kernels/detail/reduce_entry_points.hpp>
#include <mixprec/kernels/detail/summation_order.hpp>

MIXPREC_KERNELS_BEGIN
namespace hn = hwy::HWY_NAMESPACE;

/// float, bfloat16 or float16 as the layout of its encoding.
template <class T>
constexpr mixprec::detail::minifloat_format format_of() {
  if constexpr (std::is_same_v<T, float>) return {8, 23, true};
  else return T::format;
}

/// Signed integer lanes as wide as T: magnitudes of encodings (sign cleared) compare as the
/// values do, and every NaN is above the infinity.
template <class T>
using BitsTag = hn::ScalableTag<std::conditional_t<sizeof(T) == 4, std::int32_t, std::int16_t>>;

template <class T>
HWY_INLINE hn::Vec<BitsTag<T>> load_magnitude_bits(const T* p) {
  using D = BitsTag<T>;
  using Bits = hn::TFromD<D>;
  const auto bits = hn::LoadU(D(), reinterpret_cast<const Bits*>(p));
  return hn::And(bits, hn::Set(D(), static_cast<Bits>(format_of<T>().sign_bit() - 1)));
}

/// Vectors per step of amax: independent chains hide the Max latency.
constexpr std::size_t kBitsUnroll = 4;
/// Vectors per step of all_finite, which tests for an early exit once per step.
constexpr std::size_t kFiniteUnroll = 8;

template <class T>
bool AllFinite(const T* x, std::size_t n) {
  using D = BitsTag<T>;
  using Bits = hn::TFromD<D>;
  const D d;
  const std::size_t lanes = hn::Lanes(d);
  // Gt with infinity - 1: integer Ge is missing on some targets.
  const auto largest_finite = hn::Set(d, static_cast<Bits>(format_of<T>().infinity() - 1));
  return for_each_step<kFiniteUnroll * hn::MaxLanes(D())>(n, kFiniteUnroll * lanes, [&](const T* p) {
    auto largest = load_magnitude_bits(p);
    unroll<kFiniteUnroll - 1>([&](auto v) { largest = hn::Max(largest, load_magnitude_bits(p + (v + 1) * lanes)); });
    return hn::AllFalse(d, hn::Gt(largest, largest_finite));  // false ends the scan
  }, x);
}

template <class T>
float Amax(const T* x, std::size_t n) {
  using D = BitsTag<T>;
  const D d;
  const std::size_t lanes = hn::Lanes(d);
  hn::Vec<D> largest[kBitsUnroll];
  for (auto& v : largest) v = hn::Zero(d);
  for_each_step<kBitsUnroll * hn::MaxLanes(D())>(n, kBitsUnroll * lanes, [&](const T* p) {
    unroll<kBitsUnroll>([&](auto v) { largest[v] = hn::Max(largest[v], load_magnitude_bits(p + v * lanes)); });
  }, x);
  const auto all = hn::Max(hn::Max(largest[0], largest[1]), hn::Max(largest[2], largest[3]));
  const auto bits = static_cast<std::uint32_t>(hn::GetLane(hn::MaxOfLanes(d, all)));
  constexpr auto format = format_of<T>();
  if (bits > format.infinity()) return std::numeric_limits<float>::quiet_NaN();
  if constexpr (std::is_same_v<T, float>) return std::bit_cast<float>(bits);
  else return mixprec::detail::decode_to_float(format, bits);
}

constexpr std::size_t kSumVectors = mixprec::kernels::detail::sum_lanes / hn::MaxLanes(DF());
static_assert(kSumVectors * hn::MaxLanes(DF()) == mixprec::kernels::detail::sum_lanes,
              "the fixed summation order needs fixed-width vectors of at most 32 floats");

/// The sum of term(p...) over n elements in the fixed order of summation_order.hpp: term
/// returns the float terms of Lanes(DF()) consecutive elements.
template <class Term, class... In>
HWY_INLINE float OrderedSum(std::size_t n, Term term, const In*... in) {
  namespace order = mixprec::kernels::detail;
  const DF df;
  const std::size_t lanes = hn::Lanes(df);
  order::chunk_cascade<float> cascade;
  for (std::size_t start = 0; start < n; start += order::sum_chunk) {
    hn::Vec<DF> accumulators[kSumVectors];
    for (auto& a : accumulators) a = hn::Zero(df);
    const std::size_t count = n - start < order::sum_chunk ? n - start : order::sum_chunk;
    // Zero padding of the last block adds +0, which leaves every accumulator as it is (a sum
    // that starts at +0 is never -0).
    for_each_step<order::sum_lanes>(count, order::sum_lanes, [&](const In*... p) {
      unroll<kSumVectors>([&](auto v) { accumulators[v] = hn::Add(accumulators[v], term((p + v * lanes)...)); });
    }, (in + start)...);
    typename order::chunk_cascade<float>::lanes_type chunk;
    for (std::size_t v = 0; v < kSumVectors; ++v) hn::StoreU(accumulators[v], df, chunk.data() + v * lanes);
    cascade.add_chunk(chunk);
  }
  return cascade.total();
}

template <class T>
float Sum(const T* x, std::size_t n) {
  return OrderedSum(n, [](const T* p) { return load_as_f32(p); }, x);
}

template <class T>
float Dot(const T* a, const T* b, std::size_t n) {
  // Each product is rounded to float before it is added: no target may fuse (SSE4 cannot).
  return OrderedSum(n, [](const T* p, const T* q) { return hn::Mul(load_as_f32(p), load_as_f32(q)); }, a, b);
}

template <class T>
bool UnscaleAndCheckFinite(T* gradients, std::size_t n, float inv_scale) {
  const DF df;
  const DI di;
  constexpr auto format = format_of<T>();
  const auto scale = hn::Set(df, inv_scale);
  const auto magnitude = hn::Set(di, static_cast<std::int32_t>(format.sign_bit() - 1));
  auto largest = hn::Zero(di);
  // The zero padding of a ragged tail turns into 0 * inv_scale, which is finite unless
  // inv_scale is inf or NaN; then every real element's product is inf or NaN too (n > 0).
  for_each_block<kMaxFloatLanes>(gradients, gradients, n, hn::Lanes(df), [&](const T* in, T* out) {
    const auto encoding = encode_as<T>(hn::Mul(load_as_f32(in), scale));
    store_encoding(encoding, out);
    largest = hn::Max(largest, hn::And(encoding, magnitude));
  });
  return hn::AllFalse(di, hn::Gt(largest, hn::Set(di, static_cast<std::int32_t>(format.infinity() - 1))));
}

/// Vectors of columns the column kernels (column_max, column_sum) carry down the rows at once:
/// 32 float columns on AVX2, in one pass over the rows.
constexpr std::size_t kColumnVectors = 4;

/// Walks the columns [0, cols) of a row-major matrix in blocks of kColumnVectors vectors of
/// `lanes` lanes (float vectors unless told), then of single vectors: block(std::integral_constant<
/// std::size_t, Vectors>(), c) handles columns [c, c + Vectors * lanes). Returns the first column
/// left over (fewer than a vector's worth), which the caller finishes with scalar code.
template <class Block>
HWY_INLINE std::size_t for_each_column_block(std::size_t cols, Block&& block, std::size_t lanes = hn::Lanes(DF())) {
  std::size_t c = 0;
  for (; c + kColumnVectors * lanes <= cols; c += kColumnVectors * lanes)
    block(std::integral_constant<std::size_t, kColumnVectors>(), c);
  for (; c + lanes <= cols; c += lanes) block(std::integral_constant<std::size_t, 1>(), c);
  return c;
}

/// One step of column_max's running maximum, lane by lane (replaces_maximum's rule).
HWY_INLINE hn::Vec<DF> running_maximum(hn::Vec<DF> largest, hn::Vec<DF> value) {
  const auto replaces = hn::AndNot(hn::IsNaN(largest), hn::Or(hn::IsNaN(value), hn::Gt(value, largest)));
  return hn::IfThenElse(replaces, value, largest);
}

/// Columns [c, c + Vectors * lanes) of column_max: the maxima stay in registers while the rows
/// stream by, with a lane-wise select (no arithmetic, so no target can round differently).
/// 16-bit values are compared widened to float (exactly) and the maxima stored back as
/// convert<float, T> rounds them: unchanged, but for a NaN, which comes back quiet.
template <std::size_t Vectors, class T>
HWY_INLINE void ColumnMaxBlock(const T* rows, std::size_t n, T* maxima, std::size_t cols, std::size_t c) {
  const std::size_t lanes = hn::Lanes(DF());
  hn::Vec<DF> largest[Vectors];
  unroll<Vectors>([&](auto v) { largest[v] = load_as_f32(maxima + c + v * lanes); });
  for (std::size_t row = c; row < n; row += cols)
    unroll<Vectors>([&](auto v) { largest[v] = running_maximum(largest[v], load_as_f32(rows + row + v * lanes)); });
  unroll<Vectors>([&](auto v) { store_as(largest[v], maxima + c + v * lanes); });
}

/// Column blocks, then the columns past the last whole vector with the scalar step (in float,
/// rounded back once, as the blocks do).
template <class T>
void ColumnMax(const T* rows, std::size_t n, T* maxima, std::size_t cols) {
  const std::size_t tail = for_each_column_block(cols, [&](auto vectors, std::size_t c) {
    ColumnMaxBlock<decltype(vectors)::value>(rows, n, maxima, cols, c);
  });
  for (std::size_t j = tail; j < cols && n > 0; ++j) {
    float largest = static_cast<float>(maxima[j]);
    for (std::size_t row = 0; row < n; row += cols)
      if (kernels::detail::replaces_maximum(largest, static_cast<float>(rows[row + j])))
        largest = static_cast<float>(rows[row + j]);
    maxima[j] = cast<T>(largest);
  }
}

/// Columns [c, c + Vectors * lanes) of column_max_backward: which lanes have routed their
/// gradient stays in registers while the window's elements stream by; an element takes the
/// gradient (one add to its float dx) only in the lanes where it is the first to hold the
/// maximum. 16-bit values are compared widened to float. Without maxima (null), a first pass
/// over the window finds them, as column_max would.
template <std::size_t Vectors, class T>
HWY_INLINE void ColumnMaxBackwardBlock(const T* x, const T* maxima, const T* dmaxima, float* dx, std::size_t cols,
                                       std::size_t rows, std::size_t row_length, std::size_t row_stride,
                                       std::size_t c) {
  const DF df;
  using M = hn::Mask<DF>;
  const std::size_t lanes = hn::Lanes(df);
  hn::Vec<DF> maximum[Vectors], gradient[Vectors];
  M maximum_is_nan[Vectors], routed[Vectors];
  unroll<Vectors>([&](auto v) {
    maximum[v] = maxima != nullptr ? load_as_f32(maxima + c + v * lanes)
                                   : hn::Set(df, -std::numeric_limits<float>::infinity());
  });
  if (maxima == nullptr)
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t at = r * row_stride + c; at < r * row_stride + row_length; at += cols)
        unroll<Vectors>([&](auto v) { maximum[v] = running_maximum(maximum[v], load_as_f32(x + at + v * lanes)); });
  unroll<Vectors>([&](auto v) {
    gradient[v] = load_as_f32(dmaxima + c + v * lanes);
    maximum_is_nan[v] = hn::IsNaN(maximum[v]);
    routed[v] = hn::FirstN(df, 0);
  });
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t at = r * row_stride + c; at < r * row_stride + row_length; at += cols)
      unroll<Vectors>([&](auto v) {
        const auto value = load_as_f32(x + at + v * lanes);
        const M holds = hn::Or(hn::Eq(value, maximum[v]), hn::And(hn::IsNaN(value), maximum_is_nan[v]));
        const M first = hn::AndNot(routed[v], holds);
        if (hn::AllFalse(df, first)) return;
        float* out = dx + at + v * lanes;
        const auto before = hn::LoadU(df, out);
        hn::StoreU(hn::IfThenElse(first, hn::Add(before, gradient[v]), before), df, out);
        routed[v] = hn::Or(routed[v], holds);
      });
}

template <class T>
void ColumnMaxBackward(const T* x, const T* maxima, const T* dmaxima, float* dx, std::size_t cols, std::size_t rows,
                       std::size_t row_length, std::size_t row_stride) {
  const std::size_t tail = for_each_column_block(cols, [&](auto vectors, std::size_t c) {
    ColumnMaxBackwardBlock<decltype(vectors)::value>(x, maxima, dmaxima, dx, cols, rows, row_length, row_stride, c);
  });
  kernels::detail::column_max_backward_rule(x, maxima, dmaxima, dx, cols, tail, cols, rows, row_length, row_stride);
}

/// Batch normalization's column statistics accumulate in double: one double lane per column,
/// fed from as many float lanes.
using DD = hn::ScalableTag<double>;
using DFHalf = hn::Rebind<float, DD>;

HWY_INLINE hn::Vec<DD> load_as_f64(const float* p) { return hn::PromoteTo(DD(), hn::LoadU(DFHalf(), p)); }

/// Columns [c, c + Vectors * lanes) of batch_norm_moments: sums, then squared deviations from
/// the mean, each column in row order, as batch_norm_moments_rule does.
template <std::size_t Vectors>
HWY_INLINE void BatchNormMomentsBlock(const float* x, std::size_t n, std::size_t cols, std::size_t c, double* mean,
                                      double* variance) {
  const DD dd;
  const std::size_t lanes = hn::Lanes(dd);
  const auto rows = hn::Set(dd, static_cast<double>(n / cols));
  hn::Vec<DD> sums[Vectors], means[Vectors], squares[Vectors];
  unroll<Vectors>([&](auto v) { sums[v] = squares[v] = hn::Zero(dd); });
  for (std::size_t row = c; row < n; row += cols)
    unroll<Vectors>([&](auto v) { sums[v] = hn::Add(sums[v], load_as_f64(x + row + v * lanes)); });
  unroll<Vectors>([&](auto v) { means[v] = hn::Div(sums[v], rows); });
  for (std::size_t row = c; row < n; row += cols)
    unroll<Vectors>([&](auto v) {
      const auto d = hn::Sub(load_as_f64(x + row + v * lanes), means[v]);
      squares[v] = hn::Add(squares[v], hn::Mul(d, d));
    });
  unroll<Vectors>([&](auto v) {
    hn::StoreU(canonical_nan(means[v]), dd, mean + c + v * lanes);
    hn::StoreU(canonical_nan(hn::Div(squares[v], rows)), dd, variance + c + v * lanes);
  });
}

template <class = void>
void BatchNormMomentsF32(const float* x, std::size_t n, std::size_t cols, double* mean, double* variance) {
  const std::size_t tail = for_each_column_block(
      cols, [&](auto vectors, std::size_t c) { BatchNormMomentsBlock<decltype(vectors)::value>(x, n, cols, c, mean, variance); },
      hn::Lanes(DD()));
  kernels::detail::batch_norm_moments_rule(x, n, cols, tail, cols, mean, variance);
}

/// Columns [c, c + Vectors * lanes) of batch_norm_backward_sums: x_hat in float, the sums in double.
template <std::size_t Vectors>
HWY_INLINE void BatchNormBackwardSumsBlock(const float* x, const float* dy, std::size_t n, std::size_t cols,
                                           std::size_t c, const float* mean, const float* inverse_deviation,
                                           double* sum_dy, double* sum_dy_x_hat) {
  const DD dd;
  const DFHalf dh;
  const std::size_t lanes = hn::Lanes(dd);
  hn::Vec<DD> s[Vectors], p[Vectors];
  hn::Vec<DFHalf> m[Vectors], inverse[Vectors];
  unroll<Vectors>([&](auto v) {
    s[v] = p[v] = hn::Zero(dd);
    m[v] = hn::LoadU(dh, mean + c + v * lanes);
    inverse[v] = hn::LoadU(dh, inverse_deviation + c + v * lanes);
  });
  for (std::size_t row = c; row < n; row += cols)
    unroll<Vectors>([&](auto v) {
      const auto x_hat = hn::Mul(hn::Sub(hn::LoadU(dh, x + row + v * lanes), m[v]), inverse[v]);
      const auto g = load_as_f64(dy + row + v * lanes);
      s[v] = hn::Add(s[v], g);
      p[v] = hn::Add(p[v], hn::Mul(g, hn::PromoteTo(dd, x_hat)));
    });
  unroll<Vectors>([&](auto v) {
    hn::StoreU(canonical_nan(s[v]), dd, sum_dy + c + v * lanes);
    hn::StoreU(canonical_nan(p[v]), dd, sum_dy_x_hat + c + v * lanes);
  });
}

template <class = void>
void BatchNormBackwardSumsF32(const float* x, const float* dy, std::size_t n, std::size_t cols, const float* mean,
                              const float* inverse_deviation, double* sum_dy, double* sum_dy_x_hat) {
  const std::size_t tail = for_each_column_block(
      cols,
      [&](auto vectors, std::size_t c) {
        BatchNormBackwardSumsBlock<decltype(vectors)::value>(x, dy, n, cols, c, mean, inverse_deviation, sum_dy,
                                                            sum_dy_x_hat);
      },
      hn::Lanes(DD()));
  kernels::detail::batch_norm_backward_sums_rule(x, dy, n, cols, tail, cols, mean, inverse_deviation, sum_dy,
                                                 sum_dy_x_hat);
}

/// Per-column constants of the element-wise normalization kernels, held in registers for a
/// block of columns while the rows stream by.
template <std::size_t Vectors, std::size_t Count>
struct column_constants {
  hn::Vec<DF> at[Count][Vectors];
  HWY_INLINE column_constants(std::size_t c, const std::array<const float*, Count>& arrays) {
    const DF df;
    for (std::size_t k = 0; k < Count; ++k)
      unroll<Vectors>([&](auto v) { at[k][v] = hn::LoadU(df, arrays[k] + c + v * hn::Lanes(df)); });
  }
};

template <class = void>
void ScaleShiftColumnsF32(const float* x, std::size_t n, std::size_t cols, const float* scale, const float* shift,
                          float* y) {
  const DF df;
  const std::size_t lanes = hn::Lanes(df);
  const std::size_t tail = for_each_column_block(cols, [&](auto vectors, std::size_t c) {
    constexpr std::size_t Vectors = decltype(vectors)::value;
    const column_constants<Vectors, 2> k(c, {scale, shift});
    for (std::size_t row = c; row < n; row += cols)
      unroll<Vectors>([&](auto v) {
        const auto result = hn::Add(hn::Mul(hn::LoadU(df, x + row + v * lanes), k.at[0][v]), k.at[1][v]);
        hn::StoreU(canonical_nan(result), df, y + row + v * lanes);
      });
  });
  kernels::detail::scale_shift_rule(x, n, cols, tail, cols, scale, shift, y);
}

template <class = void>
void BatchNormInputGradientF32(const float* x, const float* dy, std::size_t n, std::size_t cols, const float* mean,
                               const float* inverse_deviation, const float* factor, const float* mean_dy,
                               const float* mean_dy_x_hat, float* dx) {
  const DF df;
  const std::size_t lanes = hn::Lanes(df);
  const std::size_t tail = for_each_column_block(cols, [&](auto vectors, std::size_t c) {
    constexpr std::size_t Vectors = decltype(vectors)::value;
    const column_constants<Vectors, 5> k(c, {mean, inverse_deviation, factor, mean_dy, mean_dy_x_hat});
    for (std::size_t row = c; row < n; row += cols)
      unroll<Vectors>([&](auto v) {
        const std::size_t at = row + v * lanes;
        const auto x_hat = hn::Mul(hn::Sub(hn::LoadU(df, x + at), k.at[0][v]), k.at[1][v]);
        const auto centered = hn::Sub(hn::LoadU(df, dy + at), k.at[3][v]);
        const auto result = hn::Mul(k.at[2][v], hn::Sub(centered, hn::Mul(x_hat, k.at[4][v])));
        hn::StoreU(canonical_nan(result), df, dx + at);
      });
  });
  kernels::detail::batch_norm_input_gradient_rule(x, dy, n, cols, tail, cols, mean, inverse_deviation, factor, mean_dy,
                                                  mean_dy_x_hat, dx);
}

/// Columns [c, c + Vectors * lanes) of column_sum: one float accumulator per column, starting at
/// +0 and adding the rows in order, so each lane runs the same sequential sum as the scalar tail.
template <std::size_t Vectors, class T>
HWY_INLINE void ColumnSumBlock(const T* x, std::size_t n, float* sums, std::size_t cols, std::size_t c,
                               bool accumulate) {
  const DF df;
  const std::size_t lanes = hn::Lanes(df);
  hn::Vec<DF> totals[Vectors];
  for (auto& total : totals) total = hn::Zero(df);
  for (std::size_t row = c; row < n; row += cols)
    unroll<Vectors>([&](auto v) { totals[v] = hn::Add(totals[v], load_as_f32(x + row + v * lanes)); });
  unroll<Vectors>([&](auto v) {
    float* out = sums + c + v * lanes;
    const auto result = accumulate ? hn::Add(hn::LoadU(df, out), totals[v]) : totals[v];
    hn::StoreU(canonical_nan(result), df, out);
  });
}

template <class T>
void ColumnSum(const T* x, std::size_t n, float* sums, std::size_t cols, bool accumulate) {
  const std::size_t tail = for_each_column_block(cols, [&](auto vectors, std::size_t c) {
    ColumnSumBlock<decltype(vectors)::value>(x, n, sums, cols, c, accumulate);
  });
  // The last columns (fewer than a vector): the same sums, one lane at a time.
  float totals[kMaxFloatLanes] = {};
  for (std::size_t row = 0; tail < cols && row < n; row += cols)
    for (std::size_t j = tail; j < cols; ++j) totals[j - tail] += static_cast<float>(x[row + j]);
  for (std::size_t j = tail; j < cols; ++j) {
    const float result = accumulate ? sums[j] + totals[j - tail] : totals[j - tail];
    sums[j] = result == result ? result : std::numeric_limits<float>::quiet_NaN();
  }
}

MIXPREC_KERNELS_END

#endif  // toggle guard
