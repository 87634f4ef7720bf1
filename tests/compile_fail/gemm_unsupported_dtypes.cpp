// gemm on a dtype combination without a kernel (float16 inputs, bfloat16 output).
// expect: mixprec::kernels::gemm supports (A, B, C) dtypes
#include <mixprec/kernels/gemm.hpp>

#ifdef MIXPREC_COMPILE_FAIL_CONTROL
using output = mixprec::float16;
#else
using output = mixprec::bfloat16;
#endif

void multiply(const mixprec::float16* a, const mixprec::float16* b, output* c) {
  using mixprec::kernels::transpose;
  mixprec::kernels::gemm(transpose::no, transpose::no, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
}
