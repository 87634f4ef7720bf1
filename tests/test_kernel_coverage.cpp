// What this machine's test run covers: the Highway targets compiled in, those this CPU ran (every
// kernel test runs each of them), and the hand-written native paths that need CPU features of
// their own. scripts/run prints the line this test writes, so a CI log says what was tested.
#include <doctest/doctest.h>

#include <cpuid.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <mixprec/kernels/convert.hpp>
#include <mixprec/kernels/gemm.hpp>
#include <mixprec/kernels/quantize.hpp>
#include <mixprec/kernels/targets.hpp>

using namespace mixprec;

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : " ") + name;
  return out;
}

/// CPUID leaf 7, EDX bit `bit` (AMX-BF16 22, AMX-TILE 24, AMX-INT8 25).
bool cpuid_leaf7_edx(unsigned bit) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && (edx & (1u << bit)) != 0;
}

bool avx512_bf16_cpu() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
}

}  // namespace

TEST_CASE("kernel coverage on this machine") {
  const auto compiled = kernels::compiled_targets();
  const auto supported = kernels::supported_targets();
  REQUIRE_FALSE(supported.empty());
  for (const auto& target : supported)
    CHECK(std::find(compiled.begin(), compiled.end(), target) != compiled.end());
  CHECK(kernels::active_target() == supported.front());

  // The native bfloat16 GEMM and conversion run exactly when the CPU has AVX-512 BF16 and the AVX3
  // target is chosen.
  const bool avx3_active = kernels::active_target().starts_with("AVX3");
  CHECK(kernels::detail::native_bf16_supported() == avx512_bf16_cpu());
  CHECK(kernels::detail::gemm_uses_native_bf16() == (avx3_active && avx512_bf16_cpu()));
  CHECK(kernels::detail::convert_uses_native_bf16() == (avx3_active && avx512_bf16_cpu()));
  // The AMX kernels run exactly where the CPU has AMX (and the OS allows it) and the AVX3 target is
  // chosen; the CPU check is read here from CPUID itself.
  CHECK((!kernels::detail::amx_bf16_supported() || (cpuid_leaf7_edx(22) && cpuid_leaf7_edx(24))));
  CHECK((!kernels::detail::amx_int8_supported() || (cpuid_leaf7_edx(25) && cpuid_leaf7_edx(24))));
  CHECK(kernels::detail::gemm_uses_amx_bf16() == (avx3_active && kernels::detail::amx_bf16_supported()));
  CHECK((kernels::detail::gemm_int8_kernel() == kernels::detail::int8_gemm_kernel::amx_int8) ==
        (avx3_active && kernels::detail::amx_int8_supported()));

  const char* native_bf16 = avx512_bf16_cpu() ? "yes" : "no, the CPU has no AVX-512 BF16";
  const char* native_bf16_gemm = kernels::detail::gemm_uses_amx_bf16()      ? "yes, AMX-BF16"
                                 : kernels::detail::gemm_uses_native_bf16() ? "yes, vdpbf16ps"
                                                                            : native_bf16;
  std::printf("mixprec coverage: targets run %s (compiled: %s); native bf16 GEMM: %s; "
              "native f32 -> bf16 (vcvtne2ps2bf16): %s; f16 conversions by F16C (AVX2 and better): %s; "
              "int8 GEMM kernel: %s (AMX-INT8 %s, AVX-512 VNNI %s, AVX-VNNI %s)\n",
              joined(supported).c_str(), joined(compiled).c_str(),
              native_bf16_gemm, kernels::detail::convert_uses_native_bf16() ? "yes" : native_bf16,
              std::find(supported.begin(), supported.end(), "AVX2") != supported.end() ? "yes" : "no",
              kernels::detail::int8_gemm_kernel_name(kernels::detail::gemm_int8_kernel()),
              kernels::detail::amx_int8_supported() ? "yes" : "no",
              kernels::detail::avx512_vnni_supported() ? "yes" : "no",
              kernels::detail::avx_vnni_supported() ? "yes" : "no");
}
