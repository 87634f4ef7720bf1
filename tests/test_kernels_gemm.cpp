// GEMM on every supported target, for every supported dtype combination and all four
// transpositions: exact on integer data (any wrong index shows), within a derived error bound of a
// double-precision reference on random data, bit-identical for any thread count; plus BLAS edge
// semantics (beta == 0, k == 0, alpha == 0, empty shapes), leading dimensions, argument errors,
// the thread pool, the thread split, and the native AVX-512 BF16 path where the CPU has it.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <mixprec/kernels/convert.hpp>
#include <mixprec/kernels/detail/gemm_blocking.hpp>
#include <mixprec/kernels/detail/gemm_native_bf16.hpp>
#include <mixprec/kernels/gemm.hpp>
#include <mixprec/kernels/thread_pool.hpp>

#include "float_reference.hpp"
#include "kernel_targets.hpp"

using namespace mixprec;
using kernels::transpose;
using mixprec::test::for_each_target;

namespace {

constexpr float nan_f = std::numeric_limits<float>::quiet_NaN();

template <class T>
std::string dtype() {
  if constexpr (std::is_same_v<T, float>) return "float32";
  else if constexpr (std::is_same_v<T, bfloat16>) return "bfloat16";
  else return "float16";
}

template <class T>
auto bits_of(T x) {
  if constexpr (std::is_same_v<T, float>) return std::bit_cast<std::uint32_t>(x);
  else return x.to_bits();
}

/// One operand as gemm sees it: op(X) is rows x cols; it is stored transposed or not, row-major,
/// with leading dimension ld; the padding between rows holds NaN, so reading it shows in C.
template <class T>
struct operand {
  std::size_t rows = 0, cols = 0;
  bool transposed = false;
  std::size_t ld = 0;
  std::vector<T> storage;

  operand(std::size_t r, std::size_t c, bool trans, std::size_t padding) : rows(r), cols(c), transposed(trans) {
    const std::size_t stored_rows = trans ? cols : rows;
    const std::size_t stored_cols = trans ? rows : cols;
    ld = stored_cols + padding;
    storage.assign(stored_rows * ld, T(nan_f));
  }
  T& at(std::size_t i, std::size_t j) { return transposed ? storage[j * ld + i] : storage[i * ld + j]; }
  double value(std::size_t i, std::size_t j) const {
    return static_cast<double>(static_cast<float>(transposed ? storage[j * ld + i] : storage[i * ld + j]));
  }
  template <class Generator>
  void fill(Generator&& generate) {
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) at(i, j) = T(generate());
  }
};

/// C (m x n, leading dimension ldc); its padding holds a sentinel that gemm must leave alone.
template <class T>
struct output {
  std::size_t rows, cols, ld;
  std::vector<T> storage;
  static constexpr float sentinel = 1234.5f;

  output(std::size_t r, std::size_t c, std::size_t padding) : rows(r), cols(c), ld(c + padding) {
    storage.assign(r * ld, T(sentinel));
  }
  T& at(std::size_t i, std::size_t j) { return storage[i * ld + j]; }
  double value(std::size_t i, std::size_t j) const {
    return static_cast<double>(static_cast<float>(storage[i * ld + j]));
  }
};

struct scaling {
  float alpha, beta;
};

/// The exact result in double, and the magnitude it is made of: |alpha| sum_p |a_ip b_pj| + |beta c_ij|.
struct reference {
  std::vector<double> value, magnitude;
};

template <class TA, class TB, class TC>
reference reference_gemm(const operand<TA>& a, const operand<TB>& b, const output<TC>& c0, scaling s) {
  const std::size_t m = a.rows, k = a.cols, n = b.cols;
  std::vector<double> a_rows(m * k), b_columns(n * k);  // op(A) by rows, op(B) by columns
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t p = 0; p < k; ++p) a_rows[i * k + p] = a.value(i, p);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t p = 0; p < k; ++p) b_columns[j * k + p] = b.value(p, j);
  reference r{std::vector<double>(m * n), std::vector<double>(m * n)};
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double sum = 0, magnitude = 0;
      for (std::size_t p = 0; p < k; ++p) {
        const double product = a_rows[i * k + p] * b_columns[j * k + p];
        sum += product;
        magnitude += std::abs(product);
      }
      const double c_term = s.beta == 0.0f ? 0.0 : static_cast<double>(s.beta) * c0.value(i, j);
      r.value[i * n + j] = static_cast<double>(s.alpha) * sum + c_term;
      r.magnitude[i * n + j] = std::abs(static_cast<double>(s.alpha)) * magnitude + std::abs(c_term);
    }
  }
  return r;
}

template <class TA, class TB, class TC>
void run_gemm(const operand<TA>& a, const operand<TB>& b, output<TC>& c, scaling s) {
  const transpose trans_a = a.transposed ? transpose::yes : transpose::no;
  const transpose trans_b = b.transposed ? transpose::yes : transpose::no;
  kernels::gemm(trans_a, trans_b, c.rows, c.cols, a.cols, s.alpha, a.storage.data(), a.ld, b.storage.data(), b.ld,
                s.beta, c.storage.data(), c.ld);
}

/// The padding of C still holds the sentinel.
template <class TC>
bool padding_untouched(const output<TC>& c) {
  for (std::size_t i = 0; i < c.rows; ++i)
    for (std::size_t j = c.cols; j < c.ld; ++j)
      if (bits_of(c.storage[i * c.ld + j]) != bits_of(TC(output<TC>::sentinel))) return false;
  return true;
}

// Error bound. For one element the kernel computes alpha * sum_p a_p b_p + beta * c in float:
// the products are summed in order, in depth blocks of kc = 256, each step one fused multiply-add
// (one rounding) or a multiply and an add (two); each block sum is scaled by alpha (one rounding)
// and added to the running result (one), and beta * c is added once (two). So each term (the
// products and beta * c) passes through at most 2 + (k - 1) + 1 + ceil(k / kc) + 2 <= 2k + 4
// roundings, and by the standard analysis of recursive summation (Higham, Accuracy and Stability
// of Numerical Algorithms, 2nd ed., section 3.1),
//     |computed - exact| <= gamma_{2k+4} * (|alpha| sum_p |a_p b_p| + |beta c|),
//     gamma_n = n u / (1 - n u), u = 2^-24 (float's unit roundoff).
// The native bfloat16 path (vdpbf16ps) multiplies pairs exactly and adds both products: fewer
// roundings, but it flushes subnormal results to zero, each flush costing at most FLT_MIN, once
// per step: |alpha| k FLT_MIN more (negligible unless the data underflows; counted anyway).
// A 16-bit C is then rounded once to nearest: relative error u16 = 2^-8 (bfloat16) or 2^-11
// (float16) of the float result, plus half a subnormal step (float16: 2^-25) for tiny values.
double float_bound(std::size_t k, double magnitude, float alpha) {
  const double u = 0x1p-24;
  const double n = 2.0 * static_cast<double>(k) + 4.0;
  return n * u / (1.0 - n * u) * magnitude + std::abs(static_cast<double>(alpha)) * static_cast<double>(k) * FLT_MIN;
}

template <class TC>
double output_bound(double exact, double float_error) {
  if constexpr (std::is_same_v<TC, float>) {
    return float_error;
  } else {
    const double u16 = std::is_same_v<TC, bfloat16> ? 0x1p-8 : 0x1p-11;
    const double half_subnormal_step = std::is_same_v<TC, bfloat16> ? 0x1p-134 : 0x1p-25;
    return float_error + u16 * (std::abs(exact) + float_error) + half_subnormal_step;
  }
}

template <class TC>
void check_within_bound(const output<TC>& c, const reference& r, std::size_t k, float alpha) {
  for (std::size_t i = 0; i < c.rows; ++i) {
    for (std::size_t j = 0; j < c.cols; ++j) {
      const double exact = r.value[i * c.cols + j];
      const double bound = output_bound<TC>(exact, float_bound(k, r.magnitude[i * c.cols + j], alpha));
      const double got = c.value(i, j);
      if (!(std::abs(got - exact) <= bound)) {
        FAIL_CHECK("C(" << i << ", " << j << ") = " << got << ", exact " << exact << ", error "
                        << std::abs(got - exact) << " > bound " << bound);
        return;
      }
    }
  }
  CHECK(padding_untouched(c));
}

struct shape {
  std::size_t m, n, k;
};

/// Runs f on every supported target, or only on the active one (for a test that forced one).
template <class F>
void on_targets(bool every_target, F&& f) {
  if (every_target) for_each_target(f);
  else f(kernels::active_target());
}

std::string describe(shape s, bool trans_a, bool trans_b, scaling sc) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + (trans_a ? " A^T" : " A") +
         (trans_b ? " B^T" : " B") + " alpha " + std::to_string(sc.alpha) + " beta " + std::to_string(sc.beta);
}

