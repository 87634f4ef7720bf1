// A tensor whose static extents multiply past std::size_t.
// expect: Tensor extents multiply to more elements than std::size_t counts.
#include <mixprec/layers/tensor.hpp>

using namespace mixprec;
int main() {
#ifdef MIXPREC_COMPILE_FAIL_CONTROL
  Tensor<float, dynamic, std::size_t{1} << 20, std::size_t{1} << 20> x;
#else
  Tensor<float, dynamic, std::size_t{1} << 32, std::size_t{1} << 32> x;
#endif
  return static_cast<int>(x.batch());
}
