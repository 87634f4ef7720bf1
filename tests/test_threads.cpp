// Threads: the global policy (per-thread scopes, the process-wide policy), the kernels' thread
// pool (set_num_threads while GEMMs run, threads the OS refuses), GEMMs from several threads.
// The tsan preset runs this file under ThreadSanitizer (scripts/run tsan).
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <spawn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <mixprec/kernels.hpp>
#include <mixprec/kernels/thread_pool.hpp>
#include <mixprec/runtime.hpp>

using namespace mixprec;

extern char** environ;

// ---- the global policy ----------------------------------------------------------------------

TEST_CASE("overlapping policy scopes on two threads: each sees its own, and both restore") {
  REQUIRE(dtype_policy().name() == "float32");
  std::barrier step(2);
  const auto in_order = [&](auto&&... stages) { (..., (stages(), step.arrive_and_wait())); };
  std::thread bfloat16_thread([&] {
    auto scope = std::make_unique<policy_scope>("mixed_bfloat16");
    in_order([] {},                                                        // 1: open
             [] {},                                                        // 2: the other opens
             [] { CHECK(dtype_policy().name() == "mixed_bfloat16"); },     // 3: both open
             [&] { scope.reset(); },                                       // 4: this one ends first
             [] { CHECK(dtype_policy().name() == "float32"); });           // 5: the other still open
  });
  std::thread float16_thread([&] {
    std::unique_ptr<policy_scope> scope;
    in_order([] {},
             [&] { scope = std::make_unique<policy_scope>("mixed_float16"); },
             [] { CHECK(dtype_policy().name() == "mixed_float16"); },
             [] {},
             [&] {
               CHECK(dtype_policy().name() == "mixed_float16");
               scope.reset();
               CHECK(dtype_policy().name() == "float32");
             });
  });
  bfloat16_thread.join();
  float16_thread.join();
  CHECK(dtype_policy().name() == "float32");
}

TEST_CASE("set_dtype_policy: process-wide outside a scope, the scope's inside one") {
  REQUIRE(dtype_policy().name() == "float32");
  std::barrier step(2);
  std::thread scoped([&] {
    {
      policy_scope scope("bfloat16");
      set_dtype_policy("float16");  // replaces this scope's policy, for this thread only
      CHECK(dtype_policy().name() == "float16");
      step.arrive_and_wait();  // 1: the main thread checks the process-wide policy
      step.arrive_and_wait();  // 2: the main thread set it
      CHECK(dtype_policy().name() == "float16");
    }
    CHECK(dtype_policy().name() == "mixed_float16");  // the process-wide policy as it is now
  });
  step.arrive_and_wait();
  CHECK(dtype_policy().name() == "float32");
  set_dtype_policy("mixed_float16");
  CHECK(DTypePolicy().name() == "mixed_float16");
  std::thread unscoped([] { CHECK(dtype_policy().name() == "mixed_float16"); });  // a new thread sees it
  unscoped.join();
  step.arrive_and_wait();
  scoped.join();
  set_dtype_policy("float32");
}

