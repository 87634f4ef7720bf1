// A mixed policy must combine floating dtypes: int32 weights under float16 compute is a mistake.
// expect: a mixed policy (dtypes that differ) needs floating dtypes
#include <cstdint>
#include <mixprec/core/policy.hpp>

#ifdef MIXPREC_COMPILE_FAIL_CONTROL
using policy = mixprec::Policy<mixprec::float16, float>;
#else
using policy = mixprec::Policy<mixprec::float16, std::int32_t>;
#endif
static_assert(policy::name.size() > 0);
