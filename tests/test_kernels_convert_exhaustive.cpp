// All 2^32 float bit patterns -> bfloat16 and -> float16, on every supported target, compared
// bit for bit with the scalar codec (itself checked against an independent reference in
// test_dtypes_exhaustive). Label "exhaustive": run alone with `ctest -L exhaustive`.
//
// Chunk-major so the reference is computed once per chunk and shared by all targets; each
// step is split across the machine's cores.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <mixprec/kernels/convert.hpp>
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

template <class T>
std::size_t count_mismatches(const std::vector<T>& got, const std::vector<T>& expected) {
  std::atomic<std::size_t> mismatches{0};
  parallel_for(got.size(), [&](std::size_t begin, std::size_t end) {
    std::size_t local = 0;
    for (std::size_t i = begin; i < end; ++i) local += got[i].to_bits() != expected[i].to_bits();
    mismatches += local;
  });
  return mismatches;
}

}  // namespace

TEST_CASE("every float bit pattern narrows to bfloat16 and float16 exactly as the scalar codec, on every target") {
  constexpr std::size_t chunk = std::size_t{1} << 24;
  const std::vector<std::string> targets = kernels::supported_targets();
  std::vector<float> input(chunk);
  std::vector<bfloat16> bf16_expected(chunk), bf16_got(chunk);
  std::vector<float16> f16_expected(chunk), f16_got(chunk);
  std::vector<std::size_t> mismatches(targets.size(), 0);

  for (std::uint64_t base = 0; base < (std::uint64_t{1} << 32); base += chunk) {
    parallel_for(chunk, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        const auto bits = static_cast<std::uint32_t>(base + i);
        std::memcpy(&input[i], &bits, sizeof bits);
        bf16_expected[i] = bfloat16(input[i]);
        f16_expected[i] = float16(input[i]);
      }
    });
    for (std::size_t t = 0; t < targets.size(); ++t) {
      kernels::target_scope scope(targets[t]);
      parallel_for(chunk, [&](std::size_t begin, std::size_t end) {
        const std::span<const float> part(input.data() + begin, end - begin);
        kernels::convert<float, bfloat16>(part, std::span(bf16_got.data() + begin, end - begin));
        kernels::convert<float, float16>(part, std::span(f16_got.data() + begin, end - begin));
      });
      mismatches[t] += count_mismatches(bf16_got, bf16_expected) + count_mismatches(f16_got, f16_expected);
    }
  }
  for (std::size_t t = 0; t < targets.size(); ++t) {
    INFO("kernel target ", targets[t]);
    CHECK(mismatches[t] == 0);
  }
}
