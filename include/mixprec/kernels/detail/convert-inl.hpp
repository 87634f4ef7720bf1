// Per-target conversion kernels. Every format goes through one integer algorithm that mirrors
// the scalar codec (core/detail/minifloat_codec.hpp), so the results are bit-identical on every
// target, whatever Highway's own DemoteTo does there; except where the hardware rounds exactly
// as the scalar cast does (the exhaustive test checks every float bit pattern on every path):
// - float16 on AVX2 and better: F16C (Highway's DemoteTo / PromoteTo there are vcvtps2ph with
//   the round-to-nearest-even immediate, not MXCSR, and vcvtph2ps);
// - float -> bfloat16 on AVX3 with AVX-512 BF16: vcvtne2ps2bf16 (convert_native_bf16.hpp).
#if defined(MIXPREC_KERNELS_CONVERT_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef MIXPREC_KERNELS_CONVERT_INL_HPP_
#undef MIXPREC_KERNELS_CONVERT_INL_HPP_
#else
#define MIXPREC_KERNELS_CONVERT_INL_HPP_
#endif

#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <hwy/highway.h>
#include <mixprec/core/detail/minifloat_codec.hpp>
#include <mixprec/core/float16.hpp>
#include <mixprec/core/float8.hpp>
#include <mixprec/kernels/detail/common-inl.hpp>
#include <mixprec/kernels/detail/convert_native_bf16.hpp>
#include <mixprec/kernels/detail/gemm_entry_points.hpp>
#include <mixprec/kernels/detail/kernel_macros.hpp>

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
#define MIXPREC_KERNELS_CONVERT_F16C 1
#else
#define MIXPREC_KERNELS_CONVERT_F16C 0
#endif
// Like the native GEMM: compiled into the AVX3 (and better) code only.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3 && defined(MIXPREC_KERNELS_HAVE_NATIVE_BF16)
#define MIXPREC_KERNELS_CONVERT_NATIVE_BF16 1
#else
#define MIXPREC_KERNELS_CONVERT_NATIVE_BF16 0
#endif

MIXPREC_KERNELS_BEGIN
namespace hn = hwy::HWY_NAMESPACE;
using mixprec::detail::minifloat_format;

using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using DU = hn::RebindToUnsigned<DF>;
using DU16 = hn::Rebind<std::uint16_t, DF>;
using DF16 = hn::Rebind<hwy::float16_t, DF>;
using DU8 = hn::Rebind<std::uint8_t, DF>;
using DI8 = hn::Rebind<std::int8_t, DF>;
constexpr std::size_t kMaxFloatLanes = HWY_MAX_BYTES / sizeof(float);

template <minifloat_format F>
constexpr int total_bits = 1 + F.exponent_bits + F.mantissa_bits;

