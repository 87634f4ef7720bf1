// The global policy: default, set, rejected sets, scopes (threads: test_threads.cpp).
#include <doctest/doctest.h>

#include <memory>
#include <variant>

#include <mixprec/mixprec.hpp>

using namespace mixprec;

TEST_CASE("the global policy defaults to float32") { CHECK(dtype_policy() == DTypePolicy("float32")); }

TEST_CASE("set_dtype_policy takes names, quantized names and policies") {
  policy_scope restore(dtype_policy());
  set_dtype_policy("mixed_float16");
  CHECK(dtype_policy().name() == "mixed_float16");
  CHECK(DTypePolicy() == DTypePolicy("mixed_float16"));
  set_dtype_policy(QuantizedDTypePolicy("int8", "bfloat16"));
  CHECK(dtype_policy().class_name() == "QuantizedDTypePolicy");
  set_dtype_policy("float8_from_mixed_bfloat16");
  CHECK(dtype_policy() == QuantizedFloat8DTypePolicy("float8", "mixed_bfloat16"));
  set_dtype_policy("p=f32,c=bf16,o=f32");
  CHECK(dtype_policy().output_dtype() == "float32");
}

TEST_CASE("a rejected policy leaves the global policy as it was") {
  policy_scope scope("mixed_bfloat16");
  for (const char* bad : {"mixed_float15", "", "int8", "int8_from_float16", "float8_from_", "p=f32,c=x"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(set_dtype_policy(bad), std::invalid_argument);
    CHECK(dtype_policy() == DTypePolicy("mixed_bfloat16"));
  }
  CHECK_THROWS_AS(policy_scope("float15"), std::invalid_argument);
  CHECK(dtype_policy() == DTypePolicy("mixed_bfloat16"));
}

TEST_CASE("policy_scope restores the previous policy, also when nested or unwinding") {
  {
    policy_scope outer("float64");
    {
      policy_scope inner("mixed_float16");
      CHECK(dtype_policy().name() == "mixed_float16");
    }
    CHECK(dtype_policy().name() == "float64");
    try {
      policy_scope failing("bfloat16");
      throw std::runtime_error("unwind");
    } catch (const std::runtime_error&) {
    }
    CHECK(dtype_policy().name() == "float64");
  }
  CHECK(dtype_policy().name() == "float32");
}

TEST_CASE("the seeds' global-policy example") {
  set_dtype_policy("mixed_float16");
  const DTypePolicy layer1_policy;  // a layer without its own dtype takes the global policy
  CHECK(layer1_policy.name() == "mixed_float16");
  const DTypePolicy layer2_policy("float32");
  CHECK(layer2_policy.name() == "float32");
  set_dtype_policy("float32");
  CHECK(dtype_policy().name() == "float32");
}

TEST_CASE("set_dtype_policy inside a scope replaces the scope's policy until it ends") {
  {
    policy_scope outer("bfloat16");
    set_dtype_policy("float16");
    CHECK(dtype_policy().name() == "float16");
    {
      policy_scope inner("float64");
      set_dtype_policy("mixed_float16");
      CHECK(dtype_policy().name() == "mixed_float16");
    }
    CHECK(dtype_policy().name() == "float16");
  }
  CHECK(dtype_policy().name() == "float32");  // the process-wide policy was never touched
}

TEST_CASE("a scope that ends out of order leaves the others open") {
  auto outer = std::make_unique<policy_scope>("bfloat16");
  auto middle = std::make_unique<policy_scope>("float16");
  auto inner = std::make_unique<policy_scope>("float64");
  middle.reset();
  CHECK(dtype_policy().name() == "float64");
  inner.reset();
  CHECK(dtype_policy().name() == "bfloat16");
  outer.reset();
  CHECK(dtype_policy().name() == "float32");
}

TEST_CASE("the experimental loss scale belongs to the scope it was set in") {
  using mixed_precision::experimental::FixedLossScale;
  using mixed_precision::experimental::Policy;
  using mixed_precision::experimental::global_policy;
  using mixed_precision::experimental::set_policy;
  set_policy(Policy("mixed_float16", 512));  // process-wide, with its loss scale
  {
    policy_scope scope("mixed_float16");  // a scope starts with the default ("auto")
    CHECK(global_policy().using_default_loss_scale());
    set_policy(Policy("mixed_float16", 64));
    CHECK(std::get<FixedLossScale>(*global_policy().loss_scale())() == 64.0f);
    set_dtype_policy("mixed_float16");  // drops it, in the scope
    CHECK(global_policy().using_default_loss_scale());
  }
  CHECK(std::get<FixedLossScale>(*global_policy().loss_scale())() == 512.0f);
  set_dtype_policy("float32");
  CHECK(global_policy().using_default_loss_scale());
  CHECK_FALSE(global_policy().loss_scale().has_value());
}
