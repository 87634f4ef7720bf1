// Built with -march=native: a different target set in the same program.
#include <mixprec/kernels/convert.hpp>

std::vector<mixprec::bfloat16> to_bfloat16_native(const std::vector<float>& x) {
  std::vector<mixprec::bfloat16> y(x.size());
  mixprec::kernels::convert<float, mixprec::bfloat16>(x, y);
  return y;
}
