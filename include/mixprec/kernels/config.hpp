// How the kernels are compiled into a program.
//
// Header-only (the default): every translation unit that includes a kernel header compiles the
// kernels for every CPU target Highway supports and dispatches among them at run time. Simple,
// but each such translation unit pays the compile time (see the README for numbers), and it
// cannot also use hwy/foreach_target.h for its own Highway code.
//
// Single-TU: define MIXPREC_SEPARATE_KERNELS for the whole program (the CMake target
// mixprec::separate_kernels does it) and include <mixprec/kernels/implementation.hpp> in exactly
// one translation unit, and, if the program uses RuntimeModel, the runtime model's layer
// instantiations <mixprec/models/detail/make_runtime_layer.hpp> in exactly one translation unit
// too (the CMake target compiles both). Every other translation unit then sees only declarations.
#pragma once

#ifdef MIXPREC_SEPARATE_KERNELS
#define MIXPREC_KERNEL_API
#else
#define MIXPREC_KERNEL_API inline
#endif
