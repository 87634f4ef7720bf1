// Uses the compile-time core, the runtime adapter (a policy map too) and a kernel the way a user's
// program would.
#include <cstdio>
#include <vector>

#include <mixprec/mixprec.hpp>

#ifdef MIXPREC_CONSUMER_OTHER_TU
bool converts_in_other_tu();
bool datasets_in_other_tu();
#endif

int main() {
  mixprec::set_dtype_policy("mixed_bfloat16");
  const auto name = mixprec::DTypePolicy().visit([](auto policy) { return decltype(policy)::name; });
  bool ok = name == mixprec::policies::mixed_bfloat16::name;

  const std::vector<float> x{1.0f, 1.0f + 0x1p-8f + 0x1p-20f, -3.5f};
  std::vector<mixprec::bfloat16> y(x.size());
  mixprec::kernels::convert<float, mixprec::bfloat16>(x, y);
  ok = ok && y[1].to_bits() == 0x3F81;

  mixprec::DTypePolicyMap map;  // its regexes are RE2's: mixprec::mixprec links libre2
  map.set("model/dense_[0-9]+", "float16");
  ok = ok && map.get("model/dense_12").name() == "float16" && map.get("model/dense_x") == mixprec::dtype_policy();
#ifdef MIXPREC_CONSUMER_OTHER_TU
  ok = ok && converts_in_other_tu() && datasets_in_other_tu();
#endif
  std::printf("consumer: policy %.*s, kernels on %s: %s\n", static_cast<int>(name.size()), name.data(),
              mixprec::kernels::active_target().c_str(), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