TEST_CASE("scopes and sets from several threads at once: no thread sees another's scope") {
  const std::vector<DTypePolicy> process_wide{DTypePolicy("float32"), DTypePolicy("mixed_float16"),
                                              QuantizedFloat8DTypePolicy("float8", "float32", 3)};
  const std::vector<DTypePolicy> scoped{DTypePolicy("bfloat16"), DTypePolicy("float64"), DTypePolicy("float16"),
                                        QuantizedDTypePolicy("int8", "mixed_bfloat16")};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {  // the process-wide policy changes all the time
    for (int i = 0; i < 3000; ++i) set_dtype_policy(process_wide[static_cast<std::size_t>(i) % process_wide.size()]);
  });
  for (std::size_t t = 0; t < scoped.size(); ++t) {
    threads.emplace_back([&, t] {
      const auto known = [&](const DTypePolicy& seen) {
        for (const auto& p : process_wide) if (seen == p) return true;
        return false;
      };
      for (int i = 0; i < 3000; ++i) {
        if (!known(dtype_policy())) ++wrong;
        policy_scope outer(scoped[t]);
        if (dtype_policy() != scoped[t]) ++wrong;
        {
          policy_scope inner(scoped[(t + 1) % scoped.size()]);
          if (DTypePolicy() != scoped[(t + 1) % scoped.size()]) ++wrong;
        }
        if (mixed_precision::experimental::global_policy().dtype_policy() != scoped[t]) ++wrong;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(wrong.load() == 0);
  set_dtype_policy("float32");
}

// ---- the kernels' thread pool ------------------------------------------------------------------

namespace {

/// A x B for 192 x 192 matrices: enough work for the GEMM to split across threads.
constexpr std::size_t side = 192;

std::vector<float> matrix(float seed) {
  std::vector<float> values(side * side);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((i * 37 + 11) % 101) / 50.0f - seed;
  return values;
}

std::vector<float> product(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> c(side * side);
  kernels::gemm<float, float, float>(kernels::transpose::no, kernels::transpose::no, side, side, side, 1.0f, a, side,
                                     b, side, 0.0f, c, side);
  return c;
}

std::size_t threads_of_this_process() {
  const std::filesystem::directory_iterator tasks("/proc/self/task");
  return static_cast<std::size_t>(std::distance(std::filesystem::begin(tasks), std::filesystem::end(tasks)));
}

// ASan and TSan reserve terabytes of address space: an address-space limit cannot apply there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool address_space_limits_work = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool address_space_limits_work = false;
#else
constexpr bool address_space_limits_work = true;
#endif
#else
constexpr bool address_space_limits_work = true;
#endif

/// Lowers this process's address-space limit (RLIMIT_AS) while it lives.
class address_space_limit {
 public:
  explicit address_space_limit(rlim_t bytes) {
    REQUIRE(getrlimit(RLIMIT_AS, &saved_) == 0);
    rlimit lowered = saved_;
    lowered.rlim_cur = std::min(bytes, saved_.rlim_max);
    REQUIRE(setrlimit(RLIMIT_AS, &lowered) == 0);
  }
  ~address_space_limit() { setrlimit(RLIMIT_AS, &saved_); }
  address_space_limit(const address_space_limit&) = delete;
  address_space_limit& operator=(const address_space_limit&) = delete;

  /// The address space this process has mapped now (VmSize).
  static rlim_t in_use() {
    std::ifstream statm("/proc/self/statm");
    rlim_t pages = 0;
    statm >> pages;
    return pages * static_cast<rlim_t>(sysconf(_SC_PAGESIZE));
  }

 private:
  rlimit saved_{};
};

/// Runs one of this file's test cases (one marked doctest::skip(), which only runs so) in a new
/// process of this program: there, no GEMM has built the default pool yet. Whether it passed.
bool passes_in_new_process(const std::string& test_case) {
  std::string program = std::filesystem::read_symlink("/proc/self/exe");
  std::string no_skip = "--no-skip";
  std::string filter = "--test-case=" + test_case;
  char* argv[] = {program.data(), no_skip.data(), filter.data(), nullptr};
  pid_t child = 0;
  REQUIRE(posix_spawn(&child, program.c_str(), nullptr, nullptr, argv, environ) == 0);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

TEST_CASE("GEMMs on several threads while another changes the number of threads: same bits") {
  const std::vector<float> a = matrix(1.0f), b = matrix(0.5f);
  kernels::set_num_threads(1);
  const std::vector<float> expected = product(a, b);
  std::atomic<bool> resizing{true};
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < 4 || resizing.load(); ++i)
        if (product(a, b) != expected) ++wrong;
    });
  }
  std::thread resizer([&] {
    for (std::size_t i = 0; i < 40; ++i) {
      kernels::set_num_threads(1 + i % 4);
      if (kernels::num_threads() < 1) ++wrong;
    }
    resizing = false;
  });
  resizer.join();
  for (auto& caller : callers) caller.join();
  CHECK(wrong.load() == 0);
  kernels::set_num_threads(0);
}

TEST_CASE("a thread pool larger than max_threads is refused, the previous pool kept") {
  kernels::set_num_threads(3);
  CHECK_THROWS_WITH_AS(kernels::set_num_threads(kernels::thread_pool::max_threads + 1),
                       "kernels: a thread pool of 4097 threads requested; at most 4096 (0 means one per hardware "
                       "thread).",
                       std::invalid_argument);
  CHECK_THROWS_AS(kernels::thread_pool(static_cast<std::size_t>(-1)), std::invalid_argument);
  CHECK(kernels::num_threads() == 3);
  kernels::set_num_threads(0);
}

TEST_CASE("set_num_threads when the OS refuses threads: std::system_error, joined, the previous pool kept") {
  if (!address_space_limits_work) return;
  kernels::set_num_threads(2);
  const std::vector<float> a = matrix(1.0f), b = matrix(0.5f);
  const std::vector<float> expected = product(a, b);
  const std::size_t threads_before = threads_of_this_process();
  {
    // 200 threads' stacks (8 MiB each by default) do not fit in 64 MiB more than is mapped now:
    // the pool's constructor fails part way through.
    const address_space_limit limit(address_space_limit::in_use() + (rlim_t{64} << 20));
    CHECK_THROWS_AS(kernels::set_num_threads(200), std::system_error);
    CHECK(threads_of_this_process() == threads_before);  // the workers it started are joined
    CHECK(kernels::num_threads() == 2);
    CHECK(product(a, b) == expected);  // on the pool of before
  }
  kernels::set_num_threads(0);
}

TEST_CASE("[new process] the default pool refused by the OS" * doctest::skip()) {
  alarm(60);  // a hang fails the test instead of stalling it
  const std::vector<float> a = matrix(1.0f), b = matrix(0.5f);
  if (std::thread::hardware_concurrency() > 1) {
    // Not even one more thread's stack fits: the first GEMM, which builds the default pool, throws.
    const address_space_limit limit(address_space_limit::in_use() + (rlim_t{1} << 20));
    CHECK_THROWS_AS(product(a, b), std::system_error);
    CHECK_THROWS_AS(kernels::num_threads(), std::system_error);
  }
  // Nothing was kept: with the limit gone, the next GEMM builds the pool.
  const std::vector<float> c = product(a, b);
  CHECK(kernels::num_threads() == std::max(1u, std::thread::hardware_concurrency()));
  kernels::set_num_threads(1);
  CHECK(product(a, b) == c);
}

TEST_CASE("[new process] set_num_threads(200) under a 1 GiB address space" * doctest::skip()) {
  alarm(60);
  kernels::set_num_threads(2);
  const std::vector<float> a = matrix(1.0f), b = matrix(0.5f);
  const std::vector<float> expected = product(a, b);
  const address_space_limit limit(rlim_t{1} << 30);
  CHECK_THROWS_AS(kernels::set_num_threads(200), std::system_error);
  CHECK(kernels::num_threads() == 2);
  CHECK(product(a, b) == expected);
}

TEST_CASE("threads the OS refuses, in a new process: the first GEMM and set_num_threads under 1 GiB") {
  if (!address_space_limits_work) return;
  CHECK(passes_in_new_process("[new process] the default pool refused by the OS"));
  if (address_space_limit::in_use() < (rlim_t{512} << 20))
    CHECK(passes_in_new_process("[new process] set_num_threads(200) under a 1 GiB address space"));
}
