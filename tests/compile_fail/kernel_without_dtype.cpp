// A kernel over a dtype it has no kernel for (amax of int32): the overloads do not resolve.
// expect: no matching function for call to 'amax(std::vector<int>&)'
// expect: is_floating [with T = int]' evaluated to 'false'
#include <cstdint>
#include <vector>

#include <mixprec/kernels/reduce.hpp>

#ifdef MIXPREC_COMPILE_FAIL_CONTROL
using element = float;
#else
using element = std::int32_t;
#endif

float largest(std::vector<element>& values) { return mixprec::kernels::amax(values); }
