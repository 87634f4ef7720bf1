// Dispatch tables that are compiled only where they are used (by the dispatch_*.hpp files).
//
// Highway's HWY_EXPORT(F) is a table of &N_<target>::F for every compiled target. Its entries
// are ordinary functions, so every translation unit that includes the kernels compiles every
// kernel's body for every target, called or not. Here each exported per-target function is a
// template with one defaulted, unused parameter (`template <class = void>` in the -inl files),
// the table is a variable template over that parameter, and in header-only mode so are the
// entry points that read it (MIXPREC_KERNEL_ENTRY, kernels/config.hpp). Nothing is instantiated
// until a translation unit calls an entry point: then only that kernel, for every target.
//
// MIXPREC_KERNELS_EXPORT(F) defines the table F_table<D>: as HWY_EXPORT's, its first entry
// picks the best target on the first call (hwy::FunctionCache), then one entry per target.
// MIXPREC_KERNELS_DISPATCH(F) is HWY_DYNAMIC_DISPATCH(F) for it, inside an entry point.
#pragma once

#include <hwy/highway.h>
#include <mixprec/kernels/config.hpp>

#if HWY_IDE || ((HWY_TARGETS & (HWY_TARGETS - 1)) == 0)
// One target compiled (as HWY_EXPORT then does): a direct call.
#define MIXPREC_KERNELS_EXPORT(NAME) \
  template <class Deferred>          \
  static decltype(&HWY_STATIC_DISPATCH(NAME<Deferred>)) const NAME##_table[1] = {&HWY_STATIC_DISPATCH(NAME<Deferred>)}
#define MIXPREC_KERNELS_DISPATCH(NAME) (*(NAME##_table<MIXPREC_KERNELS_DEFERRED>[0]))
#else
#define MIXPREC_KERNELS_EXPORT(NAME)                                                                       \
  template <class Deferred>                                                                                \
  static decltype(&HWY_STATIC_DISPATCH(NAME<Deferred>)) const NAME##_table[HWY_MAX_DYNAMIC_TARGETS + 2] = { \
      &decltype(hwy::DeduceFunctionCache(&HWY_STATIC_DISPATCH(NAME<Deferred>)))::template ChooseAndCall<   \
          NAME##_table<Deferred>>,                                                                         \
      HWY_CHOOSE_TARGET_LIST(NAME<Deferred>), HWY_CHOOSE_FALLBACK(NAME<Deferred>)}
#define MIXPREC_KERNELS_DISPATCH(NAME) (*(NAME##_table<MIXPREC_KERNELS_DEFERRED>[hwy::GetChosenTarget().GetIndex()]))
#endif
