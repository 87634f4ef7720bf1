// Uses the compile-time core and the runtime adapter the way a user's program would.
#include <cstdio>
#include <mixprec/mixprec.hpp>

int main() {
  mixprec::set_dtype_policy("mixed_bfloat16");
  const auto name = mixprec::DTypePolicy().visit([](auto policy) { return decltype(policy)::name; });
  const bool ok = name == mixprec::policies::mixed_bfloat16::name;
  std::printf("consumer: global policy visits %.*s: %s\n", static_cast<int>(name.size()), name.data(),
              ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
