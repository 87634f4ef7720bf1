// Only Dense has an int8 form: a quantized policy on another layer kind does not compile, rather
// than claim int8 and compute in float.
// expect: This layer kind has no quantized form: give a quantized policy (QuantizedPolicy<...>) only to Dense
#include <mixprec/layers/conv2d.hpp>
#include <mixprec/layers/dense.hpp>

using namespace mixprec;
using int8_policy = QuantizedPolicy<quantization::int8, policies::mixed_bfloat16>;
#ifdef MIXPREC_COMPILE_FAIL_CONTROL
using layer = Dense<8, int8_policy>;
#else
using layer = Conv2D<8, 3, 3, int8_policy>;
#endif
layer make() { return layer(); }
