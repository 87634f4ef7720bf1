// Seed 000: a constant made in float32 mixed into a float16 layer's computation.
// expect: Tensor arithmetic needs operands of one dtype. Inside a layer, make constants in its compute dtype
#include <mixprec/layers.hpp>

using namespace mixprec;
struct AddNoise : Layer<AddNoise, policies::mixed_float16> {
  template <class X>
  auto call(const call_context<policies::mixed_float16>& context, const X& x) {
#ifdef MIXPREC_COMPILE_FAIL_CONTROL
    const auto noise = context.random_normal_like(x);  // in the compute dtype
#else
    (void)context;
    const auto noise = tensor_cast<float>(x);  // float32, like tf.random.normal without dtype=
#endif
    return x + noise;
  }
};
int main() {
  AddNoise layer;
  return static_cast<int>(layer(Tensor<float, dynamic, 4>(1)).batch()) - 1;
}
