// Float targets of another shape than the model's (batch, 10) output.
// expect: Sequential: the labels cannot fit the model's output.
// expect: labels_do_not_fit_the_output<mixprec::batch_of<10>, mixprec::batch_of<3>, float>
#include <mixprec/layers.hpp>
#include <mixprec/models/sequential.hpp>
#include <mixprec/training.hpp>

using namespace mixprec;
int main() {
  Sequential<policies::float32, Input<4>, Dense<10>> model;
  model.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
  Tensor<float, dynamic, 4> x(1);
#ifdef MIXPREC_COMPILE_FAIL_CONTROL
  Tensor<float, dynamic, 10> y(1);
#else
  Tensor<float, dynamic, 3> y(1);
#endif
  return static_cast<int>(model.train_on_batch(x, y).size()) - 1;
}
