// The one translation unit that compiles mixprec's kernels in single-TU mode
// (target mixprec::separate_kernels, which also defines MIXPREC_SEPARATE_KERNELS).
#include <mixprec/kernels/implementation.hpp>
