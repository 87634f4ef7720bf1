// The runtime-string adapter: DTypePolicy, the global policy, serialization, DTypePolicyMap, the
// experimental (loss-scale carrying) policy of tf.keras 2.2 and its loss scales.
#pragma once

#include <mixprec/runtime/dtype_policy.hpp>
#include <mixprec/runtime/dtype_policy_map.hpp>
#include <mixprec/runtime/experimental_policy.hpp>
#include <mixprec/runtime/global_policy.hpp>
#include <mixprec/runtime/loss_scale.hpp>
#include <mixprec/runtime/serialization.hpp>
