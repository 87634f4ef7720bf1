// A visitor must return one type for every policy it accepts.
// expect: DTypePolicy::visit: the visitor must return the same type for every policy it accepts.
#include <mixprec/runtime/dtype_policy.hpp>

int main() {
  const mixprec::DTypePolicy policy("mixed_float16");
#ifdef MIXPREC_COMPILE_FAIL_CONTROL
  return static_cast<int>(policy.visit([](auto p) { return sizeof(typename decltype(p)::compute_dtype); }));
#else
  return static_cast<int>(policy.visit([](auto p) { return typename decltype(p)::compute_dtype{}; }).to_bits());
#endif
}
