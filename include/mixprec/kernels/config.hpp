// How the kernels are compiled into a program.
//
// Header-only (the default): every translation unit that includes a kernel header parses the
// kernels for every CPU target Highway supports, compiles those it calls, and dispatches among
// the targets at run time. Simple, but each such translation unit pays the compile time (see the
// README for numbers), and it cannot also use hwy/foreach_target.h for its own Highway code.
//
// Single-TU: define MIXPREC_SEPARATE_KERNELS for the whole program (the CMake target
// mixprec::separate_kernels does it) and include <mixprec/kernels/implementation.hpp> in exactly
// one translation unit, and, if the program uses RuntimeModel, the runtime model's layer
// instantiations <mixprec/models/detail/make_runtime_layer.hpp> in exactly one translation unit
// too (the CMake target compiles both). Every other translation unit then sees only declarations.
#pragma once

//
// MIXPREC_KERNEL_API marks the functions defined with the kernels (inline in header-only mode).
// MIXPREC_KERNEL_ENTRY (on a declaration) and MIXPREC_KERNEL_ENTRY_DEFINITION mark the entry
// points that dispatch to a per-target kernel: in header-only mode they are templates with one
// defaulted, unused parameter, called as plain functions, so that a translation unit compiles a
// kernel (for every target) only if it calls it; MIXPREC_KERNELS_DEFERRED names that parameter
// (see detail/export.hpp). In single-TU mode they are plain functions.
#ifdef MIXPREC_SEPARATE_KERNELS
#define MIXPREC_KERNEL_API
#define MIXPREC_KERNEL_ENTRY
#define MIXPREC_KERNEL_ENTRY_DEFINITION
#define MIXPREC_KERNELS_DEFERRED void
#else
#define MIXPREC_KERNEL_API inline
#define MIXPREC_KERNEL_ENTRY template <class Deferred = void>
#define MIXPREC_KERNEL_ENTRY_DEFINITION template <class Deferred>
#define MIXPREC_KERNELS_DEFERRED Deferred
#endif
