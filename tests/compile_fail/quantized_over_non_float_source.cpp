// Quantization needs a floating source policy.
// expect: Source must be a floating Policy<...>
#include <cstdint>
#include <mixprec/core/quantized_policy.hpp>

#ifdef MIXPREC_COMPILE_FAIL_CONTROL
using source = mixprec::policies::float32;
#else
using source = mixprec::Policy<std::int32_t>;
#endif
static_assert(mixprec::QuantizedPolicy<mixprec::quantization::float8, source>::name.size() > 0);
