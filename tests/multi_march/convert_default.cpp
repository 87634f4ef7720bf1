// Built without -march: dispatches among all compiled targets. convert_native.cpp compiles the
// same calls with -march=native (a different target set in the same program), named _native.
#include <mixprec/kernels/convert.hpp>
#include <mixprec/kernels/gemm.hpp>

#ifdef MIXPREC_MULTI_MARCH_NATIVE
#define MIXPREC_MULTI_MARCH_NAME(name) name##_native
#else
#define MIXPREC_MULTI_MARCH_NAME(name) name##_default
#endif

std::vector<mixprec::bfloat16> MIXPREC_MULTI_MARCH_NAME(to_bfloat16)(const std::vector<float>& x) {
  std::vector<mixprec::bfloat16> y(x.size());
  mixprec::kernels::convert<float, mixprec::bfloat16>(x, y);
  return y;
}

// The GEMM's loop nest is target-independent code: each TU must keep its own copy, compiled with
// its own flags (kernels/detail/gemm_driver.hpp).
std::vector<float> MIXPREC_MULTI_MARCH_NAME(gemm)(const std::vector<float>& a, const std::vector<float>& b,
                                                  std::size_t m, std::size_t n, std::size_t k) {
  std::vector<float> c(m * n);
  mixprec::kernels::gemm(mixprec::kernels::transpose::no, mixprec::kernels::transpose::no, m, n, k, 1.0f, a, k, b, n,
                         0.0f, c, n);
  return c;
}
