// The deprecated "infer" policy (TF 1 / tf.keras 2.x "_infer"): a layer takes its compute and
// variable dtype from its first input. At compile time that is just type deduction:
// resolve_policy_t<policies::infer, bfloat16> is Policy<bfloat16>.
#pragma once

#include <mixprec/core/policy.hpp>

namespace mixprec {

struct InferPolicy {
  static constexpr std::string_view name = "_infer";
};

namespace policies {
using infer [[deprecated("the infer policy is deprecated (as in Keras); name a policy such as policies::float32")]] =
    InferPolicy;
}  // namespace policies

namespace detail {
template <class P, class Input>
struct resolve_policy {
  using type = P;
};
template <class Input>
struct resolve_policy<InferPolicy, Input> {
  static_assert(DType<Input>, "the infer policy deduces its dtype from the first input, which must be a dtype.");
  using type = Policy<Input>;
};
}  // namespace detail

/// The policy a layer with policy P uses for an input of dtype Input.
template <class P, class Input>
using resolve_policy_t = typename detail::resolve_policy<P, Input>::type;

}  // namespace mixprec
