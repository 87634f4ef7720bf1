// The global policy: default, set, rejected sets, scopes, threads.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

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

TEST_CASE("reading and setting from several threads") {
  policy_scope restore(dtype_policy());
  const std::vector<DTypePolicy> choices{DTypePolicy("mixed_float16"), DTypePolicy("mixed_bfloat16"),
                                         QuantizedFloat8DTypePolicy("float8", "float32", 3)};
  std::atomic<bool> torn{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        if ((i + t) % 3 == 0) set_dtype_policy(choices[static_cast<std::size_t>(i % 3)]);
        const DTypePolicy seen = dtype_policy();
        bool known = false;
        for (const auto& c : choices) known = known || seen == c;
        if (!known && seen != DTypePolicy("float32")) torn = true;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK_FALSE(torn.load());
}
