// Header-only mode: every kernel header brings the kernels' definitions with it.
#ifndef MIXPREC_SEPARATE_KERNELS
#include <mixprec/kernels/implementation.hpp>
#endif
