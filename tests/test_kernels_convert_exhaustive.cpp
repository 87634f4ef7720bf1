// All 2^32 float bit patterns -> bfloat16 and -> float16, on every path this CPU runs, compared
// bit for bit with the scalar codec (itself checked against an independent reference in
// test_dtypes_exhaustive): every supported target, and where the native AVX-512 BF16 kernel runs,
// that target again without it (the code AVX-512 CPUs without BF16 run). It prints the paths it
// checked. Label "exhaustive": run alone with `ctest -L exhaustive`.
//
// Chunk-major so the reference is computed once per chunk and shared by all paths; each step is
// split across the machine's cores.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <mixprec/kernels/convert.hpp>
#include <mixprec/kernels/gemm.hpp>
#include <mixprec/kernels/targets.hpp>

using namespace mixprec;

namespace {

/// Runs work(begin, end) over [0, n) split evenly across the hardware threads.
void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& work) {
  const std::size_t threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(work, n * t / threads, n * (t + 1) / threads);
  for (auto& thread : pool) thread.join();
}

/// Elements whose bits differ. A 16-bit dtype is its bits, so memcmp finds the parts that all
/// match (nearly every one) at memory speed; the element loop took a fifth of the test's time.
template <class T>
std::size_t count_mismatches(const std::vector<T>& got, const std::vector<T>& expected) {
  static_assert(sizeof(T) == sizeof(T{}.to_bits()));
  std::atomic<std::size_t> mismatches{0};
  parallel_for(got.size(), [&](std::size_t begin, std::size_t end) {
    if (std::memcmp(got.data() + begin, expected.data() + begin, (end - begin) * sizeof(T)) == 0) return;
    std::size_t local = 0;
    for (std::size_t i = begin; i < end; ++i) local += got[i].to_bits() != expected[i].to_bits();
    mismatches += local;
  });
  return mismatches;
}

/// One way the conversions can run: a target, with or without the native bfloat16 kernel. The
/// switch only changes float -> bfloat16, so float16 is checked on the native pass alone.
struct conversion_path {
  std::string target;
  bool native_bf16 = false;
  bool float16_too = true;
  std::string name() const { return target + (native_bf16 ? " + native bf16" : ""); }
};

std::vector<conversion_path> paths_of_this_cpu() {
  std::vector<conversion_path> paths;
  for (const auto& target : kernels::supported_targets()) {
    kernels::target_scope scope(target);
    const bool native = kernels::detail::convert_uses_native_bf16();
    paths.push_back({target, native, true});
    if (native) paths.push_back({target, false, false});
  }
  return paths;
}

/// Sets the native bfloat16 switch for a scope, then turns it back on (the default).
class native_bf16_scope {
 public:
  explicit native_bf16_scope(bool enabled) { kernels::detail::set_native_bf16_enabled(enabled); }
  ~native_bf16_scope() { kernels::detail::set_native_bf16_enabled(true); }
  native_bf16_scope(const native_bf16_scope&) = delete;
  native_bf16_scope& operator=(const native_bf16_scope&) = delete;
};

}  // namespace

TEST_CASE("every float bit pattern narrows to bfloat16 and float16 exactly as the scalar codec, on every path") {
  constexpr std::size_t chunk = std::size_t{1} << 24;
  const std::vector<conversion_path> paths = paths_of_this_cpu();
  std::vector<float> input(chunk);
  std::vector<bfloat16> bf16_expected(chunk), bf16_got(chunk);
  std::vector<float16> f16_expected(chunk), f16_got(chunk);
  std::vector<std::size_t> mismatches(paths.size(), 0);

  for (std::uint64_t base = 0; base < (std::uint64_t{1} << 32); base += chunk) {
    parallel_for(chunk, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        const auto bits = static_cast<std::uint32_t>(base + i);
        std::memcpy(&input[i], &bits, sizeof bits);
        bf16_expected[i] = bfloat16(input[i]);
        f16_expected[i] = float16(input[i]);
      }
    });
    for (std::size_t p = 0; p < paths.size(); ++p) {
      kernels::target_scope scope(paths[p].target);
      native_bf16_scope native(paths[p].native_bf16);
      REQUIRE(kernels::detail::convert_uses_native_bf16() == paths[p].native_bf16);
      parallel_for(chunk, [&](std::size_t begin, std::size_t end) {
        const std::span<const float> part(input.data() + begin, end - begin);
        kernels::convert<float, bfloat16>(part, std::span(bf16_got.data() + begin, end - begin));
        if (paths[p].float16_too) kernels::convert<float, float16>(part, std::span(f16_got.data() + begin, end - begin));
      });
      mismatches[p] += count_mismatches(bf16_got, bf16_expected);
      if (paths[p].float16_too) mismatches[p] += count_mismatches(f16_got, f16_expected);
    }
  }
  std::string checked;
  for (std::size_t p = 0; p < paths.size(); ++p) {
    INFO("conversion path ", paths[p].name());
    CHECK(mismatches[p] == 0);
    checked += (checked.empty() ? "" : ", ") + paths[p].name();
  }
  std::printf("mixprec exhaustive conversions: all 2^32 floats checked on %s\n", checked.c_str());
}
