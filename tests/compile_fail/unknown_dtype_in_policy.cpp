// long double is not a dtype (Keras has no such dtype).
// expect: Policy<Compute, ...>: Compute is not a mixprec dtype
#include <mixprec/core/policy.hpp>

#ifdef MIXPREC_COMPILE_FAIL_CONTROL
using policy = mixprec::Policy<double>;
#else
using policy = mixprec::Policy<long double>;
#endif
[[maybe_unused]] constexpr policy instance{};
