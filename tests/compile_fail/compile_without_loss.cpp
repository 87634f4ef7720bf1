// Keras' compile(optimizer, loss=None): a model cannot be compiled without a loss.
// expect: No loss to compute. Provide a `loss` argument in `compile()`.
#include <mixprec/layers.hpp>
#include <mixprec/models/sequential.hpp>
#include <mixprec/training.hpp>

using namespace mixprec;

int main() {
  Sequential<policies::float32, Input<4>, Dense<2>> model;
#ifdef MIXPREC_COMPILE_FAIL_CONTROL
  model.compile(optimizers::SGD(0.1), "mse");
#else
  model.compile(optimizers::SGD(0.1), nullptr);
#endif
  return 0;
}
