// mixprec: Keras mixed precision for C++20, with policies as types.
// Include this one header; the floors below can also be included on their own.
#pragma once

#include <mixprec/core.hpp>
#include <mixprec/kernels.hpp>
#include <mixprec/runtime.hpp>
