// What Highway 1.0.3 must be told before its first inclusion, whatever -march the program uses.
//
// When the compiler's baseline already has every AVX3_DL feature (-march=sapphirerapids, or
// -march=native on such a CPU), Highway makes AVX3_DL its static target but leaves it out of the
// dynamically dispatched ones unless HWY_WANT_AVX3_DL is defined, and stops with "best baseline
// should be included in dynamic targets". The condition below is Highway's own for that baseline.
#pragma once

#include <mixprec/core/detail/x86_intrinsics.hpp>

#if !defined(HWY_WANT_AVX3_DL) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && \
    defined(__AVX512VL__) && defined(__AVXVNNI__) && defined(__VAES__) && defined(__VPCLMULQDQ__) &&       \
    defined(__AVX512VBMI__) && defined(__AVX512VBMI2__) && defined(__AVX512VPOPCNTDQ__) &&                 \
    defined(__AVX512BITALG__)
#define HWY_WANT_AVX3_DL
#endif

// One portable fallback target whatever the compiler: SCALAR, which GCC 12.2 gets anyway (Highway
// marks EMU128 broken there). Under clang Highway would pick EMU128, whose f64 -> f32 DemoteTo
// saturates at FLT_MAX where the scalar cast (and every other target) overflows to infinity.
#ifndef HWY_BROKEN_EMU128
#define HWY_BROKEN_EMU128 1
#endif
