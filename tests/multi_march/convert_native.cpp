// Built with -march=native: convert_default.cpp's calls, in a different target set.
#define MIXPREC_MULTI_MARCH_NATIVE
#include "convert_default.cpp"
