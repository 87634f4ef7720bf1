// Single-TU mode's second translation unit: every compiled layer the runtime model can build
// (target mixprec::separate_kernels compiles it next to cmake/mixprec_kernels.cpp, in parallel).
#include <mixprec/models/detail/make_runtime_layer.hpp>
