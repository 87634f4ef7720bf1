// A second translation unit using the kernels: in single-TU mode it compiles no kernel code.
#include <vector>

#include <mixprec/kernels/convert.hpp>

#ifndef MIXPREC_SEPARATE_KERNELS
#error "this translation unit is meant to be built in single-TU mode"
#endif

bool converts_in_other_tu() {
  const std::vector<float> x{65520.0f};
  std::vector<mixprec::float16> y(1);
  mixprec::kernels::convert<float, mixprec::float16>(x, y);
  return y[0].to_bits() == 0x7C00;
}
