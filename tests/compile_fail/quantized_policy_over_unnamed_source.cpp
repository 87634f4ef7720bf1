// A quantized policy's source is one of Keras' float policies: compute float32 with bfloat16
// variables has no quantized arithmetic, so the layer type does not compile.
// expect: A quantized policy's source must be float16, bfloat16, float32, float64, mixed_float16 or mixed_bfloat16
#include <mixprec/layers/dense.hpp>

using namespace mixprec;
#ifdef MIXPREC_COMPILE_FAIL_CONTROL
using layer = Dense<3, QuantizedPolicy<quantization::int8, policies::mixed_bfloat16>>;
#else
using layer = Dense<3, QuantizedPolicy<quantization::int8, Policy<float, bfloat16>>>;
#endif
layer make() { return layer(); }
