// Dispatch tables that are compiled only where they are used (by the dispatch_*.hpp files).
//
// Highway's HWY_EXPORT(F) is a table of &N_<target>::F for every compiled target. Its entries
// are ordinary functions, so every translation unit that includes the kernels compiles every
// kernel's body for every target, called or not. Here each exported per-target function is a
// template, and the table is a variable template over the same parameters: nothing is
// instantiated until a translation unit calls an entry point that reads the table, and then only
// that kernel, for every target. A kernel written once for several dtypes is keyed on them
// (`template <class T> bool AllFinite(const T*, std::size_t)`, table AllFinite_table<T>, read by
// the entry point template all_finite<T>). A kernel for one signature only has one defaulted,
// unused parameter instead (`template <class = void>` in the -inl files), and in header-only mode
// so do the entry points that read it (MIXPREC_KERNEL_ENTRY, kernels/config.hpp).
//
// MIXPREC_KERNELS_EXPORT(F) defines the table F_table<Key...>: as HWY_EXPORT's, its first entry
// picks the best target on the first call (hwy::FunctionCache), then one entry per target.
// MIXPREC_KERNELS_DISPATCH_FOR(F, Key...) is HWY_DYNAMIC_DISPATCH(F<Key...>) for it, inside an
// entry point; MIXPREC_KERNELS_DISPATCH(F) keys it on the entry point's deferral parameter.
#pragma once

#include <hwy/highway.h>
#include <mixprec/kernels/config.hpp>

#if HWY_IDE || ((HWY_TARGETS & (HWY_TARGETS - 1)) == 0)
// One target compiled (as HWY_EXPORT then does): a direct call.
#define MIXPREC_KERNELS_EXPORT(NAME) \
  template <class... Key>            \
  static decltype(&HWY_STATIC_DISPATCH(NAME<Key...>)) const NAME##_table[1] = {&HWY_STATIC_DISPATCH(NAME<Key...>)}
#define MIXPREC_KERNELS_DISPATCH_FOR(NAME, ...) (*(NAME##_table<__VA_ARGS__>[0]))
#else
#define MIXPREC_KERNELS_EXPORT(NAME)                                                                       \
  template <class... Key>                                                                                  \
  static decltype(&HWY_STATIC_DISPATCH(NAME<Key...>)) const NAME##_table[HWY_MAX_DYNAMIC_TARGETS + 2] = {  \
      &decltype(hwy::DeduceFunctionCache(&HWY_STATIC_DISPATCH(NAME<Key...>)))::template ChooseAndCall<    \
          NAME##_table<Key...>>,                                                                           \
      HWY_CHOOSE_TARGET_LIST(NAME<Key...>), HWY_CHOOSE_FALLBACK(NAME<Key...>)}
#define MIXPREC_KERNELS_DISPATCH_FOR(NAME, ...) (*(NAME##_table<__VA_ARGS__>[hwy::GetChosenTarget().GetIndex()]))
#endif
#define MIXPREC_KERNELS_DISPATCH(NAME) MIXPREC_KERNELS_DISPATCH_FOR(NAME, MIXPREC_KERNELS_DEFERRED)
