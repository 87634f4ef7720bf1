// The infer policy is a model policy; a lone layer needs a concrete one.
// expect: The infer policy is a model policy (Sequential<policies::infer, ...>)
#include <mixprec/layers/dense.hpp>

using namespace mixprec;
#ifdef MIXPREC_COMPILE_FAIL_CONTROL
using layer = Dense<10, policies::float64>;
#else
using layer = Dense<10, InferPolicy>;
#endif
layer make() { return layer(); }