/// float lanes -> encodings of F (in int32 lanes, < 2^total_bits).
/// Normals: rebias the exponent and round to nearest even on the integer bits. Subnormals:
/// add a power of two whose ulp is the format's subnormal unit and let the FPU round.
template <minifloat_format F>
HWY_INLINE hn::Vec<DI> encode(hn::Vec<DF> v, bool saturate) {
  const DF df;
  const DI di;
  const DU du;
  constexpr int shift = 23 - F.mantissa_bits;
  constexpr std::int32_t rebias = (F.bias() - 127) * (1 << 23);
  constexpr std::int32_t min_normal_bits = (F.min_exponent() + 127) << 23;
  const float magic = std::bit_cast<float>(
      static_cast<std::uint32_t>(F.min_exponent() - F.mantissa_bits + 23 + 127) << 23);

  const auto bits = hn::BitCast(di, v);
  const auto abs = hn::And(bits, hn::Set(di, 0x7FFFFFFF));
  const auto sign = hn::BitCast(di, hn::ShiftRight<32 - total_bits<F>>(hn::BitCast(du, hn::Xor(bits, abs))));

  const auto odd = hn::And(hn::ShiftRight<shift>(abs), hn::Set(di, 1));
  const auto normal = hn::ShiftRight<shift>(hn::Add(hn::Add(abs, hn::Set(di, rebias + (1 << (shift - 1)) - 1)), odd));
  const auto magic_v = hn::Set(df, magic);
  const auto subnormal = hn::Sub(hn::BitCast(di, hn::Add(hn::BitCast(df, abs), magic_v)), hn::BitCast(di, magic_v));
  auto encoding = hn::IfThenElse(hn::Lt(abs, hn::Set(di, min_normal_bits)), subnormal, normal);

  const std::int32_t overflow =
      static_cast<std::int32_t>(saturate ? F.max_finite() : (F.has_infinity ? F.infinity() : F.quiet_nan()));
  encoding = hn::IfThenElse(hn::Gt(encoding, hn::Set(di, static_cast<std::int32_t>(F.max_finite()))),
                            hn::Set(di, overflow), encoding);
  hn::Vec<DI> nan;
  if constexpr (F.has_infinity) {  // quiet, with the payload's leading bits
    nan = hn::Or(hn::And(hn::ShiftRight<shift>(abs), hn::Set(di, (1 << F.mantissa_bits) - 1)),
                 hn::Set(di, static_cast<std::int32_t>(F.quiet_nan())));
  } else {
    nan = hn::Set(di, static_cast<std::int32_t>(F.quiet_nan()));
  }
  encoding = hn::IfThenElse(hn::Gt(abs, hn::Set(di, 0x7F800000)), nan, encoding);
  return hn::Or(encoding, sign);
}

/// Encodings of F (in int32 lanes) -> float lanes, exactly.
template <minifloat_format F>
HWY_INLINE hn::Vec<DF> decode(hn::Vec<DI> encoding) {
  const DF df;
  const DI di;
  constexpr int shift = 23 - F.mantissa_bits;
  const auto abs = hn::And(encoding, hn::Set(di, static_cast<std::int32_t>(F.sign_bit() - 1)));
  const auto sign = hn::ShiftLeft<32 - total_bits<F>>(hn::Xor(encoding, abs));
  // The format's exponent field lands in float's; one multiply rebiases it (subnormals too).
  const float rebias = std::bit_cast<float>(static_cast<std::uint32_t>(127 - F.bias() + 127) << 23);
  auto magnitude = hn::BitCast(di, hn::Mul(hn::BitCast(df, hn::ShiftLeft<shift>(abs)), hn::Set(df, rebias)));
  if constexpr (F.has_infinity) {
    const auto special = hn::Or(hn::Set(di, 0x7F800000), hn::ShiftLeft<shift>(hn::And(abs, hn::Set(di, (1 << F.mantissa_bits) - 1))));
    magnitude = hn::IfThenElse(hn::Gt(abs, hn::Set(di, static_cast<std::int32_t>(F.infinity()) - 1)), special, magnitude);
  } else {
    magnitude = hn::IfThenElse(hn::Eq(abs, hn::Set(di, static_cast<std::int32_t>(F.quiet_nan()))),
                               hn::Set(di, 0x7FC00000), magnitude);
  }
  return hn::BitCast(df, hn::Or(magnitude, sign));
}

/// bfloat16 shares float's exponent: rounding is one integer add on the top half.
HWY_INLINE hn::Vec<DI> encode_bfloat16(hn::Vec<DF> v) {
  const DI di;
  const DU du;
  const auto bits = hn::BitCast(du, v);
  const auto odd = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1));
  const auto rounded = hn::ShiftRight<16>(hn::Add(hn::Add(bits, hn::Set(du, 0x7FFF)), odd));
  const auto quiet = hn::Or(hn::ShiftRight<16>(bits), hn::Set(du, 0x0040));
  const auto abs = hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7FFFFFFF)));
  return hn::BitCast(di, hn::IfThenElse(hn::RebindMask(du, hn::Gt(abs, hn::Set(di, 0x7F800000))), quiet, rounded));
}