/// Random data, every transposition, on every target: within the bound of the double reference.
/// Each call rotates through the scalings; beta == 0 runs on a C full of NaN.
template <class TA, class TB, class TC>
void check_random(const std::vector<shape>& shapes, std::size_t padding, unsigned seed, bool every_target = true) {
  INFO("dtypes A ", dtype<TA>(), ", B ", dtype<TB>(), ", C ", dtype<TC>());
  const scaling scalings[] = {{1.0f, 0.0f}, {-0.75f, 1.0f}, {1.5f, -0.5f}, {0.5f, 0.0f}};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::size_t call = 0;
  for (const shape& sh : shapes) {
    for (int trans = 0; trans < 4; ++trans, ++call) {
      const bool trans_a = (trans & 1) != 0, trans_b = (trans & 2) != 0;
      const scaling sc = scalings[call % 4];
      INFO(describe(sh, trans_a, trans_b, sc), ", padding ", padding);
      operand<TA> a(sh.m, sh.k, trans_a, padding);
      operand<TB> b(sh.k, sh.n, trans_b, padding);
      output<TC> c0(sh.m, sh.n, padding);
      a.fill([&] { return uniform(rng); });
      b.fill([&] { return uniform(rng); });
      for (std::size_t i = 0; i < sh.m; ++i)
        for (std::size_t j = 0; j < sh.n; ++j) c0.at(i, j) = TC(sc.beta == 0.0f ? nan_f : uniform(rng));
      const reference r = reference_gemm(a, b, c0, sc);
      on_targets(every_target, [&](const std::string&) {
        output<TC> c = c0;
        run_gemm(a, b, c, sc);
        check_within_bound(c, r, sh.k, sc.alpha);
      });
    }
  }
}

/// Small integers: every product and partial sum is exact in float, so the result must be exact
/// whatever the order of summation (and a 16-bit C the exact value rounded once).
template <class TA, class TB, class TC>
void check_exact(const std::vector<shape>& shapes, unsigned seed, bool every_target = true) {
  INFO("dtypes A ", dtype<TA>(), ", B ", dtype<TB>(), ", C ", dtype<TC>());
  const scaling scalings[] = {{1.0f, 0.0f}, {2.0f, -1.0f}, {-0.5f, 3.0f}};
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> small(-4, 4);
  std::size_t call = 0;
  for (const shape& sh : shapes) {
    for (int trans = 0; trans < 4; ++trans, ++call) {
      const bool trans_a = (trans & 1) != 0, trans_b = (trans & 2) != 0;
      const scaling sc = scalings[call % 3];
      const std::size_t padding = call % 2 == 0 ? 0 : 3;
      INFO(describe(sh, trans_a, trans_b, sc), ", padding ", padding);
      operand<TA> a(sh.m, sh.k, trans_a, padding);
      operand<TB> b(sh.k, sh.n, trans_b, padding);
      output<TC> c0(sh.m, sh.n, padding);
      a.fill([&] { return static_cast<float>(small(rng)); });
      b.fill([&] { return static_cast<float>(small(rng)); });
      for (std::size_t i = 0; i < sh.m; ++i)
        for (std::size_t j = 0; j < sh.n; ++j)
          c0.at(i, j) = TC(sc.beta == 0.0f ? nan_f : static_cast<float>(small(rng)));
      const reference r = reference_gemm(a, b, c0, sc);
      on_targets(every_target, [&](const std::string&) {
        output<TC> c = c0;
        run_gemm(a, b, c, sc);
        for (std::size_t i = 0; i < sh.m; ++i) {
          for (std::size_t j = 0; j < sh.n; ++j) {
            double expected = r.value[i * sh.n + j];
            if constexpr (std::is_same_v<TC, bfloat16>) expected = test::reference_round(test::ref_bfloat16, expected);
            if constexpr (std::is_same_v<TC, float16>) expected = test::reference_round(test::ref_binary16, expected);
            if (c.value(i, j) != expected) {
              FAIL_CHECK("C(" << i << ", " << j << ") = " << c.value(i, j) << ", expected " << expected);
              return;
            }
          }
        }
        CHECK(padding_untouched(c));
      });
    }
  }
}

template <class F>
void for_each_dtype_combination(F&& f) {
  f.template operator()<float, float, float>();
  f.template operator()<bfloat16, bfloat16, float>();
  f.template operator()<bfloat16, bfloat16, bfloat16>();
  f.template operator()<float16, float16, float>();
  f.template operator()<float16, float16, float16>();
}

/// Restores the GEMM thread count at the end of a scope.
struct thread_count_scope {
  std::size_t saved = kernels::num_threads();
  ~thread_count_scope() { kernels::set_num_threads(saved); }
};

/// Fixed random operands (A and C padded), multiplied with alpha 0.75 and beta -0.5.
template <class TA, class TB, class TC>
struct fixed_problem {
  operand<TA> a;
  operand<TB> b;
  output<TC> c;
  scaling scalars;

  fixed_problem(shape sh, bool trans_a, bool trans_b, scaling s)
      : a(sh.m, sh.k, trans_a, 1), b(sh.k, sh.n, trans_b, 0), c(sh.m, sh.n, 2), scalars(s) {
    std::mt19937 rng(17);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    a.fill([&] { return uniform(rng); });
    b.fill([&] { return uniform(rng); });
    for (auto& x : c.storage) x = TC(uniform(rng));
  }
  /// C after the GEMM on the current thread count.
  std::vector<TC> run() const {
    output<TC> result = c;
    run_gemm(a, b, result, scalars);
    return result.storage;
  }
};

template <class TC>
bool same_bits(const std::vector<TC>& x, const std::vector<TC>& y) {
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (bits_of(x[i]) != bits_of(y[i])) return false;
  return true;
}

/// The same GEMM with 2, 3, 4 and 7 threads, and from inside tasks of the pool, equals the
/// single-threaded one bit for bit. The shapes are large enough (> 7 x 2 Mflop) to be split
/// across all of them; the second has A transposed, the third B.
template <class TA, class TB, class TC>
void check_thread_invariance(const std::vector<shape>& shapes = {{150, 260, 270}, {1000, 20, 400}, {13, 1500, 300}},
                             scaling scalars = {0.75f, -0.5f}) {
  INFO("dtypes A ", dtype<TA>(), ", B ", dtype<TB>(), ", C ", dtype<TC>());
  thread_count_scope restore;
  for (std::size_t s = 0; s < shapes.size(); ++s) {
    const bool trans_a = s == 1, trans_b = s == 2;
    INFO(describe(shapes[s], trans_a, trans_b, scalars));
    fixed_problem<TA, TB, TC> problem(shapes[s], trans_a, trans_b, scalars);
    kernels::set_num_threads(1);
    const auto single = problem.run();
    for (std::size_t threads : {2, 3, 4, 7}) {
      INFO(threads, " threads");
      kernels::set_num_threads(threads);
      CHECK(same_bits(problem.run(), single));
    }
    // From inside tasks of the pool (as Conv2D's chunks call it): planned for one thread, inline.
    std::vector<std::vector<TC>> nested(2);
    kernels::detail::gemm_thread_pool()->run(nested.size(), [&](std::size_t task) { nested[task] = problem.run(); });
    for (const auto& result : nested) CHECK(same_bits(result, single));
  }
}

}  // namespace

TEST_CASE("gemm is exact on small integers: every shape around the micro-tile, transposition and dtype") {
  std::vector<shape> shapes;
  for (std::size_t m : {1, 5, 6, 7, 13})
    for (std::size_t n : {1, 8, 15, 16, 17, 33})
      for (std::size_t k : {1, 2, 17}) shapes.push_back({m, n, k});
  unsigned seed = 1;
  for_each_dtype_combination([&]<class TA, class TB, class TC>() { check_exact<TA, TB, TC>(shapes, seed++); });
}

TEST_CASE("gemm is exact on small integers across cache blocks: kc, mc, nc and the 16-bit accumulator chunk") {
  // 257 > kc, 145 > mc, 1025 > nc, 577 > the 576 accumulator rows of a 16-bit C.
  const std::vector<shape> shapes{{145, 40, 257}, {20, 1025, 30}, {577, 9, 20}};
  unsigned seed = 100;
  for_each_dtype_combination([&]<class TA, class TB, class TC>() { check_exact<TA, TB, TC>(shapes, seed++); });
}

TEST_CASE("gemm on random data is within the error bound of a double reference") {
  const std::vector<shape> shapes{{1, 1, 1},     {7, 13, 17},   {1000, 1, 1000}, {1, 1000, 3},  {12, 32, 255},
                                  {13, 33, 257}, {6, 16, 256},  {145, 47, 300},  {37, 1025, 19}, {2, 3, 1000}};
  unsigned seed = 200;
  for_each_dtype_combination([&]<class TA, class TB, class TC>() {
    check_random<TA, TB, TC>(shapes, 0, seed++);
    check_random<TA, TB, TC>({{9, 21, 70}, {31, 5, 600}}, 5, seed++);  // leading dimensions > widths
  });
}

