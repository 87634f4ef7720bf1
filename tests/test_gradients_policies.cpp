// compute_gradients under float32, the mixed policies, bfloat16 and float16 against the float64
// gradients, within the unit-roundoff bound of gradient_check.hpp (with its self-test).
#include <doctest/doctest.h>

#include "gradient_check.hpp"

using namespace mixprec;
using namespace gradient_check;

TEST_CASE_TEMPLATE("lower precision: gradients within the unit-roundoff bound of the float64 gradients", P,
                   policies::float32, policies::mixed_bfloat16, policies::mixed_float16, policies::bfloat16,
                   policies::float16) {
  constexpr policy_under_test policy = policy_under_test::of<P>();
  std::uint64_t seed = 900;
  for_each_layer_case([&]<class Case>(const loss_case& lc) { check_policy<Case>(lc, seed += 10, policy); });
  for_each_loss([&]<class Case>(const loss_case& lc) { check_policy<Case>(lc, seed += 10, policy); });
  check_policy<chunked_conv_case>(sparse_logits, 1900, policy);
}
