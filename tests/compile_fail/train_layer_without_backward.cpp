// A user-written layer (no layer kind, so no backward pass) in a model that is trained.
// expect: Sequential: the layer at position LayerPosition has no backward pass
// expect: layer_has_no_backward_pass<2, Doubler>
#include <mixprec/layers.hpp>
#include <mixprec/models/sequential.hpp>
#include <mixprec/training.hpp>

using namespace mixprec;

struct Doubler : Layer<Doubler, model_policy> {
  template <class Policy>
  using with_default_policy = Doubler;
  template <class X>
  using output_t = X;
  template <class X>
  X call(const call_context<policy>&, X x) {
    for (auto& v : x.values()) v = v + v;
    return x;
  }
};

int main() {
#ifdef MIXPREC_COMPILE_FAIL_CONTROL
  Sequential<policies::float32, Input<4>, Dense<4>, Dense<2>> model;
#else
  Sequential<policies::float32, Input<4>, Dense<4>, Doubler> model;
#endif
  model.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
  Tensor<float, dynamic, 4> x(1);
  Tensor<float, dynamic, 2> y(1);
#ifdef MIXPREC_COMPILE_FAIL_CONTROL
  return static_cast<int>(model.train_on_batch(x, y).size()) - 1;
#else
  Tensor<float, dynamic, 4> y4(1);
  return static_cast<int>(model.train_on_batch(x, y4).size()) - 1;
#endif
}
