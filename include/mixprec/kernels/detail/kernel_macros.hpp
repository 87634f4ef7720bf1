// Brackets for per-target kernel code (used by every *-inl.hpp).
#pragma once

#include <hwy/highway.h>

// Bit-identical results on every target need the same roundings everywhere, so no target may
// fuse a multiply and an add unless the kernel asks for it (MulAdd) on purpose.
#define MIXPREC_KERNELS_BEGIN \
  HWY_BEFORE_NAMESPACE();     \
  _Pragma("GCC optimize(\"fp-contract=off\")") namespace mixprec::kernels::HWY_NAMESPACE { namespace {
#define MIXPREC_KERNELS_END \
  }                         \
  }                         \
  HWY_AFTER_NAMESPACE();