HWY_INLINE hn::Vec<DF> load_f32(const float* p) { return hn::LoadU(DF(), p); }
template <class T>
HWY_INLINE hn::Vec<DI> load_u16_bits(const T* p) {
  return hn::BitCast(DI(), hn::PromoteTo(DU(), hn::LoadU(DU16(), reinterpret_cast<const std::uint16_t*>(p))));
}
template <class T>
HWY_INLINE hn::Vec<DI> load_u8_bits(const T* p) {
  return hn::BitCast(DI(), hn::PromoteTo(DU(), hn::LoadU(DU8(), reinterpret_cast<const std::uint8_t*>(p))));
}
template <class T>
HWY_INLINE void store_u16_bits(hn::Vec<DI> encoding, T* p) {  // encoding < 2^16
  hn::StoreU(hn::DemoteTo(DU16(), encoding), DU16(), reinterpret_cast<std::uint16_t*>(p));
}
template <class T>
HWY_INLINE void store_u8_bits(hn::Vec<DI> encoding, T* p) {  // encoding < 2^8
  hn::StoreU(hn::DemoteTo(DU8(), encoding), DU8(), reinterpret_cast<std::uint8_t*>(p));
}

/// The encoding of T (float, bfloat16 or float16) nearest to each float lane, ties to even, as
/// cast<T> rounds; in int32 lanes (16-bit encodings are < 2^16).
template <class T>
HWY_INLINE hn::Vec<DI> encode_as(hn::Vec<DF> v) {
  if constexpr (std::is_same_v<T, float>) return hn::BitCast(DI(), v);
  else if constexpr (std::is_same_v<T, bfloat16>) return encode_bfloat16(v);
  else if constexpr (std::is_same_v<T, float16> && MIXPREC_KERNELS_CONVERT_F16C)
    return hn::BitCast(DI(), hn::PromoteTo(DU(), hn::BitCast(DU16(), hn::DemoteTo(DF16(), v))));
  else return encode<T::format>(v, false);
}
template <class T>
HWY_INLINE void store_encoding(hn::Vec<DI> encoding, T* p) {
  if constexpr (std::is_same_v<T, float>) hn::StoreU(hn::BitCast(DF(), encoding), DF(), p);
  else store_u16_bits(encoding, p);
}
/// Rounds float lanes to T and stores Lanes(DF()) elements.
template <class T>
HWY_INLINE void store_as(hn::Vec<DF> v, T* p) {
  if constexpr (std::is_same_v<T, float16> && MIXPREC_KERNELS_CONVERT_F16C)
    hn::StoreU(hn::DemoteTo(DF16(), v), DF16(), reinterpret_cast<hwy::float16_t*>(p));
  else store_encoding(encode_as<T>(v), p);
}
#if MIXPREC_KERNELS_CONVERT_F16C
/// Lanes(DF()) float16 widened by vcvtph2ps. It sets the quiet bit of a signaling NaN, which the
/// scalar cast keeps signaling (its payload shifted up): NaN lanes get the input's quiet bit back.
HWY_INLINE hn::Vec<DF> widen_f16c(const float16* p) {
  const auto widened = hn::PromoteTo(DF(), hn::LoadU(DF16(), reinterpret_cast<const hwy::float16_t*>(p)));
  const auto nan = hn::IsNaN(widened);
  if (HWY_LIKELY(hn::AllFalse(DF(), nan))) return widened;
  const DI di;
  const auto quiet_bit_cleared = hn::ShiftLeft<13>(hn::AndNot(load_u16_bits(p), hn::Set(di, 0x200)));
  return hn::IfThenElse(nan, hn::BitCast(DF(), hn::Xor(hn::BitCast(di, widened), quiet_bit_cleared)), widened);
}
#endif

