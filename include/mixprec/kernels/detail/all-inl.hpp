// Every per-target kernel family, for hwy/foreach_target.h (see ../implementation.hpp).
// Each included file has its own toggle guard.
#include <mixprec/kernels/detail/common-inl.hpp>
#include <mixprec/kernels/detail/convert-inl.hpp>
#include <mixprec/kernels/detail/gemm-inl.hpp>
#include <mixprec/kernels/detail/reduce-inl.hpp>
#include <mixprec/kernels/detail/elementwise-inl.hpp>
#include <mixprec/kernels/detail/optimizer-inl.hpp>