TEST_CASE("gemm on random data across every cache block edge at once") {
  // 145 rows (mc + 1), 1025 columns (nc + 1), depth 513 (2 kc + 1).
  unsigned seed = 300;
  std::mt19937 rng(seed);
  for_each_dtype_combination([&]<class TA, class TB, class TC>() {
    INFO("dtypes A ", dtype<TA>(), ", B ", dtype<TB>(), ", C ", dtype<TC>());
    const shape sh{145, 1025, 513};
    const bool trans_a = (seed & 1) != 0, trans_b = (seed & 2) != 0;
    ++seed;
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    operand<TA> a(sh.m, sh.k, trans_a, 0);
    operand<TB> b(sh.k, sh.n, trans_b, 0);
    output<TC> c0(sh.m, sh.n, 0);
    a.fill([&] { return uniform(rng); });
    b.fill([&] { return uniform(rng); });
    for (auto& x : c0.storage) x = TC(uniform(rng));
    const scaling sc{1.0f, 1.0f};
    const reference r = reference_gemm(a, b, c0, sc);
    for_each_target([&](const std::string&) {
      output<TC> c = c0;
      run_gemm(a, b, c, sc);
      check_within_bound(c, r, sh.k, sc.alpha);
    });
  });
}

TEST_CASE("the float GEMM gives the same bits on targets that fuse alike, whatever their tile") {
  // AVX3's 12-row tile against AVX2's 6-row one (both fused multiply-adds), SSE4 against SCALAR
  // (multiply, then add): each element of C sees the same operations in the same order. Rows
  // ragged for either tile, both transpositions, float and float16 operands.
  thread_count_scope restore;
  kernels::set_num_threads(1);
  const auto compare = [&]<class T>() {
    INFO("operands ", dtype<T>());
    for (const shape sh : {shape{29, 70, 300}, shape{150, 40, 270}}) {
      for (const bool trans_a : {false, true}) {
        const bool trans_b = !trans_a;
        INFO(describe(sh, trans_a, trans_b, {1.0f, 0.0f}));
        const fixed_problem<T, T, float> problem(sh, trans_a, trans_b, {1.0f, 0.0f});
        std::map<bool, std::pair<std::string, std::vector<float>>> first_of_kind;  // by "fuses"
        for_each_target([&](const std::string& target) {
          const bool fuses = target == "AVX3" || target == "AVX2";
          const auto result = problem.run();
          const auto emplaced = first_of_kind.try_emplace(fuses, target, result);
          const std::string& first_target = emplaced.first->second.first;
          INFO(target, " against ", first_target);
          if (!emplaced.second) CHECK(same_bits(result, emplaced.first->second.second));
        });
      }
    }
  };
  compare.template operator()<float>();
  compare.template operator()<float16>();
}

TEST_CASE("gemm gives the same bits for any number of threads") {
  for_each_target([&](const std::string&) {
    for_each_dtype_combination([&]<class TA, class TB, class TC>() { check_thread_invariance<TA, TB, TC>(); });
  });
}

// Small C, long k: split by depth blocks across the threads (kd::gemm_depth_split), the block
// sums added up afterwards in block order; conv1's 9 x 32 weight gradient is the model. The
// second shape (A transposed, as in x^T dz) is at most one vector wide (the narrow kernel); the
// last is one whole AMX tile, whose first depth block is stored from the tiles.
const std::vector<shape> depth_split_shapes{{9, 32, 8000}, {5, 10, 45000}, {20, 8, 30000}, {32, 32, 8000}};

TEST_CASE("gemm split by depth blocks (small C, long k) gives the same bits for any number of threads") {
  for_each_target([&](const std::string&) {
    // Scaled, and C = A B as a layer's gradient asks for it (alpha 1, beta 0: stored from AMX's tiles).
    for (const scaling scalars : {scaling{0.75f, -0.5f}, scaling{1.0f, 0.0f}}) {
      for_each_dtype_combination([&]<class TA, class TB, class TC>() {
        check_thread_invariance<TA, TB, TC>(depth_split_shapes, scalars);
      });
    }
  });
}

TEST_CASE("gemm split by depth blocks is exact on small integers, beta == 0 over NaN included") {
  thread_count_scope restore;
  kernels::set_num_threads(2);
  REQUIRE(kernels::detail::gemm_depth_split(9, 32, 8000, 12, 32, kernels::detail::highway_gemm_blocks.kc, 16, 2));
  unsigned seed = 500;
  for_each_dtype_combination(
      [&]<class TA, class TB, class TC>() { check_exact<TA, TB, TC>({{9, 32, 8000}, {5, 10, 45000}}, seed++); });
}

TEST_CASE("gemm called from several threads at once (the pool is shared) gives the same bits") {
  thread_count_scope restore;
  fixed_problem<bfloat16, bfloat16, float> problem({150, 260, 270}, false, true, {0.75f, -0.5f});
  kernels::set_num_threads(1);
  const auto expected = problem.run();
  kernels::set_num_threads(2);
  std::vector<std::vector<float>> results(3);
  std::vector<std::thread> callers;
  for (auto& result : results) {
    callers.emplace_back([&result, &problem] {
      for (int repeat = 0; repeat < 3; ++repeat) result = problem.run();
    });
  }
  for (auto& caller : callers) caller.join();
  for (const auto& result : results) CHECK(same_bits(result, expected));
}

TEST_CASE("NaN in one element of A or B reaches exactly its row or column of C") {
  const std::size_t m = 20, n = 37, k = 300, bad_row = 13, bad_column = 30, bad_depth = 277;
  for_each_target([&](const std::string&) {
    for (int trans = 0; trans < 4; ++trans) {
      operand<bfloat16> a(m, k, (trans & 1) != 0, 2);
      operand<bfloat16> b(k, n, (trans & 2) != 0, 1);
      a.fill([] { return 0.5f; });
      b.fill([] { return 0.25f; });
      output<float> c(m, n, 0);
      a.at(bad_row, bad_depth) = bfloat16(nan_f);
      run_gemm(a, b, c, {1.0f, 0.0f});
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) REQUIRE(std::isnan(c.value(i, j)) == (i == bad_row));
      a.at(bad_row, bad_depth) = bfloat16(0.5f);
      b.at(bad_depth, bad_column) = bfloat16(std::numeric_limits<float>::infinity());
      run_gemm(a, b, c, {1.0f, 0.0f});
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) REQUIRE(c.value(i, j) == (j == bad_column ? INFINITY : 0.125 * k));
    }
  });
}

TEST_CASE("gemm edge cases: empty shapes, k == 0, alpha == 0, beta == 0 over NaN") {
  for_each_target([&](const std::string&) {
    // m == 0 or n == 0: nothing is touched (null pointers are fine).
    kernels::gemm<float, float, float>(transpose::no, transpose::no, 0, 5, 3, 1.0f, nullptr, 3, nullptr, 5, 0.0f,
                                       nullptr, 5);
    kernels::gemm<float, float, float>(transpose::no, transpose::no, 4, 0, 3, 1.0f, nullptr, 3, nullptr, 0, 0.0f,
                                       nullptr, 0);
    // k == 0: C = beta * C, A and B are not read.
    std::vector<float> c{1.0f, -2.0f, 3.0f, nan_f};
    kernels::gemm<float, float, float>(transpose::no, transpose::no, 2, 2, 0, 1.0f, nullptr, 0, nullptr, 2, 2.0f,
                                       c.data(), 2);
    CHECK(c[0] == 2.0f);
    CHECK(c[1] == -4.0f);
    CHECK(c[2] == 6.0f);
    CHECK(std::isnan(c[3]));
    kernels::gemm<float, float, float>(transpose::no, transpose::no, 2, 2, 0, 1.0f, nullptr, 0, nullptr, 2, 0.0f,
                                       c.data(), 2);
    CHECK(c == std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f});
    // alpha == 0: A and B are not read (NaN there is ignored), C = beta * C.
    const std::vector<bfloat16> a(6, bfloat16(nan_f)), b(6, bfloat16(nan_f));
    std::vector<bfloat16> c16{bfloat16(1.0f), bfloat16(nan_f), bfloat16(-3.0f), bfloat16(0.5f)};
    kernels::gemm(transpose::no, transpose::no, 2, 2, 3, 0.0f, a.data(), 3, b.data(), 2, 0.5f, c16.data(), 2);
    CHECK(static_cast<float>(c16[0]) == 0.5f);
    CHECK(std::isnan(static_cast<float>(c16[1])));
    CHECK(static_cast<float>(c16[2]) == -1.5f);
    kernels::gemm(transpose::no, transpose::no, 2, 2, 3, 0.0f, a.data(), 3, b.data(), 2, 0.0f, c16.data(), 2);
    for (auto x : c16) CHECK(static_cast<float>(x) == 0.0f);
    // 1 x 1 x 1 with beta == 0 over NaN.
    const float one_a = 3.0f, one_b = -2.0f;
    float one_c = nan_f;
    kernels::gemm(transpose::yes, transpose::yes, 1, 1, 1, 0.5f, &one_a, 1, &one_b, 1, 0.0f, &one_c, 1);
    CHECK(one_c == -3.0f);
  });
}

