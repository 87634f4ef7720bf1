// Optimizer dispatch tables and entry point definitions (included once, by implementation.hpp).
#pragma once

#include <hwy/highway.h>
#include <mixprec/kernels/detail/export.hpp>
#include <mixprec/kernels/detail/optimizer_entry_points.hpp>

namespace mixprec::kernels {

MIXPREC_KERNELS_EXPORT(SgdUpdateF32);
MIXPREC_KERNELS_EXPORT(SgdUpdateBF16);
MIXPREC_KERNELS_EXPORT(SgdUpdateF16);
MIXPREC_KERNELS_EXPORT(AdamUpdateF32);
MIXPREC_KERNELS_EXPORT(AdamUpdateBF16);
MIXPREC_KERNELS_EXPORT(AdamUpdateF16);
MIXPREC_KERNELS_EXPORT(ClipByValueF32);
MIXPREC_KERNELS_EXPORT(ClipByValueBF16);
MIXPREC_KERNELS_EXPORT(ClipByValueF16);
MIXPREC_KERNELS_EXPORT(ScaleF32);
MIXPREC_KERNELS_EXPORT(ScaleBF16);
MIXPREC_KERNELS_EXPORT(ScaleF16);

namespace detail {

MIXPREC_KERNEL_ENTRY_DEFINITION void sgd_update_f32(float* w, const float* g, float* velocity, std::size_t n, const sgd_step& step) {
  MIXPREC_KERNELS_DISPATCH(SgdUpdateF32)(w, g, velocity, n, step);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void sgd_update_bf16(bfloat16* w, const bfloat16* g, bfloat16* velocity, std::size_t n,
                                        const sgd_step& step) {
  MIXPREC_KERNELS_DISPATCH(SgdUpdateBF16)(w, g, velocity, n, step);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void sgd_update_f16(float16* w, const float16* g, float16* velocity, std::size_t n,
                                       const sgd_step& step) {
  MIXPREC_KERNELS_DISPATCH(SgdUpdateF16)(w, g, velocity, n, step);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void adam_update_f32(float* w, const float* g, float* m, float* v, float* v_hat, std::size_t n,
                                        const adam_scalars& step) {
  MIXPREC_KERNELS_DISPATCH(AdamUpdateF32)(w, g, m, v, v_hat, n, step);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void adam_update_bf16(bfloat16* w, const bfloat16* g, bfloat16* m, bfloat16* v, bfloat16* v_hat,
                                         std::size_t n, const adam_scalars& step) {
  MIXPREC_KERNELS_DISPATCH(AdamUpdateBF16)(w, g, m, v, v_hat, n, step);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void adam_update_f16(float16* w, const float16* g, float16* m, float16* v, float16* v_hat,
                                        std::size_t n, const adam_scalars& step) {
  MIXPREC_KERNELS_DISPATCH(AdamUpdateF16)(w, g, m, v, v_hat, n, step);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void clip_by_value_f32(float* g, std::size_t n, float clip) {
  MIXPREC_KERNELS_DISPATCH(ClipByValueF32)(g, n, clip);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void clip_by_value_bf16(bfloat16* g, std::size_t n, float clip) {
  MIXPREC_KERNELS_DISPATCH(ClipByValueBF16)(g, n, clip);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void clip_by_value_f16(float16* g, std::size_t n, float clip) {
  MIXPREC_KERNELS_DISPATCH(ClipByValueF16)(g, n, clip);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void scale_f32(float* g, std::size_t n, float multiplier, float divisor) {
  MIXPREC_KERNELS_DISPATCH(ScaleF32)(g, n, multiplier, divisor);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void scale_bf16(bfloat16* g, std::size_t n, float multiplier, float divisor) {
  MIXPREC_KERNELS_DISPATCH(ScaleBF16)(g, n, multiplier, divisor);
}
MIXPREC_KERNEL_ENTRY_DEFINITION void scale_f16(float16* g, std::size_t n, float multiplier, float divisor) {
  MIXPREC_KERNELS_DISPATCH(ScaleF16)(g, n, multiplier, divisor);
}

}  // namespace detail
}  // namespace mixprec::kernels
