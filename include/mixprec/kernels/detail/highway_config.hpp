// What Highway 1.0.3 must be told before its first inclusion, whatever -march the program uses.
//
// The SSSE3 target is not compiled: only CPUs with SSSE3 but without Highway's SSE4 group
// (SSE4.2, CLMUL, AES) would run it (Core 2, first-generation Core i7, Atom before Silvermont,
// AMD Bobcat: CPUs of 2006-2011), and they run the SCALAR kernels instead, with the same bits.
// It cost a fifth of every kernel's compile time (README, Compile time). Define
// HWY_DISABLED_TARGETS yourself (0 for none) to compile it again, the same in every translation
// unit of the program and before any inclusion of <hwy/highway.h>: header-only mode compiles the
// dispatch tables in each unit, and units that disagree on the targets break the one-definition rule.
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

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif

// One portable fallback target whatever the compiler: SCALAR, which GCC 12.2 gets anyway (Highway
// marks EMU128 broken there). Under clang Highway would pick EMU128, whose f64 -> f32 DemoteTo
// saturates at FLT_MAX where the scalar cast (and every other target) overflows to infinity.
#ifndef HWY_BROKEN_EMU128
#define HWY_BROKEN_EMU128 1
#endif