TEST_CASE("a 16-bit C is rounded once, to nearest even, from the float sum") {
  // 1 + 2^-8 + 2^-9 rounds up in bfloat16 (2^-8 is half an ulp, plus a bit); rounding the float
  // sum is what makes it up: summing in bfloat16 would give 1.
  const std::vector<float> a{1.0f, 1.0f, 1.0f};
  const std::vector<float> b{1.0f, 0x1p-8f, 0x1p-9f};
  std::vector<bfloat16> a16, b16;
  for (float x : a) a16.push_back(bfloat16(x));
  for (float x : b) b16.push_back(bfloat16(x));
  for_each_target([&](const std::string&) {
    bfloat16 c{};
    kernels::gemm(transpose::no, transpose::no, 1, 1, 3, 1.0f, a16.data(), 3, b16.data(), 1, 0.0f, &c, 1);
    CHECK(static_cast<float>(c) == 1.0f + 0x1p-7f);
    // A tie (1 + 2^-8 exactly) goes to even: 1.
    kernels::gemm(transpose::no, transpose::no, 1, 1, 2, 1.0f, a16.data(), 3, b16.data(), 1, 0.0f, &c, 1);
    CHECK(static_cast<float>(c) == 1.0f);
  });
}

// A 16-bit C (beta 0) and a float32 C rounded afterwards are interchangeable: the same bits on
// every path (micro-kernels, cache blocks, the native bfloat16 kernel, the depth split) and
// thread count, so a caller may pick either for memory or speed.
template <class T>
void check_rounded_like_float_c(const std::vector<shape>& shapes) {
  INFO("dtype ", dtype<T>());
  thread_count_scope restore;
  std::mt19937 rng(23);
  std::normal_distribution<float> normal;
  for (const shape& sh : shapes) {
    for (int trans = 0; trans < 4; ++trans) {
      const bool trans_a = (trans & 1) != 0, trans_b = (trans & 2) != 0;
      INFO(describe(sh, trans_a, trans_b, {1.0f, 0.0f}));
      operand<T> a(sh.m, sh.k, trans_a, 0);
      operand<T> b(sh.k, sh.n, trans_b, 0);
      a.fill([&] { return normal(rng); });
      b.fill([&] { return normal(rng); });
      for_each_target([&](const std::string&) {
        for (std::size_t threads : {1, 2}) {
          INFO(threads, " threads");
          kernels::set_num_threads(threads);
          output<float> wide(sh.m, sh.n, 0);
          output<T> narrow(sh.m, sh.n, 0);
          run_gemm(a, b, wide, {1.0f, 0.0f});
          run_gemm(a, b, narrow, {1.0f, 0.0f});
          std::vector<T> rounded(wide.storage.size());
          kernels::convert(wide.storage, rounded);
          CHECK(same_bits(narrow.storage, rounded));
        }
      });
    }
  }
}

TEST_CASE("a 16-bit C is the float32 C rounded: the same bits on random data, every path and thread count") {
  // Past kc (1100 > 1024) and mc, one vector wide or less (the narrow kernel), a depth split.
  const std::vector<shape> shapes{{150, 300, 1100}, {64, 128, 10}, {363, 288, 64}, {7, 13, 3000},
                                  {9, 32, 8000},    {100, 5, 900}, {33, 70, 65}};
  check_rounded_like_float_c<bfloat16>(shapes);
  check_rounded_like_float_c<float16>(shapes);
}

/// Runs f once for each GEMM kernel switch setting that a GEMM with an A of dtype T can see:
/// AMX-BF16 allowed, only vdpbf16ps, neither (bfloat16 only, where the CPU has them; a target
/// below AVX3 runs its Highway kernel whatever the switches say), then restores the switches.
template <class T, class F>
void for_each_kernel_switch(F&& f) {
  enum path { amx, vdpbf16ps, highway };
  for (const path p : {amx, vdpbf16ps, highway}) {
    const bool runs = p == highway || (std::is_same_v<T, bfloat16> && (p == amx ? kernels::detail::amx_bf16_supported()
                                                                               : kernels::detail::native_bf16_supported()));
    if (!runs) continue;
    const std::string kernel = p == amx ? "AMX-BF16" : p == vdpbf16ps ? "vdpbf16ps" : "Highway";
    INFO(kernel, " kernel where the target has it");
    kernels::detail::set_amx_bf16_enabled(p == amx);
    kernels::detail::set_native_bf16_enabled(p != highway);
    f();
  }
  kernels::detail::set_amx_bf16_enabled(true);
  kernels::detail::set_native_bf16_enabled(true);
}

/// A float B multiplied with a 16-bit A is read in A's dtype: C has the bits of the GEMM on B
/// rounded first (kernels::convert), on every target, bfloat16 kernel and thread count. B holds
/// what rounding can get wrong: ties (to even, both ways), float32 subnormals (vcvtne2ps2bf16
/// flushes them), values past float16's range (to infinity), and NaN in the rows' padding.
template <class T>
void check_float_b_read_as(const std::vector<shape>& shapes) {
  INFO("A in ", dtype<T>(), ", B in float32");
  thread_count_scope restore;
  std::mt19937 rng(29);
  std::normal_distribution<float> normal;
  const auto special = [&]() -> float {
    switch (rng() % 8) {
      case 0: return std::bit_cast<float>(0x3F808000u);  // 1 + 2^-8: a bfloat16 tie, to 1
      case 1: return std::bit_cast<float>(0x3F818000u);  // a bfloat16 tie, up to even
      case 2: return std::bit_cast<float>(0x3F801000u);  // 1 + 2^-11: a float16 tie, to 1
      case 3: return std::bit_cast<float>(0x00400001u) * (rng() % 2 ? 1.0f : -1.0f);  // subnormal
      case 4: return 70000.0f;  // float16 infinity
      default: return normal(rng);
    }
  };
  for (const shape& sh : shapes) {
    for (int trans = 0; trans < 4; ++trans) {
      const bool trans_a = (trans & 1) != 0, trans_b = (trans & 2) != 0;
      INFO(describe(sh, trans_a, trans_b, {0.75f, 0.5f}));
      operand<T> a(sh.m, sh.k, trans_a, 1);
      operand<float> b(sh.k, sh.n, trans_b, 2);
      a.fill([&] { return normal(rng); });
      b.fill(special);
      operand<T> rounded(sh.k, sh.n, trans_b, 2);
      for (std::size_t i = 0; i < b.storage.size(); ++i) rounded.storage[i] = T(b.storage[i]);
      output<float> c0(sh.m, sh.n, 1);
      for (float& x : c0.storage) x = normal(rng);
      for_each_target([&](const std::string&) {
        for_each_kernel_switch<T>([&] {
          for (std::size_t threads : {1, 2}) {
            INFO(threads, " threads");
            kernels::set_num_threads(threads);
            output<float> from_float = c0, from_copy = c0;
            run_gemm(a, b, from_float, {0.75f, 0.5f});
            run_gemm(a, rounded, from_copy, {0.75f, 0.5f});
            CHECK(same_bits(from_float.storage, from_copy.storage));
          }
        });
      });
    }
  }
}

TEST_CASE("a float B with a 16-bit A gives the bits of the GEMM on B rounded to A's dtype first") {
  // Past kc and mc, the narrow kernel, a depth split, the MLP's and a convolution's shapes.
  const std::vector<shape> shapes{{40, 70, 1100}, {64, 10, 300}, {150, 100, 64}, {9, 32, 8000},
                                  {33, 70, 65},   {128, 256, 300}, {7, 13, 3}};
  check_float_b_read_as<bfloat16>(shapes);
  check_float_b_read_as<float16>(shapes);
}

