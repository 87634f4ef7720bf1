// dtype_name_v of a type outside the registry.
// expect: mixprec: this type is not a dtype.
#include <mixprec/core/dtype.hpp>

#ifdef MIXPREC_COMPILE_FAIL_CONTROL
using type = mixprec::bfloat16;
#else
using type = char;
#endif
static_assert(!mixprec::dtype_name_v<type>.empty());
