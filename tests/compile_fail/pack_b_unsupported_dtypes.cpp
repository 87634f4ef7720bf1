// pack_b of a float16 B for bfloat16 products.
// expect: mixprec::kernels::pack_b packs a B of the A dtype
#include <mixprec/kernels/gemm.hpp>

#ifdef MIXPREC_COMPILE_FAIL_CONTROL
using stored = float;
#else
using stored = mixprec::float16;
#endif

auto pack(const stored* b) {
  return mixprec::kernels::pack_b<mixprec::bfloat16>(mixprec::kernels::transpose::no, 2, 2, b, 2);
}