TEST_CASE("bad leading dimensions throw, naming the value and its minimum, and leave C unchanged") {
  const std::vector<float> a(100, 1.0f), b(100, 1.0f);
  std::vector<float> c(100, 7.0f);
  const auto call = [&](transpose ta, transpose tb, std::size_t lda, std::size_t ldb, std::size_t ldc) {
    kernels::gemm(ta, tb, 4, 5, 6, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), ldc);
  };
  using doctest::Contains;
  CHECK_THROWS_WITH_AS(call(transpose::no, transpose::no, 5, 5, 5),
                       "gemm: lda = 5 is too small: A is m x k = 4 x 6, row-major, so lda must be at least k = 6.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(call(transpose::yes, transpose::no, 3, 5, 5), Contains("lda must be at least m = 4"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(call(transpose::no, transpose::no, 6, 4, 5), Contains("ldb must be at least n = 5"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(call(transpose::no, transpose::yes, 6, 5, 5), Contains("ldb must be at least k = 6"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(call(transpose::yes, transpose::yes, 4, 6, 4), Contains("ldc must be at least n = 5"),
                       std::invalid_argument);
  CHECK_NOTHROW(call(transpose::yes, transpose::yes, 4, 6, 5));
  std::fill(c.begin(), c.end(), 7.0f);
  CHECK_THROWS_AS(call(transpose::no, transpose::no, 6, 5, 0), std::invalid_argument);
  for (float x : c) REQUIRE(x == 7.0f);
}

