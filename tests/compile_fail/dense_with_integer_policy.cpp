// Dense cannot compute in int32.
// expect: Dense computes in float16, bfloat16, float32 or float64: its policy's compute dtype is none of them.
#include <cstdint>
#include <mixprec/layers/dense.hpp>

using namespace mixprec;
#ifdef MIXPREC_COMPILE_FAIL_CONTROL
using layer = Dense<10, policies::bfloat16>;
#else
using layer = Dense<10, Policy<std::int32_t>>;
#endif
layer make() { return layer(); }
