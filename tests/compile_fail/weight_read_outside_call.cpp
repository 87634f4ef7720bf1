// Only a layer's call gets a call context, so weights read in the compute dtype only there.
// expect: is private within this context
#include <mixprec/layers/layer.hpp>

using namespace mixprec;
int main() {
  AutoCastVariable<float, bfloat16, 2> weight("w", Tensor<float, 2>({1.0f, 2.0f}));
#ifdef MIXPREC_COMPILE_FAIL_CONTROL
  const Tensor<float, 2>& outside = weight.value();  // outside call: the true dtype
  return static_cast<int>(outside.size()) - 2;
#else
  const call_context<policies::mixed_bfloat16> context(false);
  return static_cast<int>(context.read(weight).size()) - 2;
#endif
}
