// A model built for (batch, 784) called with (batch, 100).
// expect: Sequential: the model was called with a tensor of another shape than its Input.
// expect: model_input_mismatch<mixprec::batch_of<784>, mixprec::batch_of<100> >
#include <mixprec/layers.hpp>
#include <mixprec/models/sequential.hpp>

using namespace mixprec;
int main() {
  Sequential<policies::float32, Input<784>, Dense<10>> model;
#ifdef MIXPREC_COMPILE_FAIL_CONTROL
  Tensor<float, dynamic, 784> x(1);
#else
  Tensor<float, dynamic, 100> x(1);
#endif
  return static_cast<int>(model(x).batch()) - 1;
}