TEST_CASE("span overloads check the sizes") {
  const std::vector<float> a{1, 2, 3, 4, 5, 6};  // 2 x 3
  const std::vector<float> b{1, 0, 0, 1, 1, 1};  // 3 x 2
  std::vector<float> c(4);
  kernels::gemm<float, float, float>(transpose::no, transpose::no, 2, 2, 3, 1.0f, a, 3, b, 2, 0.0f, c, 2);
  CHECK(c == std::vector<float>{4, 5, 10, 11});
  std::vector<float> short_c(3, 9.0f);
  CHECK_THROWS_WITH_AS((kernels::gemm<float, float, float>(transpose::no, transpose::no, 2, 2, 3, 1.0f, a, 3, b, 2,
                                                           0.0f, short_c, 2)),
                       "gemm: C has 3 elements but needs 4 (2 rows 2 apart, of 2).", std::invalid_argument);
  CHECK(short_c == std::vector<float>(3, 9.0f));
  CHECK_THROWS_AS((kernels::gemm<float, float, float>(transpose::yes, transpose::no, 2, 2, 3, 1.0f, a, 3, b, 2, 0.0f,
                                                      c, 2)),
                  std::invalid_argument);  // A^T is 3 x 2 with lda 3: needs 8 elements
  // Leading dimensions whose extent overflows std::size_t: (4 - 1) * ld + 4 wraps to 6, which
  // 16 elements would hold.
  using doctest::Contains;
  const std::size_t huge = 6148914691236517206;  // (2^64 + 2) / 3
  const std::vector<float> a16(16), b16(16);
  std::vector<float> c16(16, 9.0f);
  const auto call = [&](std::size_t lda, std::size_t ldb, std::size_t ldc) {
    kernels::gemm<float, float, float>(transpose::no, transpose::no, 4, 4, 4, 1.0f, a16, lda, b16, ldb, 0.0f, c16, ldc);
  };
  CHECK_THROWS_WITH_AS(call(huge, 4, 4),
                       "gemm: lda = 6148914691236517206 is too large: A (4 rows 6148914691236517206 apart, of 4) "
                       "would span more elements than std::size_t counts; A has 16 elements.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(call(4, huge, 4), Contains("gemm: ldb = 6148914691236517206 is too large: B (4 rows"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(call(4, 4, huge), Contains("gemm: ldc = 6148914691236517206 is too large: C (4 rows"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(call(static_cast<std::size_t>(-1), 4, 4),
                       Contains("gemm: lda = 18446744073709551615 is too large"), std::invalid_argument);
  CHECK(c16 == std::vector<float>(16, 9.0f));
}

TEST_CASE("span overloads refuse a C over the elements of A or B it would read, writing nothing") {
  // Past one depth block (kc = 256) a C written over A or B changed what the later blocks read:
  // every element came out wrong, silently.
  const std::size_t n = 300;
  std::vector<float> buffer(2 * n * n, 1.0f);
  const std::span<float> all(buffer);
  const auto call = [&](std::span<const float> a, std::span<const float> b, std::span<float> c) {
    kernels::gemm<float, float, float>(transpose::no, transpose::no, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
  };
  const std::vector<float> before = buffer;
  CHECK_THROWS_WITH_AS(call(all.first(n * n), all.subspan(n * n), all.first(n * n)), "gemm: A and C overlap; they must lie apart.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(call(all.first(n * n), all.subspan(n * n), all.subspan(n * n)),
                       "gemm: B and C overlap; they must lie apart.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(call(all.first(n * n), all.subspan(n * n), all.subspan(n, n * n)),  // partly over A
                       "gemm: A and C overlap; they must lie apart.", std::invalid_argument);
  CHECK(buffer == before);
  // Only the elements gemm touches count: A's span may reach over B's, as long as what gemm
  // reads of A (1 x 3) ends before B (3 x 2) and B's before C.
  std::vector<float> tight(3 + 6 + 2);
  kernels::gemm<float, float, float>(transpose::no, transpose::no, 1, 2, 3, 1.0f, std::span<const float>(tight).first(5), 3,
                                     std::span<const float>(tight).subspan(3, 6), 2, 0.0f, std::span(tight).subspan(9), 2);
  // The elements, not the footprint: a C in the gaps between A's rows (lda = ldc = 4, k = n = 2)
  // is apart from A, and computed as with separate buffers.
  std::vector<float> interleaved{1, 2, 0, 0, 3, 4, 0, 0, 5, 6, 0, 0};
  const std::vector<float> identity{1, 0, 0, 1};
  kernels::gemm<float, float, float>(transpose::no, transpose::no, 3, 2, 2, 1.0f, std::span<const float>(interleaved).first(10),
                                     4, identity, 2, 0.0f, std::span(interleaved).subspan(2, 10), 4);
  CHECK(interleaved == std::vector<float>{1, 2, 1, 2, 3, 4, 3, 4, 5, 6, 5, 6});
  // The packed-B GEMM checks the same (the int8 GEMM: test_kernels_quantize).
  const auto packed = kernels::pack_b<float>(transpose::no, 3, 2, std::span<const float>(before).first(6), 2);
  std::vector<float> ac(6, 1.0f);
  const auto packed_over_a = [&] {
    kernels::gemm<float, float>(transpose::no, 2, 1.0f, std::span<const float>(ac), 3, packed, 0.0f, std::span<float>(ac), 2);
  };
  CHECK_THROWS_WITH_AS(packed_over_a(), "gemm: A and C overlap; they must lie apart.", std::invalid_argument);
}

TEST_CASE("native bfloat16 blocking: kc from the L2 size, in whole 32-element steps, 256 to 1024") {
  namespace kd = kernels::detail;
  CHECK(kd::native_bf16_gemm_blocks(1 << 20).kc == 1024);        // Zen 4/5, Sapphire Rapids: 1 MiB or more
  CHECK(kd::native_bf16_gemm_blocks(std::size_t{2} << 20).kc == 1024);
  CHECK(kd::native_bf16_gemm_blocks(512 << 10).kc == 896);       // A block 144 x 896 bfloat16 = 252 KiB
  CHECK(kd::native_bf16_gemm_blocks(256 << 10).kc == 448);
  CHECK(kd::native_bf16_gemm_blocks(64 << 10).kc == 256);        // at least 256
  for (std::size_t l2 : {std::size_t{100000}, std::size_t{777777}, std::size_t{3} << 20}) {
    const kd::gemm_blocks blocks = kd::native_bf16_gemm_blocks(l2);
    CHECK(blocks.kc % 32 == 0);
    CHECK(blocks.mc == kd::highway_gemm_blocks.mc);
    CHECK(blocks.nc == kd::highway_gemm_blocks.nc);
  }
  // What this machine reports (or the 512 KiB fallback) is in the accepted range; computed once.
  const std::size_t l2 = kd::detect_l2_cache_size();
  CHECK(l2 >= (64 << 10));
  CHECK(l2 <= (64 << 20));
  CHECK(&kd::native_bf16_gemm_blocks() == &kd::native_bf16_gemm_blocks());
  CHECK(kd::native_bf16_gemm_blocks().kc == kd::native_bf16_gemm_blocks(l2).kc);
  MESSAGE("native bfloat16 GEMM blocks here: L2 ", l2, " bytes, kc ", kd::native_bf16_gemm_blocks().kc);
}

TEST_CASE("the thread split covers C once, in whole micro-tiles, with at most the threads given") {
  for (std::size_t threads : {1, 2, 3, 4, 7, 16, 64}) {
    for (const shape sh : {shape{1, 1, 1}, shape{1000, 1, 1000}, shape{1, 1000, 3}, shape{256, 256, 256},
                           shape{256, 1024, 1024}, shape{97, 203, 300}, shape{3000, 700, 16}}) {
      INFO(threads, " threads, ", sh.m, "x", sh.n, "x", sh.k);
      const kernels::detail::gemm_split split(sh.m, sh.n, sh.k, 6, 16, threads);
      REQUIRE(split.tasks() >= 1);
      REQUIRE(split.tasks() <= threads);
      std::vector<int> covered(sh.m * sh.n, 0);
      for (std::size_t t = 0; t < split.tasks(); ++t) {
        const auto rows = split.rows(t), columns = split.columns(t);
        REQUIRE(rows.begin % 6 == 0);
        REQUIRE(columns.begin % 16 == 0);
        for (std::size_t i = rows.begin; i < rows.end; ++i)
          for (std::size_t j = columns.begin; j < columns.end; ++j) ++covered[i * sh.n + j];
      }
      REQUIRE(std::count(covered.begin(), covered.end(), 1) == static_cast<std::ptrdiff_t>(covered.size()));
    }
  }
  // Enough work is split across every thread; too little is not split.
  CHECK(kernels::detail::gemm_split(512, 512, 512, 6, 16, 2).tasks() == 2);
  CHECK(kernels::detail::gemm_split(512, 512, 512, 6, 16, 4).tasks() == 4);
  CHECK(kernels::detail::gemm_split(16, 16, 16, 6, 16, 4).tasks() == 1);
  // 256 rows are 21 1/3 twelve-row tiles: halving them leaves 11 tiles against 10 1/3; the
  // columns (8 panels of 32) halve exactly, and that split is taken.
  const kernels::detail::gemm_split square(256, 256, 256, 12, 32, 2);
  REQUIRE(square.tasks() == 2);
  CHECK(square.rows(0).size() == 256);
  CHECK(square.columns(0).size() == 128);
  CHECK(square.columns(1).size() == 128);
}

TEST_CASE("the depth split is taken for a small C and a long k only") {
  using kernels::detail::gemm_depth_split;
  // conv1's weight gradient: one 12 x 32 tile of the native kernel (kc 1024) or of the Highway
  // kernel on AVX-512, a full and a 3-row 6 x 16 tile on AVX2, each thread packing all of B:
  // split the depth.
  CHECK(gemm_depth_split(9, 32, 43264, 12, 32, 1024, 16, 2));
  CHECK(gemm_depth_split(9, 32, 43264, 12, 32, 256, 16, 2));
  CHECK(gemm_depth_split(9, 32, 43264, 6, 16, 256, 16, 7));
  // conv2's 288 x 64 halves evenly by rows: C is split.
  CHECK_FALSE(gemm_depth_split(288, 64, 7744, 6, 32, 256, 16, 2));
  CHECK_FALSE(gemm_depth_split(1024, 1024, 256, 6, 32, 256, 16, 2));
  CHECK_FALSE(gemm_depth_split(256, 10, 1024, 12, 16, 256, 16, 2));  // as cheap either way: C is split
  CHECK_FALSE(gemm_depth_split(9, 32, 43264, 12, 32, 1024, 16, 1));  // one thread
  CHECK_FALSE(gemm_depth_split(9, 32, 256, 6, 32, 256, 16, 2));      // one depth block
  CHECK_FALSE(gemm_depth_split(9, 32, 4000, 6, 32, 256, 16, 2));     // < 2 x 2 Mflop: not worth a thread
  // The block sums (blocks x m x n floats) stay under 16 MiB: 200 x 200 x 400 blocks is 61 MiB.
  CHECK_FALSE(gemm_depth_split(200, 200, 400 * 256, 6, 32, 256, 16, 64));
  // Rows padded to whole vectors count: 6 x 1 x 65536 blocks is 1.5 MiB, 24 MiB padded to 16 lanes.
  CHECK(gemm_depth_split(6, 1, 65536 * 256, 6, 16, 256, 1, 2));
  CHECK_FALSE(gemm_depth_split(6, 1, 65536 * 256, 6, 16, 256, 16, 2));
}

TEST_CASE("thread pool: every task runs once, exceptions reach the caller, nested runs work") {
  for (std::size_t size : {1, 2, 3, 8}) {
    kernels::thread_pool pool(size);
    CHECK(pool.size() == size);
    for (std::size_t tasks : {0, 1, 2, 5, 100}) {
      std::vector<std::atomic<int>> runs(tasks);
      pool.run(tasks, [&](std::size_t i) { runs[i].fetch_add(1); });
      for (auto& r : runs) REQUIRE(r.load() == 1);
    }
    std::atomic<int> ran{0};
    CHECK_THROWS_WITH_AS(pool.run(10,
                                  [&](std::size_t i) {
                                    ran.fetch_add(1);
                                    if (i == 3) throw std::runtime_error("task 3 failed");
                                  }),
                         "task 3 failed", std::runtime_error);
    CHECK(ran.load() == 10);
    std::atomic<int> inner{0};
    pool.run(4, [&](std::size_t) { pool.run(3, [&](std::size_t) { inner.fetch_add(1); }); });
    CHECK(inner.load() == 12);
    // Inside a task, on any thread, a run() would go inline: 1 thread available.
    CHECK(pool.available_threads() == size);
    std::atomic<int> more_than_one{0};
    pool.run(8, [&](std::size_t) {
      if (pool.available_threads() != 1) more_than_one.fetch_add(1);
    });
    CHECK(more_than_one.load() == 0);
    CHECK(pool.available_threads() == size);
  }
  CHECK(kernels::thread_pool(0).size() == std::max(1u, std::thread::hardware_concurrency()));
}

TEST_CASE("set_num_threads / num_threads") {
  thread_count_scope restore;
  kernels::set_num_threads(3);
  CHECK(kernels::num_threads() == 3);
  kernels::set_num_threads(0);
  CHECK(kernels::num_threads() == std::max(1u, std::thread::hardware_concurrency()));
}

#ifdef MIXPREC_KERNELS_HAVE_NATIVE_BF16
TEST_CASE("native bfloat16 pair packing (AVX-512): vdpbf16ps and AMX layouts, odd depth, ragged panels, padding") {
  if (!kernels::detail::native_bf16_supported()) {
    MESSAGE("skipped: this CPU has no AVX-512 BF16, so the native pair packing cannot run");
    return;
  }
  namespace nb = kernels::detail::native_bf16;
  // Element (lane, p) = lane * 100 + p + 1 (exact in bfloat16 up to 256, then rounded: the bits
  // are compared), stored both ways with NaN between the rows. Depths around the 16-pair blocks
  // of the transposing path and the odd end; lane counts around the panel widths of A (12) and B (32).
  for (const std::size_t width : {nb::tile_rows, nb::tile_columns}) {
    for (const std::size_t lanes : {1, 11, 12, 13, 31, 32, 33, 45}) {
      for (const std::size_t depth : {1, 2, 7, 31, 32, 33, 64, 70}) {
        INFO("width ", width, ", lanes ", lanes, ", depth ", depth);
        const std::size_t ld = std::max(lanes, depth) + 3;
        std::vector<bfloat16> depth_major(depth * ld, bfloat16(nan_f)), lane_major(lanes * ld, bfloat16(nan_f));
        const auto element = [&](std::size_t lane, std::size_t p) -> std::uint32_t {
          if (lane >= lanes || p >= depth) return 0;
          return bfloat16(static_cast<float>(lane * 100 + p + 1)).to_bits();
        };
        for (std::size_t l = 0; l < lanes; ++l) {
          for (std::size_t p = 0; p < depth; ++p) {
            depth_major[p * ld + l] = bfloat16::from_bits(static_cast<std::uint16_t>(element(l, p)));
            lane_major[l * ld + p] = bfloat16::from_bits(static_cast<std::uint16_t>(element(l, p)));
          }
        }
        const std::size_t pairs = nb::pairs_of(depth);
        REQUIRE(pairs == (depth + 1) / 2);
        const std::size_t panels = (lanes + width - 1) / width;
        // One extra pair row of sentinels after the panels: nothing is written past them.
        const std::uint32_t sentinel = 0xdeadbeef;
        std::vector<std::uint32_t> from_lanes((panels * pairs + 1) * width, sentinel), from_depth = from_lanes;
        nb::pack_pairs(lane_major.data(), ld, 1, lanes, depth, width, pairs, from_lanes.data());
        nb::pack_pairs(depth_major.data(), 1, ld, lanes, depth, width, pairs, from_depth.data());
        for (std::size_t panel = 0; panel < panels; ++panel) {
          for (std::size_t q = 0; q < pairs; ++q) {
            for (std::size_t l = 0; l < width; ++l) {
              const std::size_t lane = panel * width + l;
              const std::uint32_t expected = element(lane, 2 * q) | element(lane, 2 * q + 1) << 16;
              INFO("panel ", panel, " pair ", q, " lane ", l);
              REQUIRE(from_lanes[(panel * pairs + q) * width + l] == expected);
              REQUIRE(from_depth[(panel * pairs + q) * width + l] == expected);
            }
          }
        }
        for (std::size_t l = 0; l < width; ++l) {
          REQUIRE(from_lanes[panels * pairs * width + l] == sentinel);
          REQUIRE(from_depth[panels * pairs * width + l] == sentinel);
        }
        if (width != nb::tile_columns) continue;
        // AMX's layouts: rows of pairs (op(A)) and panels of 32 lanes (op(B)), each lane's pairs
        // zero-padded to whole steps of 16.
        const std::size_t padded = (pairs + 15) / 16 * 16;
        const auto padded_element = [&](std::size_t lane, std::size_t q) -> std::uint32_t {
          return q < pairs ? element(lane, 2 * q) | element(lane, 2 * q + 1) << 16 : 0;
        };
        std::vector<std::uint32_t> rows_from_lanes(lanes * padded + 1, sentinel), rows_from_depth = rows_from_lanes;
        nb::pack_pair_rows(lane_major.data(), ld, 1, lanes, depth, padded, rows_from_lanes.data());
        nb::pack_pair_rows(depth_major.data(), 1, ld, lanes, depth, padded, rows_from_depth.data());
        for (std::size_t lane = 0; lane < lanes; ++lane) {
          for (std::size_t q = 0; q < padded; ++q) {
            INFO("pair rows: lane ", lane, " pair ", q);
            REQUIRE(rows_from_lanes[lane * padded + q] == padded_element(lane, q));
            REQUIRE(rows_from_depth[lane * padded + q] == padded_element(lane, q));
          }
        }
        REQUIRE(rows_from_lanes[lanes * padded] == sentinel);
        REQUIRE(rows_from_depth[lanes * padded] == sentinel);
        std::vector<std::uint32_t> panels_from_lanes((panels * padded + 1) * width, sentinel),
            panels_from_depth = panels_from_lanes;
        nb::pack_pairs(lane_major.data(), ld, 1, lanes, depth, width, padded, panels_from_lanes.data());
        nb::pack_pairs(depth_major.data(), 1, ld, lanes, depth, width, padded, panels_from_depth.data());
        for (std::size_t panel = 0; panel < panels; ++panel) {
          for (std::size_t q = 0; q < padded; ++q) {
            for (std::size_t l = 0; l < width; ++l) {
              const std::size_t lane = panel * width + l;
              const std::uint32_t expected = lane < lanes ? padded_element(lane, q) : 0;
              INFO("padded panels: panel ", panel, " pair ", q, " lane ", l);
              REQUIRE(panels_from_lanes[(panel * padded + q) * width + l] == expected);
              REQUIRE(panels_from_depth[(panel * padded + q) * width + l] == expected);
            }
          }
        }
        REQUIRE(panels_from_lanes[panels * padded * width] == sentinel);
        REQUIRE(panels_from_depth[panels * padded * width] == sentinel);
      }
    }
  }
}
#endif

TEST_CASE("native bfloat16 kernels (AVX-512 BF16, AMX-BF16): only on AVX3 or better, and within the bound") {
  struct native_switch_scope {
    ~native_switch_scope() {
      kernels::detail::set_native_bf16_enabled(true);
      kernels::detail::set_amx_bf16_enabled(true);
    }
  } restore_switch;
  for_each_target([&](const std::string& target) {
    const bool avx3_or_better = target == "AVX3" || target == "AVX3_DL";
    const bool native = avx3_or_better && kernels::detail::native_bf16_supported();
    CHECK(kernels::detail::gemm_uses_native_bf16() == native);
    CHECK(kernels::detail::gemm_uses_amx_bf16() == (native && kernels::detail::amx_bf16_supported()));
    kernels::detail::set_amx_bf16_enabled(false);
    CHECK(kernels::detail::gemm_uses_native_bf16() == native);
    CHECK_FALSE(kernels::detail::gemm_uses_amx_bf16());
    kernels::detail::set_amx_bf16_enabled(true);
    kernels::detail::set_native_bf16_enabled(false);
    CHECK_FALSE(kernels::detail::gemm_uses_native_bf16());
    CHECK_FALSE(kernels::detail::gemm_uses_amx_bf16());
    kernels::detail::set_native_bf16_enabled(true);
  });
  const auto targets = kernels::supported_targets();
  const bool has_avx3 = std::find(targets.begin(), targets.end(), "AVX3") != targets.end();
  if (!kernels::detail::native_bf16_supported() || !has_avx3) {
    MESSAGE("skipped: this CPU has no AVX-512 BF16 (or no AVX3 target), so the native bfloat16 kernel cannot run");
    return;
  }
  kernels::target_scope avx3("AVX3");
  // Depth blocks of this machine's kc (from its L2 size), and edges of every block size the
  // vdpbf16ps kernel runs (4, 8, 12 rows; 16, 32 columns) and of AMX's 32 x 32 tile and 32-deep steps.
  const std::size_t kc = kernels::detail::native_bf16_gemm_blocks().kc;
  const std::vector<shape> shapes{{1, 1, 1},      {7, 13, 17},   {1000, 1, 1000}, {1, 1000, 3},   {12, 32, 255},
                                  {13, 33, 257},  {25, 65, 513}, {145, 47, 300},  {37, 1025, 19}, {577, 9, 20},
                                  {20, 40, kc + 1}, {4, 16, 2 * kc + 3}, {256, 10, 64},  {31, 33, 31},
                                  {32, 32, 32},   {33, 31, 33},  {65, 70, 97}};
  enum class bf16_kernel { amx, vdpbf16ps, highway };
  for (const bf16_kernel kernel : {bf16_kernel::amx, bf16_kernel::vdpbf16ps, bf16_kernel::highway}) {
    if (kernel == bf16_kernel::amx && !kernels::detail::amx_bf16_supported()) {
      MESSAGE("AMX-BF16 kernel skipped: this CPU (or OS) has no AMX-BF16");
      continue;
    }
    const bool native = kernel != bf16_kernel::highway;
    INFO((kernel == bf16_kernel::amx ? "AMX-BF16 kernel" : native ? "native vdpbf16ps kernel" : "Highway AVX3 kernel"));
    kernels::detail::set_native_bf16_enabled(native);
    kernels::detail::set_amx_bf16_enabled(kernel == bf16_kernel::amx);
    REQUIRE(kernels::detail::gemm_uses_native_bf16() == native);
    REQUIRE(kernels::detail::gemm_uses_amx_bf16() == (kernel == bf16_kernel::amx));
    check_random<bfloat16, bfloat16, float>(shapes, 0, 400, false);
    check_random<bfloat16, bfloat16, bfloat16>(shapes, 3, 401, false);
    check_exact<bfloat16, bfloat16, float>({{13, 33, 7}, {145, 40, 257}, {20, 1025, 30}, {30, 50, kc + 1}}, 402,
                                           false);
    check_exact<bfloat16, bfloat16, bfloat16>({{13, 33, 7}, {577, 9, 20}}, 403, false);
    // A first depth block whose packed B (kc / 2 pairs x 704 columns, 1.4 MiB at kc 1024) is more
    // than half of L2 is packed by the first row block's multiplication, 8 panels at a time (two
    // groups, then a ragged one ending in a ragged panel), and reused by the second row block.
    const shape large_b{150, 700, kc + 20};
    MESSAGE("packed B of ", kc / 2 * 704 * 4, " bytes, half of L2 ", kernels::detail::l2_cache_size() / 2);
    check_exact<bfloat16, bfloat16, float>({large_b}, 404, false);
    check_thread_invariance<bfloat16, bfloat16, float>({large_b});
    check_thread_invariance<bfloat16, bfloat16, float>();
    check_thread_invariance<bfloat16, bfloat16, bfloat16>();
    check_thread_invariance<bfloat16, bfloat16, float>({{100, 140, kc + 3}, {150, 100, kc + 5}});
    // Split by depth blocks: one 12 x 32 tile, then one 4 x 16 block.
    check_thread_invariance<bfloat16, bfloat16, float>({{9, 32, 8 * kc + 5}, {3, 10, 80 * kc}});
    check_thread_invariance<bfloat16, bfloat16, bfloat16>({{9, 32, 8 * kc + 5}});
  }
}

TEST_CASE("gemm deduces the dtypes from containers") {
  const std::vector<bfloat16> a{bfloat16(1.0f), bfloat16(2.0f)}, b{bfloat16(3.0f), bfloat16(4.0f)};  // 1x2, 2x1
  std::vector<float> c{100.0f};
  kernels::gemm(transpose::no, transpose::no, 1, 1, 2, 1.0f, a, 2, b, 1, 1.0f, c, 1);
  CHECK(c[0] == 111.0f);
  std::vector<float> too_short;
  CHECK_THROWS_AS(kernels::gemm(transpose::no, transpose::no, 1, 1, 2, 1.0f, a, 2, b, 1, 0.0f, too_short, 1),
                  std::invalid_argument);
}

/// gemm with B packed by pack_b gives the bits of gemm with B itself: every target, bfloat16
/// kernel (AMX, vdpbf16ps, Highway where the target has them) and transposition, 1 and (on the
/// best target: the split is the same code on every target) 2 threads, with a float B too for a
/// 16-bit A; the padding of C untouched.
template <class TA, class TB, class TC>
void check_packed_b(const std::vector<shape>& shapes) {
  INFO("dtypes A ", dtype<TA>(), ", B ", dtype<TB>(), ", C ", dtype<TC>());
  thread_count_scope restore;
  std::mt19937 rng(31);
  std::normal_distribution<float> normal;
  for (const shape& sh : shapes) {
    for (int trans = 0; trans < 4; ++trans) {
      const bool trans_a = (trans & 1) != 0, trans_b = (trans & 2) != 0;
      const scaling sc{0.75f, trans == 1 ? 0.0f : -0.5f};
      INFO(describe(sh, trans_a, trans_b, sc));
      operand<TA> a(sh.m, sh.k, trans_a, 1);
      operand<TB> b(sh.k, sh.n, trans_b, 2);
      a.fill([&] { return normal(rng); });
      b.fill([&] { return normal(rng); });
      output<TC> c0(sh.m, sh.n, 3);
      for (std::size_t i = 0; i < sh.m; ++i)
        for (std::size_t j = 0; j < sh.n; ++j) c0.at(i, j) = TC(sc.beta == 0.0f ? nan_f : normal(rng));
      const std::string best_target = kernels::supported_targets().front();
      for_each_target([&](const std::string& target) {
        for_each_kernel_switch<TA>([&] {
          const kernels::packed_b<TA> packed = kernels::pack_b<TA>(trans_b ? transpose::yes : transpose::no, sh.k, sh.n,
                                                                    b.storage.data(), b.ld);
          REQUIRE(packed.usable());
          CHECK(packed.k() == sh.k);
          CHECK(packed.n() == sh.n);
          for (std::size_t threads = 1; threads <= (target == best_target ? 2u : 1u); ++threads) {
            INFO(threads, " threads");
            kernels::set_num_threads(threads);
            output<TC> from_b = c0, from_packed = c0;
            run_gemm(a, b, from_b, sc);
            kernels::gemm(trans_a ? transpose::yes : transpose::no, sh.m, sc.alpha, a.storage.data(), a.ld, packed,
                          sc.beta, from_packed.storage.data(), from_packed.ld);
            CHECK(same_bits(from_packed.storage, from_b.storage));
          }
        });
      });
    }
  }
}

TEST_CASE("gemm with a packed B gives the bits of gemm with B, on every target, kernel and thread count") {
  // Past kc (1100: two native blocks, five Highway ones) and nc (1100 columns), one vector wide or
  // less (the narrow kernel), a depth split (small C, long k), a 16-bit C in two row chunks
  // (600 > 576 rows), ragged tiles everywhere, k and n of 1.
  const std::vector<shape> shapes{{37, 70, 1100}, {20, 10, 300}, {9, 32, 5000}, {600, 40, 50},
                                  {45, 1100, 40}, {3, 1, 1},     {1, 17, 33}};
  check_packed_b<float, float, float>(shapes);
  check_packed_b<bfloat16, bfloat16, float>(shapes);
  check_packed_b<bfloat16, bfloat16, bfloat16>(shapes);
  check_packed_b<bfloat16, float, float>(shapes);
  check_packed_b<float16, float16, float>(shapes);
  check_packed_b<float16, float16, float16>(shapes);
  check_packed_b<float16, float, float>(shapes);
}

TEST_CASE("a packed B: refused when empty or packed for another kernel, bad leading dimensions and sizes") {
  using doctest::Contains;
  const std::vector<float> a(6, 1.0f), b(6, 2.0f);  // A 2 x 3, B 3 x 2
  std::vector<float> c(4, 7.0f);
  const auto packed = kernels::pack_b<float>(transpose::no, 3, 2, b, 2);
  kernels::gemm(transpose::no, 2, 1.0f, a, 3, packed, 0.0f, c, 2);
  CHECK(c == std::vector<float>(4, 6.0f));
  CHECK(packed.bytes() >= 6 * sizeof(float));
  const kernels::packed_b<float> copy = packed;  // shares the packing
  CHECK(copy.bytes() == packed.bytes());

  kernels::packed_b<float> empty;
  CHECK(empty.empty());
  CHECK_FALSE(empty.usable());
  CHECK_THROWS_WITH_AS(kernels::gemm(transpose::no, 2, 1.0f, a, 3, empty, 0.0f, c, 2),
                       "gemm: the packed B is empty (default-constructed or moved from); pack one with kernels::pack_b.",
                       std::invalid_argument);
  std::fill(c.begin(), c.end(), 7.0f);
  CHECK_THROWS_WITH_AS(kernels::gemm(transpose::no, 2, 1.0f, a, 2, packed, 0.0f, c, 2),
                       Contains("gemm: lda = 2 is too small"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::gemm(transpose::no, 2, 1.0f, a, 3, packed, 0.0f, c, 1),
                       Contains("ldc must be at least n = 2"), std::invalid_argument);
  std::vector<float> short_c(3, 7.0f);
  CHECK_THROWS_WITH_AS(kernels::gemm(transpose::no, 2, 1.0f, a, 3, packed, 0.0f, short_c, 2),
                       "gemm: C has 3 elements but needs 4 (2 rows 2 apart, of 2).", std::invalid_argument);
  CHECK(c == std::vector<float>(4, 7.0f));
  CHECK(short_c == std::vector<float>(3, 7.0f));
  CHECK_THROWS_WITH_AS(kernels::pack_b<float>(transpose::no, 3, 2, b, 1), Contains("ldb must be at least n = 2"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::pack_b<float>(transpose::no, 3, 3, b, 3), "gemm: B has 6 elements but needs 9 (3 rows 3 apart, of 3).",
                       std::invalid_argument);

  // Empty shapes: nothing to multiply, C = beta * C for k == 0, as gemm with B.
  const auto no_depth = kernels::pack_b<float>(transpose::no, 0, 2, b, 2);
  kernels::gemm(transpose::no, 2, 1.0f, a, 3, no_depth, 0.5f, c, 2);
  CHECK(c == std::vector<float>(4, 3.5f));
  kernels::gemm(transpose::no, 0, 1.0f, a, 3, packed, 0.0f, c, 2);
  CHECK(c == std::vector<float>(4, 3.5f));
  const auto no_columns = kernels::pack_b<float>(transpose::yes, 3, 0, b, 3);
  CHECK(no_columns.n() == 0);
  kernels::gemm(transpose::no, 2, 1.0f, a, 3, no_columns, 0.0f, c, 0);
  CHECK(c == std::vector<float>(4, 3.5f));
  std::fill(c.begin(), c.end(), 7.0f);

  // Packed on one target, multiplied on another: refused, naming both kernels.
  const auto targets = kernels::supported_targets();
  if (targets.size() < 2) {
    MESSAGE("skipped: this CPU runs one kernel target only");
    return;
  }
  kernels::packed_b<float> packed_on_best;
  {
    kernels::target_scope best(targets.front());
    packed_on_best = kernels::pack_b<float>(transpose::no, 3, 2, b, 2);
    CHECK(packed_on_best.usable());
  }
  kernels::target_scope other(targets.back());
  CHECK_FALSE(packed_on_best.usable());
  CHECK_THROWS_WITH_AS(kernels::gemm(transpose::no, 2, 1.0f, a, 3, packed_on_best, 0.0f, c, 2),
                       Contains(("gemm: B was packed for the " + targets.front() + " Highway one-vector kernel, but "
                                 "this GEMM would run the " + targets.back() + " Highway")
                                    .c_str()),
                       std::invalid_argument);
  CHECK(c == std::vector<float>(4, 7.0f));
}

TEST_CASE("a bfloat16 B packed for AMX-BF16 is refused once AMX is switched off") {
  if (!kernels::detail::gemm_uses_amx_bf16()) {
    MESSAGE("skipped: this CPU (or OS) does not run the AMX-BF16 kernel");
    return;
  }
  const std::vector<bfloat16> a(64, bfloat16(1.0f)), b(64 * 64, bfloat16(0.5f));
  std::vector<float> c(64 * 64);
  const auto packed = kernels::pack_b<bfloat16>(transpose::no, 64, 64, b, 64);
  kernels::detail::set_amx_bf16_enabled(false);
  CHECK_FALSE(packed.usable());
  CHECK_THROWS_WITH_AS(kernels::gemm(transpose::no, 1, 1.0f, a, 64, packed, 0.0f, c, 64),
                       "gemm: B was packed for the AVX3 AMX-BF16 kernel, but this GEMM would run the AVX3 vdpbf16ps "
                       "kernel (the target was forced or a kernel switched since it was packed); pack B again with "
                       "kernels::pack_b.",
                       std::invalid_argument);
  kernels::detail::set_amx_bf16_enabled(true);
  CHECK(packed.usable());
}
