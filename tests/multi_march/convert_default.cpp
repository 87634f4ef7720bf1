// Built without -march: dispatches among all compiled targets.
#include <mixprec/kernels/convert.hpp>

std::vector<mixprec::bfloat16> to_bfloat16_default(const std::vector<float>& x) {
  std::vector<mixprec::bfloat16> y(x.size());
  mixprec::kernels::convert<float, mixprec::bfloat16>(x, y);
  return y;
}
