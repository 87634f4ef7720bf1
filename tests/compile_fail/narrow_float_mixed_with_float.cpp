// Mixing dtypes needs an explicit cast: float16 + float does not compile.
// expect: no match for 'operator+'
#include <mixprec/core/float16.hpp>

mixprec::float16 add(mixprec::float16 a, float b) {
#ifdef MIXPREC_COMPILE_FAIL_CONTROL
  return a + mixprec::float16(b);
#else
  return a + b;
#endif
}
