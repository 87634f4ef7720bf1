// The compiled kernels: per-target code for every Highway target, the dispatch tables, and the
// definitions of the entry points declared in detail/entry_points.hpp and targets.hpp.
//
// Header-only mode includes this from every kernel header. In single-TU mode
// (MIXPREC_SEPARATE_KERNELS), include it in exactly one translation unit of the program (and
// see kernels/config.hpp for the runtime model's counterpart).
#pragma once

#ifdef HIGHWAY_HWY_FOREACH_TARGET_H_
#error "mixprec kernels: this translation unit already used hwy/foreach_target.h, which works once per translation unit. Define MIXPREC_SEPARATE_KERNELS for the program and include <mixprec/kernels/implementation.hpp> in a translation unit of its own."
#endif

#include <mixprec/kernels/detail/highway_config.hpp>  // before any Highway header
#include <mixprec/kernels/detail/convert_entry_points.hpp>
#include <mixprec/kernels/targets.hpp>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "mixprec/kernels/detail/all-inl.hpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <mixprec/kernels/detail/all-inl.hpp>

// One dispatch file per kernel family: its dispatch tables (detail/export.hpp) and entry point
// definitions.
#if HWY_ONCE
#include <mixprec/kernels/detail/dispatch_targets.hpp>
#include <mixprec/kernels/detail/dispatch_convert.hpp>
#include <mixprec/kernels/detail/dispatch_gemm.hpp>
#include <mixprec/kernels/detail/dispatch_reduce.hpp>
#include <mixprec/kernels/detail/dispatch_elementwise.hpp>
#include <mixprec/kernels/detail/dispatch_optimizer.hpp>
#endif

// Single-TU mode: the int8 family too (header-only mode compiles it only where
// kernels/quantize.hpp is included).
#ifdef MIXPREC_SEPARATE_KERNELS
#include <mixprec/kernels/detail/int8_implementation.hpp>
#endif
