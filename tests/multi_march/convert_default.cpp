// Built without -march: dispatches among all compiled targets.
#include <mixprec/kernels/convert.hpp>
#include <mixprec/kernels/gemm.hpp>

std::vector<mixprec::bfloat16> to_bfloat16_default(const std::vector<float>& x) {
  std::vector<mixprec::bfloat16> y(x.size());
  mixprec::kernels::convert<float, mixprec::bfloat16>(x, y);
  return y;
}

// The GEMM's loop nest is target-independent code: each TU must keep its own copy, compiled with
// its own flags (kernels/detail/gemm_driver.hpp).
std::vector<float> gemm_default(const std::vector<float>& a, const std::vector<float>& b, std::size_t m, std::size_t n,
                            std::size_t k) {
  std::vector<float> c(m * n);
  mixprec::kernels::gemm(mixprec::kernels::transpose::no, mixprec::kernels::transpose::no, m, n, k, 1.0f, a, k, b, n,
                         0.0f, c, n);
  return c;
}
