// The runtime-string adapter: DTypePolicy, the global policy, serialization, DTypePolicyMap.
#pragma once

#include <mixprec/runtime/dtype_policy.hpp>
#include <mixprec/runtime/dtype_policy_map.hpp>
#include <mixprec/runtime/global_policy.hpp>
#include <mixprec/runtime/serialization.hpp>
