// <immintrin.h>, included before Eigen or Highway can include it.
//
// GCC 12's own AVX-512 intrinsics initialize "undefined" vectors from themselves
// (`__m512 __Y = __Y;`), which its -Wmaybe-uninitialized and -Wuninitialized report wherever the optimizer inlines
// them: in Eigen's AVX-512 GEMM and Highway's AVX3 code under -march=native on an AVX-512 CPU,
// -march=sapphirerapids or -march=x86-64-v4 (GCC bug 105593, fixed in GCC 13). Under -Werror that
// false positive in a compiler header breaks the build. The warning is judged at the header's own
// lines, so silencing it for this first, guarded inclusion of the header silences it for good,
// and for nothing else: warnings in mixprec's code and yours still show.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13 && (defined(__x86_64__) || defined(__i386__))
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
