// Brackets for per-target kernel code (used by every *-inl.hpp).
#pragma once

#include <hwy/highway.h>

// Bit-identical results on every target need the same roundings everywhere, so no target may
// fuse a multiply and an add unless the kernel asks for it (MulAdd) on purpose. Clang has its
// own pragma (it ignores GCC's, and contracts by default since clang 14).
#if defined(__clang__)
#define MIXPREC_KERNELS_NO_FP_CONTRACT _Pragma("clang fp contract(off)")
#else
#define MIXPREC_KERNELS_NO_FP_CONTRACT _Pragma("GCC optimize(\"fp-contract=off\")")
#endif
#define MIXPREC_KERNELS_BEGIN \
  HWY_BEFORE_NAMESPACE();     \
  MIXPREC_KERNELS_NO_FP_CONTRACT namespace mixprec::kernels::HWY_NAMESPACE { namespace {
#define MIXPREC_KERNELS_END \
  }                         \
  }                         \
  HWY_AFTER_NAMESPACE();
