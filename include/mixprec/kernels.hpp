// The kernels: vectorized, dynamically dispatched, bit-identical on every CPU target.
#pragma once

#include <mixprec/kernels/convert.hpp>
#include <mixprec/kernels/gemm.hpp>
#include <mixprec/kernels/reduce.hpp>
#include <mixprec/kernels/elementwise.hpp>
#include <mixprec/kernels/normalization.hpp>
#include <mixprec/kernels/optimizer.hpp>
#include <mixprec/kernels/quantize.hpp>
#include <mixprec/kernels/targets.hpp>
