// The compiled int8 kernels (kernels/quantize.hpp): per-target code for every Highway target,
// the dispatch tables and the entry point definitions.
//
// They are a family of their own, so that header-only users who never include quantize.hpp do
// not compile them: quantize.hpp includes this file in header-only mode, and
// kernels/implementation.hpp includes it in single-TU mode (MIXPREC_SEPARATE_KERNELS), so that
// the one translation unit that compiles the kernels compiles these too.
//
// hwy/foreach_target.h works once per translation unit, and kernels/implementation.hpp has used
// it (this file includes that first), so the int8 family makes its own pass over the targets: it
// sets HWY_TARGET to each compiled target in turn, as foreach_target.h does, and includes
// int8_target-inl.hpp, which compiles the int8 -inl files for it; then it restores the static
// target's macros.
#pragma once

#include <mixprec/kernels/implementation.hpp>  // the other kernels' pass (and Highway's ops) first

#include <mixprec/kernels/detail/gemm_native_int8.hpp>
#include <mixprec/kernels/detail/int8_entry_points.hpp>

#if !HWY_ONCE
#error "mixprec kernels: int8_implementation.hpp must follow kernels/implementation.hpp's pass over the targets"
#endif

#ifdef MIXPREC_KERNELS_INT8_TOGGLE
#error "MIXPREC_KERNELS_INT8_TOGGLE must not be defined outside mixprec/kernels/detail/int8_target-inl.hpp"
#endif

#if HWY_TARGETS & HWY_AVX3_DL
#undef HWY_TARGET
#define HWY_TARGET HWY_AVX3_DL
#include <mixprec/kernels/detail/int8_target-inl.hpp>
#endif
#if HWY_TARGETS & HWY_AVX3
#undef HWY_TARGET
#define HWY_TARGET HWY_AVX3
#include <mixprec/kernels/detail/int8_target-inl.hpp>
#endif
#if HWY_TARGETS & HWY_AVX2
#undef HWY_TARGET
#define HWY_TARGET HWY_AVX2
#include <mixprec/kernels/detail/int8_target-inl.hpp>
#endif
#if HWY_TARGETS & HWY_SSE4
#undef HWY_TARGET
#define HWY_TARGET HWY_SSE4
#include <mixprec/kernels/detail/int8_target-inl.hpp>
#endif
#if HWY_TARGETS & HWY_SSSE3
#undef HWY_TARGET
#define HWY_TARGET HWY_SSSE3
#include <mixprec/kernels/detail/int8_target-inl.hpp>
#endif
#if HWY_TARGETS & HWY_NEON
#undef HWY_TARGET
#define HWY_TARGET HWY_NEON
#include <mixprec/kernels/detail/int8_target-inl.hpp>
#endif
#if HWY_TARGETS & HWY_SVE
#undef HWY_TARGET
#define HWY_TARGET HWY_SVE
#include <mixprec/kernels/detail/int8_target-inl.hpp>
#endif
#if HWY_TARGETS & HWY_SVE2
#undef HWY_TARGET
#define HWY_TARGET HWY_SVE2
#include <mixprec/kernels/detail/int8_target-inl.hpp>
#endif
#if HWY_TARGETS & HWY_SVE_256
#undef HWY_TARGET
#define HWY_TARGET HWY_SVE_256
#include <mixprec/kernels/detail/int8_target-inl.hpp>
#endif
#if HWY_TARGETS & HWY_SVE2_128
#undef HWY_TARGET
#define HWY_TARGET HWY_SVE2_128
#include <mixprec/kernels/detail/int8_target-inl.hpp>
#endif
#if HWY_TARGETS & HWY_WASM
#undef HWY_TARGET
#define HWY_TARGET HWY_WASM
#include <mixprec/kernels/detail/int8_target-inl.hpp>
#endif
#if HWY_TARGETS & HWY_WASM_EMU256
#undef HWY_TARGET
#define HWY_TARGET HWY_WASM_EMU256
#include <mixprec/kernels/detail/int8_target-inl.hpp>
#endif
#if HWY_TARGETS & HWY_RVV
#undef HWY_TARGET
#define HWY_TARGET HWY_RVV
#include <mixprec/kernels/detail/int8_target-inl.hpp>
#endif
#if HWY_TARGETS & HWY_PPC8
#undef HWY_TARGET
#define HWY_TARGET HWY_PPC8
#include <mixprec/kernels/detail/int8_target-inl.hpp>
#endif
#if HWY_TARGETS & HWY_EMU128
#undef HWY_TARGET
#define HWY_TARGET HWY_EMU128
#include <mixprec/kernels/detail/int8_target-inl.hpp>
#endif
#if HWY_TARGETS & HWY_SCALAR
#undef HWY_TARGET
#define HWY_TARGET HWY_SCALAR
#include <mixprec/kernels/detail/int8_target-inl.hpp>
#endif

// Back to the static target, as kernels/implementation.hpp left it.
#undef HWY_TARGET
#define HWY_TARGET HWY_STATIC_TARGET
#include <hwy/ops/set_macros-inl.h>
#undef MIXPREC_KERNELS_INT8_TOGGLE  // (defined or not, depending on the number of targets)

#include <mixprec/kernels/detail/dispatch_quantize.hpp>
