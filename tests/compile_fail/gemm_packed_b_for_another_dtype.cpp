// gemm with a B packed for bfloat16 products, but a float32 A.
// expect: A must have the dtype B was packed for
#include <vector>

#include <mixprec/kernels/gemm.hpp>

#ifdef MIXPREC_COMPILE_FAIL_CONTROL
using input = mixprec::bfloat16;
#else
using input = float;
#endif

void multiply(const mixprec::kernels::packed_b<mixprec::bfloat16>& b, const std::vector<input>& a,
              std::vector<float>& c) {
  mixprec::kernels::gemm(mixprec::kernels::transpose::no, 2, 1.0f, a, b.k(), b, 0.0f, c, b.n());
}
