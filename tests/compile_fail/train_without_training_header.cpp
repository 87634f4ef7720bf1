// compile() without the training floor's header.
// compiled alone: the other snippets include the training header that this one leaves out
// expect: compile(), train_on_batch() and test_on_batch() live on the training floor: #include <mixprec/training.hpp>.
#include <mixprec/layers.hpp>
#include <mixprec/models/sequential.hpp>
#ifdef MIXPREC_COMPILE_FAIL_CONTROL
#include <mixprec/training.hpp>
#endif

using namespace mixprec;
template <class Optimizer, class Loss, class Model>
void compile_with(Model& model, Optimizer optimizer, Loss loss) {
  model.compile(std::move(optimizer), std::move(loss));
}

int main() {
  Sequential<policies::float32, Input<4>, Dense<2>> model;
#ifdef MIXPREC_COMPILE_FAIL_CONTROL
  compile_with(model, optimizers::SGD(0.1), losses::MeanSquaredError());
#else
  struct fake_optimizer {};
  compile_with(model, fake_optimizer{}, 0);
#endif
  return 0;
}
