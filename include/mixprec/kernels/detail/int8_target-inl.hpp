// One target's int8 kernels: int8_implementation.hpp defines HWY_TARGET and includes this file
// once per target. No include guard, on purpose.
//
// Highway's per-target ops (and the other kernels' per-target helpers) already exist for every
// target: kernels/implementation.hpp's pass of hwy/foreach_target.h compiled them. Only the
// macros that name the target (HWY_NAMESPACE, HWY_TARGET_STR, HWY_BEFORE_NAMESPACE, ...) are set
// again here; the int8 -inl files' toggle guards follow MIXPREC_KERNELS_INT8_TOGGLE, flipped
// after each target, as hwy/foreach_target.h flips HWY_TARGET_TOGGLE (which must not change
// now: Highway's own per-target headers would be compiled a second time).
#include <hwy/ops/set_macros-inl.h>

#include <mixprec/kernels/detail/quantize-inl.hpp>
#include <mixprec/kernels/detail/gemm_int8-inl.hpp>

#ifdef MIXPREC_KERNELS_INT8_TOGGLE
#undef MIXPREC_KERNELS_INT8_TOGGLE
#else
#define MIXPREC_KERNELS_INT8_TOGGLE
#endif