/// Lanes(DF()) elements of T (float, bfloat16, float16 or a float8), widened exactly to float.
template <class T>
HWY_INLINE hn::Vec<DF> load_as_f32(const T* p) {
  if constexpr (std::is_same_v<T, float>) return load_f32(p);
  else if constexpr (std::is_same_v<T, bfloat16>) return hn::BitCast(DF(), hn::ShiftLeft<16>(load_u16_bits(p)));
  else if constexpr (std::is_same_v<T, float16> && MIXPREC_KERNELS_CONVERT_F16C) return widen_f16c(p);
  else if constexpr (sizeof(T) == 1) return decode<T::format>(load_u8_bits(p));
  else return decode<T::format>(load_u16_bits(p));
}

template <class In, class Out, class Block>
HWY_INLINE void map(const In* in, Out* out, std::size_t n, Block&& block) {
  for_each_block<kMaxFloatLanes>(in, out, n, hn::Lanes(DF()), block);
}

/// Whether float -> bfloat16 runs the native vcvtne2ps2bf16 kernel: it is compiled into this
/// target, and the native bfloat16 GEMM's switch and CPU check allow it.
inline bool native_bf16_conversion() {
#if MIXPREC_KERNELS_CONVERT_NATIVE_BF16
  return mixprec::kernels::detail::native_bf16_enabled() && mixprec::kernels::detail::native_bf16_supported();
#else
  return false;
#endif
}

/// from -> to, rounded as cast<To>, for the pairs of has_convert_kernel (convert_entry_points.hpp):
/// double -> float demotes double lanes; float -> bfloat16 runs the native kernel where it can
/// (convert_native_bf16.hpp); every pair goes through float lanes otherwise.
template <class From, class To>
void Convert(const From* from, To* to, std::size_t n) {
  if constexpr (std::is_same_v<From, double>) {
#if HWY_TARGET == HWY_SCALAR
    // Highway's scalar DemoteTo clamps to the float range instead of overflowing to inf.
    for (std::size_t i = 0; i < n; ++i) to[i] = static_cast<float>(from[i]);
#else
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> df;
    for_each_block<HWY_MAX_BYTES / sizeof(double)>(from, to, n, hn::Lanes(dd), [&](const double* in, float* out) {
      hn::StoreU(hn::DemoteTo(df, hn::LoadU(dd, in)), df, out);
    });
#endif
  } else {
#if MIXPREC_KERNELS_CONVERT_NATIVE_BF16
    if constexpr (std::is_same_v<From, float> && std::is_same_v<To, bfloat16>)
      if (native_bf16_conversion()) return mixprec::kernels::detail::native_bf16::convert_from_f32(from, to, n);
#endif
    map(from, to, n, [](const From* in, To* out) { store_as(load_as_f32(in), out); });
  }
}

/// float -> To (float8_e4m3fn or float8_e5m2); overflow gives the largest finite value when
/// `saturate`.
template <class To>
void ConvertToFloat8(const float* from, To* to, std::size_t n, bool saturate) {
  map(from, to, n, [saturate](const float* in, To* out) {
    store_u8_bits(encode<To::format>(load_f32(in), saturate), out);
  });
}

template <class = void>
void QuantizeF32ToI8(const float* from, float scale, std::int8_t* to, std::size_t n) {
  const DF df;
  map(from, to, n, [&](const float* in, std::int8_t* out) {
    auto x = hn::Mul(load_f32(in), hn::Set(df, scale));
    x = hn::IfThenElseZero(hn::Eq(x, x), x);  // NaN -> 0
    x = hn::Min(hn::Max(x, hn::Set(df, -127.0f)), hn::Set(df, 127.0f));
    const auto q = hn::ConvertTo(DI(), round_half_even_small(df, x));
    hn::StoreU(hn::DemoteTo(DI8(), q), DI8(), out);
  });
}

template <class = void>
bool ConvertUsesNativeBF16() { return native_bf16_conversion(); }

MIXPREC_KERNELS_END

#undef MIXPREC_KERNELS_CONVERT_F16C
#undef MIXPREC_KERNELS_CONVERT_NATIVE_BF16

#endif  // toggle guard
