// Options are checked: strides mean nothing to a Dense.
// expect: Dense<Units, Options...>: the options are a dtype policy (policies::...), an activation
#include <mixprec/layers/dense.hpp>

using namespace mixprec;
#ifdef MIXPREC_COMPILE_FAIL_CONTROL
using layer = Dense<10, activations::relu, no_bias>;
#else
using layer = Dense<10, activations::relu, strides<2>>;
#endif
layer make() { return layer(); }
