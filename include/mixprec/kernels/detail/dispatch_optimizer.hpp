// Optimizer dispatch tables and entry point definitions (included once, by implementation.hpp).
#pragma once

#include <hwy/highway.h>
#include <mixprec/kernels/detail/optimizer_entry_points.hpp>

namespace mixprec::kernels {

HWY_EXPORT(SgdUpdateF32);
HWY_EXPORT(SgdUpdateBF16);
HWY_EXPORT(SgdUpdateF16);
HWY_EXPORT(AdamUpdateF32);
HWY_EXPORT(AdamUpdateBF16);
HWY_EXPORT(AdamUpdateF16);
HWY_EXPORT(ClipByValueF32);
HWY_EXPORT(ClipByValueBF16);
HWY_EXPORT(ClipByValueF16);
HWY_EXPORT(ScaleF32);
HWY_EXPORT(ScaleBF16);
HWY_EXPORT(ScaleF16);

namespace detail {

MIXPREC_KERNEL_API void sgd_update_f32(float* w, const float* g, float* velocity, std::size_t n, const sgd_step& step) {
  HWY_DYNAMIC_DISPATCH(SgdUpdateF32)(w, g, velocity, n, step);
}
MIXPREC_KERNEL_API void sgd_update_bf16(bfloat16* w, const bfloat16* g, bfloat16* velocity, std::size_t n,
                                        const sgd_step& step) {
  HWY_DYNAMIC_DISPATCH(SgdUpdateBF16)(w, g, velocity, n, step);
}
MIXPREC_KERNEL_API void sgd_update_f16(float16* w, const float16* g, float16* velocity, std::size_t n,
                                       const sgd_step& step) {
  HWY_DYNAMIC_DISPATCH(SgdUpdateF16)(w, g, velocity, n, step);
}
MIXPREC_KERNEL_API void adam_update_f32(float* w, const float* g, float* m, float* v, float* v_hat, std::size_t n,
                                        const adam_scalars& step) {
  HWY_DYNAMIC_DISPATCH(AdamUpdateF32)(w, g, m, v, v_hat, n, step);
}
MIXPREC_KERNEL_API void adam_update_bf16(bfloat16* w, const bfloat16* g, bfloat16* m, bfloat16* v, bfloat16* v_hat,
                                         std::size_t n, const adam_scalars& step) {
  HWY_DYNAMIC_DISPATCH(AdamUpdateBF16)(w, g, m, v, v_hat, n, step);
}
MIXPREC_KERNEL_API void adam_update_f16(float16* w, const float16* g, float16* m, float16* v, float16* v_hat,
                                        std::size_t n, const adam_scalars& step) {
  HWY_DYNAMIC_DISPATCH(AdamUpdateF16)(w, g, m, v, v_hat, n, step);
}
MIXPREC_KERNEL_API void clip_by_value_f32(float* g, std::size_t n, float clip) {
  HWY_DYNAMIC_DISPATCH(ClipByValueF32)(g, n, clip);
}
MIXPREC_KERNEL_API void clip_by_value_bf16(bfloat16* g, std::size_t n, float clip) {
  HWY_DYNAMIC_DISPATCH(ClipByValueBF16)(g, n, clip);
}
MIXPREC_KERNEL_API void clip_by_value_f16(float16* g, std::size_t n, float clip) {
  HWY_DYNAMIC_DISPATCH(ClipByValueF16)(g, n, clip);
}
MIXPREC_KERNEL_API void scale_f32(float* g, std::size_t n, float multiplier, float divisor) {
  HWY_DYNAMIC_DISPATCH(ScaleF32)(g, n, multiplier, divisor);
}
MIXPREC_KERNEL_API void scale_bf16(bfloat16* g, std::size_t n, float multiplier, float divisor) {
  HWY_DYNAMIC_DISPATCH(ScaleBF16)(g, n, multiplier, divisor);
}
MIXPREC_KERNEL_API void scale_f16(float16* g, std::size_t n, float multiplier, float divisor) {
  HWY_DYNAMIC_DISPATCH(ScaleF16)(g, n, multiplier, divisor);
}

}  // namespace detail
}  // namespace mixprec::kernels
