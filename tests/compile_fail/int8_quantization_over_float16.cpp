// Keras rejects int8 quantization with float16 compute; here the compiler does.
// expect: Quantization mode='int8' doesn't work well with compute_dtype='float16'.
#include <mixprec/core/quantized_policy.hpp>

#ifdef MIXPREC_COMPILE_FAIL_CONTROL
using source = mixprec::policies::mixed_bfloat16;
#else
using source = mixprec::policies::mixed_float16;
#endif
static_assert(mixprec::QuantizedPolicy<mixprec::quantization::int8, source>::name.size() > 0);
