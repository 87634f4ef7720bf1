// The compile-time core: dtypes, the dtype registry, Policy<> and quantized policies.
#pragma once

#include <mixprec/core/cast.hpp>
#include <mixprec/core/dtype.hpp>
#include <mixprec/core/fixed_string.hpp>
#include <mixprec/core/float16.hpp>
#include <mixprec/core/float8.hpp>
#include <mixprec/core/infer_policy.hpp>
#include <mixprec/core/limits.hpp>
#include <mixprec/core/policy.hpp>
#include <mixprec/core/quantized_policy.hpp>
