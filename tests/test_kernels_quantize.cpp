// The int8 kernels of kernels/quantize.hpp, on every supported target and every int8 GEMM
// kernel this CPU has (vpdpbusd on AVX-512 VNNI / AVX-VNNI, and the Highway kernel of each
// target): the int8 GEMM against an int64 reference for all four transpositions, ragged and
// block-crossing shapes, the whole int8 range up to the largest depth, any thread count, and its
// argument errors; quantize_rows against a reference written in double (Keras' examples, NaN and
// infinite rows, exact ties) and dequantize_rows against the specified roundings, bit for bit;
// float8 quantize_dequantize against the scalar codec, bit for bit, with its max |x|.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <mixprec/core/cast.hpp>
#include <mixprec/core/float16.hpp>
#include <mixprec/core/float8.hpp>
#include <mixprec/kernels/detail/quantize_rule.hpp>
#include <mixprec/kernels/quantize.hpp>
#include <mixprec/kernels/targets.hpp>

#include "kernel_targets.hpp"

using namespace mixprec;
using kernels::transpose;
using kernels::detail::int8_gemm_kernel;
using mixprec::test::for_each_target;

namespace {

constexpr float nan_f = std::numeric_limits<float>::quiet_NaN();
constexpr float inf_f = std::numeric_limits<float>::infinity();

/// Restores the GEMM thread count and the native int8 and AMX switches at the end of a scope.
struct settings_scope {
  std::size_t threads = kernels::num_threads();
  ~settings_scope() {
    kernels::set_num_threads(threads);
    kernels::detail::set_native_int8_enabled(true);
    kernels::detail::set_amx_int8_enabled(true);
  }
};

bool at_least(const std::string& target, const char* floor) {
  static const std::vector<std::string> order{"AVX3_DL", "AVX3", "AVX2", "SSE4", "SSSE3"};
  const auto t = std::find(order.begin(), order.end(), target);
  const auto f = std::find(order.begin(), order.end(), floor);
  return t != order.end() && t <= f;
}

/// The kernel an int8 GEMM must run on `target` with the native kernels enabled (and AMX, or not).
int8_gemm_kernel expected_kernel(const std::string& target, bool amx = true) {
  if (at_least(target, "AVX3") && amx && kernels::detail::amx_int8_supported()) return int8_gemm_kernel::amx_int8;
  if (at_least(target, "AVX3") && kernels::detail::avx512_vnni_supported()) return int8_gemm_kernel::avx512_vnni;
  if (at_least(target, "AVX2") && kernels::detail::avx_vnni_supported()) return int8_gemm_kernel::avx_vnni;
  return int8_gemm_kernel::highway;
}

/// f(target, kernel) for every supported target and every int8 GEMM kernel it can run here: AMX
/// (if the CPU has it), its other native kernel (if any), then its Highway kernel.
template <class F>
void for_each_int8_kernel(F&& f) {
  settings_scope restore;
  for_each_target([&](const std::string& target) {
    std::set<int8_gemm_kernel> run;
    for (const auto& [native, amx] : {std::pair{true, true}, std::pair{true, false}, std::pair{false, false}}) {
      kernels::detail::set_native_int8_enabled(native);
      kernels::detail::set_amx_int8_enabled(amx);
      const int8_gemm_kernel kernel = kernels::detail::gemm_int8_kernel();
      REQUIRE(kernel == (native ? expected_kernel(target, amx) : int8_gemm_kernel::highway));
      if (!run.insert(kernel).second) continue;  // the same kernel as an earlier setting
      INFO("int8 GEMM kernel ", kernels::detail::int8_gemm_kernel_name(kernel));
      f(target, kernel);
    }
    kernels::detail::set_native_int8_enabled(true);
    kernels::detail::set_amx_int8_enabled(true);
  });
}

// ---------------------------------------------------------------------------------------------
// int8 GEMM

struct shape {
  std::size_t m, n, k;
};

/// op(A) (m x k) and op(B) (k x n) stored for one transposition, with leading dimensions
/// padded by random bytes that must not reach C; C padded by a sentinel that must stay.
struct int8_problem {
  shape sh;
  bool trans_a, trans_b;
  std::size_t lda, ldb, ldc;
  std::vector<std::int8_t> a, b;
  std::vector<std::int32_t> c;
  static constexpr std::int32_t sentinel = 0x5A5A5A5A;

  int8_problem(shape s, bool ta, bool tb, const std::vector<std::int8_t>& op_a, const std::vector<std::int8_t>& op_b)
      : sh(s), trans_a(ta), trans_b(tb) {
    lda = (ta ? s.m : s.k) + 3;
    ldb = (tb ? s.k : s.n) + 1;
    ldc = s.n + 2;
    a.resize((ta ? s.k : s.m) * lda);
    b.resize((tb ? s.n : s.k) * ldb);
    const auto scramble = [](std::size_t i) { return static_cast<std::int8_t>((i * 2654435761u) >> 13); };
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = scramble(i);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = scramble(i + 1);
    for (std::size_t i = 0; i < s.m; ++i)
      for (std::size_t p = 0; p < s.k; ++p) (ta ? a[p * lda + i] : a[i * lda + p]) = op_a[i * s.k + p];
    for (std::size_t p = 0; p < s.k; ++p)
      for (std::size_t j = 0; j < s.n; ++j) (tb ? b[j * ldb + p] : b[p * ldb + j]) = op_b[p * s.n + j];
    c.assign(s.m * ldc, sentinel);
  }

  void run() {
    kernels::gemm(trans_a ? transpose::yes : transpose::no, trans_b ? transpose::yes : transpose::no, sh.m, sh.n, sh.k,
                  a.data(), lda, b.data(), ldb, c.data(), ldc);
  }
};

/// op(A) op(B) in int64 (op(A) m x k and op(B) k x n, row-major, contiguous).
std::vector<std::int64_t> reference_gemm(shape s, const std::vector<std::int8_t>& a,
                                         const std::vector<std::int8_t>& b) {
  std::vector<std::int64_t> c(s.m * s.n, 0);
  for (std::size_t i = 0; i < s.m; ++i)
    for (std::size_t p = 0; p < s.k; ++p) {
      const std::int64_t x = a[i * s.k + p];
      for (std::size_t j = 0; j < s.n; ++j) c[i * s.n + j] += x * b[p * s.n + j];
    }
  return c;
}

/// C equals the reference (which fits in int32) and C's padding still holds the sentinel.
void check_result(const int8_problem& p, const std::vector<std::int64_t>& expected) {
  for (std::size_t i = 0; i < p.sh.m; ++i) {
    for (std::size_t j = 0; j < p.c.size() / p.sh.m; ++j) {
      const std::int64_t got = p.c[i * p.ldc + j];
      if (j >= p.sh.n) {
        if (got != int8_problem::sentinel) FAIL_CHECK("C's padding (" << i << ", " << j << ") was written");
        continue;
      }
      const std::int64_t want = expected[i * p.sh.n + j];
      REQUIRE_MESSAGE(want == static_cast<std::int32_t>(want), "the reference overflows int32");
      if (got != want) {
        FAIL_CHECK("C(" << i << ", " << j << ") = " << got << ", expected " << want);
        return;
      }
    }
  }
}

std::string describe(shape s, bool ta, bool tb) {
  return std::to_string(s.m) + " x " + std::to_string(s.n) + " x " + std::to_string(s.k) + (ta ? ", A^T" : "") +
         (tb ? ", B^T" : "");
}

/// Random op(A), op(B) for each shape, multiplied in all four transpositions by the current
/// kernel and compared with the int64 reference.
struct gemm_case {
  shape sh;
  std::vector<std::int8_t> a, b;
  std::vector<std::int64_t> expected;
};

std::vector<gemm_case> random_cases(const std::vector<shape>& shapes, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(-128, 127);
  std::vector<gemm_case> cases;
  for (const shape& s : shapes) {
    gemm_case c{s, std::vector<std::int8_t>(s.m * s.k), std::vector<std::int8_t>(s.k * s.n), {}};
    for (auto& x : c.a) x = static_cast<std::int8_t>(byte(rng));
    for (auto& x : c.b) x = static_cast<std::int8_t>(byte(rng));
    c.expected = reference_gemm(s, c.a, c.b);
    cases.push_back(std::move(c));
  }
  return cases;
}

void check_cases(const std::vector<gemm_case>& cases) {
  for (const gemm_case& c : cases) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = (t & 1) != 0, tb = (t & 2) != 0;
      INFO(describe(c.sh, ta, tb));
      int8_problem p(c.sh, ta, tb, c.a, c.b);
      p.run();
      check_result(p, c.expected);
    }
  }
}

std::set<std::string> kernels_run;

TEST_CASE("int8 gemm is exact: ragged shapes around every tile, all transpositions, every target and kernel") {
  std::vector<shape> shapes;
  // Tiles: 4, 6 (AVX-VNNI), 8 (Highway on AVX3), 12 (AVX-512 VNNI) and 32 (AMX) rows; 2 vectors of
  // 2, 8, 16 or 32 columns (Highway on SCALAR, SSE4, AVX2, AVX3), 16 (AVX-VNNI) or 32 (AVX-512
  // VNNI, AMX); AMX takes the depth 64 at a time.
  for (std::size_t m : {1, 3, 4, 5, 7, 8, 9, 12, 13, 25, 32, 33, 70})
    for (std::size_t n : {1, 2, 7, 9, 16, 17, 32, 33, 70})
      for (std::size_t k : {1, 2, 3, 4, 5, 9, 31, 64, 65, 70}) shapes.push_back({m, n, k});
  const auto cases = random_cases(shapes, 1);
  for_each_int8_kernel([&](const std::string& target, int8_gemm_kernel kernel) {
    kernels_run.insert(target + ":" + kernels::detail::int8_gemm_kernel_name(kernel));
    check_cases(cases);
  });
}

TEST_CASE("int8 gemm is exact across cache blocks (kc 512, 1024 for AMX, mc 192, nc 1024) on one or two threads") {
  settings_scope restore;
  // Each crosses blocks in one or two dimensions (257 = one tile row past 256, 1031 > 2 kc).
  const auto cases = random_cases({{257, 37, 1031}, {13, 2053, 515}, {385, 70, 70}, {40, 1031, 257}}, 3);
  for (std::size_t threads : {1, 2}) {
    INFO(threads, " threads");
    kernels::set_num_threads(threads);
    for_each_int8_kernel([&](const std::string&, int8_gemm_kernel) { check_cases(cases); });
  }
}

TEST_CASE("int8 gemm at the extremes of the int8 range, up to the largest depth") {
  // k = 131071: k (-128)^2 = 2^31 - 2^14 is the largest sum, k (-128) 127 the smallest.
  const std::size_t k = kernels::detail::gemm_int8_max_depth;
  REQUIRE(k == 131071);
  const shape s{4, 35, k};
  std::vector<std::int8_t> a(s.m * k), b(k * s.n);
  for (std::size_t p = 0; p < k; ++p) {
    a[0 * k + p] = -128;
    a[1 * k + p] = 127;
    a[2 * k + p] = static_cast<std::int8_t>(p % 2 == 0 ? -128 : 127);
    a[3 * k + p] = static_cast<std::int8_t>(static_cast<int>(p % 256) - 128);
    for (std::size_t j = 0; j < s.n; ++j) {
      const int pattern[] = {-128, 127, p % 3 == 0 ? -128 : 127, static_cast<int>((p * 7 + j) % 256) - 128};
      b[p * s.n + j] = static_cast<std::int8_t>(pattern[j % 4]);
    }
  }
  const auto expected = reference_gemm(s, a, b);
  CHECK(expected[0 * s.n + 0] == std::int64_t{131071} * 16384);  // 2^31 - 2^14
  CHECK(expected[1 * s.n + 1] == std::int64_t{131071} * 16129);
  CHECK(expected[0 * s.n + 1] == std::int64_t{131071} * -16256);
  for_each_int8_kernel([&](const std::string&, int8_gemm_kernel) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = (t & 1) != 0, tb = (t & 2) != 0;
      INFO(describe(s, ta, tb));
      int8_problem p(s, ta, tb, a, b);
      p.run();
      check_result(p, expected);
    }
  });
}

TEST_CASE("int8 gemm: k == 0 zeroes C, empty shapes write nothing, bad arguments throw before writing") {
  std::vector<std::int8_t> a(64, 1), b(64, 1);
  std::vector<std::int32_t> c(64, 7);
  kernels::gemm(transpose::no, transpose::no, 3, 4, 0, a.data(), 1, b.data(), 4, c.data(), 5);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 5; ++j) CHECK(c[i * 5 + j] == (j < 4 ? 0 : 7));
  std::fill(c.begin(), c.end(), 7);
  kernels::gemm(transpose::no, transpose::no, 0, 4, 3, a.data(), 3, b.data(), 4, c.data(), 4);
  kernels::gemm(transpose::no, transpose::no, 4, 0, 3, a.data(), 3, b.data(), 1, c.data(), 1);
  CHECK(std::all_of(c.begin(), c.end(), [](std::int32_t x) { return x == 7; }));

  const auto message_of = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(no exception)";
  };
  // k beyond the limit: named with the limit, before anything is read or written.
  const std::string too_deep = message_of([&] {
    kernels::gemm(transpose::no, transpose::no, 1, 1, 131072, nullptr, 131072, nullptr, 1, c.data(), 1);
  });
  CHECK(too_deep.find("k = 131072") != std::string::npos);
  CHECK(too_deep.find("131071") != std::string::npos);
  CHECK(c[0] == 7);
  // Leading dimensions, as the float gemm reports them.
  const auto ld_error = [&](transpose ta, transpose tb, std::size_t lda, std::size_t ldb, std::size_t ldc) {
    return message_of([&] { kernels::gemm(ta, tb, 2, 3, 4, a.data(), lda, b.data(), ldb, c.data(), ldc); });
  };
  CHECK(ld_error(transpose::no, transpose::no, 3, 3, 3).find("lda = 3 is too small") != std::string::npos);
  CHECK(ld_error(transpose::yes, transpose::no, 1, 3, 3)
            .find("lda = 1 is too small: A is stored transposed, k x m = 4 x 2") != std::string::npos);
  CHECK(ld_error(transpose::no, transpose::yes, 4, 3, 3).find("ldb = 3 is too small") != std::string::npos);
  CHECK(ld_error(transpose::no, transpose::no, 4, 3, 2).find("ldc = 2 is too small") != std::string::npos);
  CHECK(c[0] == 7);
  // Span extents.
  const std::span<const std::int8_t> a_span(a), b_span(b);
  const std::span<std::int32_t> c_span(c);
  // C over A's (or B's) bytes is refused, as in the float gemm.
  const std::span<std::int32_t> c_over_a(reinterpret_cast<std::int32_t*>(a.data()), 4);
  CHECK(message_of([&] { kernels::gemm(transpose::no, transpose::no, 1, 4, 4, a_span, 4, b_span, 4, c_over_a, 4); }) ==
        "gemm: A and C overlap; they must lie apart.");
  const std::span<std::int32_t> c_over_b(reinterpret_cast<std::int32_t*>(b.data()), 4);
  CHECK(message_of([&] { kernels::gemm(transpose::no, transpose::no, 1, 4, 4, a_span, 4, b_span, 4, c_over_b, 4); }) ==
        "gemm: B and C overlap; they must lie apart.");
  CHECK(std::all_of(a.begin(), a.end(), [](std::int8_t x) { return x == 1; }));
  CHECK(message_of([&] { kernels::gemm(transpose::no, transpose::no, 8, 8, 9, a_span, 9, b_span, 8, c_span, 8); })
            .find("gemm: A has 64 elements but needs 72") != std::string::npos);
  CHECK(message_of([&] { kernels::gemm(transpose::no, transpose::no, 2, 8, 9, a_span, 9, b_span, 8, c_span, 8); })
            .find("gemm: B has 64 elements but needs 72") != std::string::npos);
  CHECK(message_of([&] {
          kernels::gemm(transpose::no, transpose::no, 2, 8, 4, a_span, 4, b_span, 8, c_span.first(15), 8);
        }).find("gemm: C has 15 elements but needs 16") != std::string::npos);
  // A leading dimension whose extent overflows std::size_t: (8 - 1) * ldb + 8 wraps to 13.
  CHECK(message_of([&] {
          kernels::gemm(transpose::no, transpose::no, 2, 8, 8, a_span, 8, b_span, 2635249153387078803, c_span, 8);
        }).find("gemm: ldb = 2635249153387078803 is too large: B (8 rows") != std::string::npos);
  CHECK(c[0] == 7);
  kernels::gemm(transpose::no, transpose::no, 2, 8, 4, a_span, 4, b_span, 8, c_span.first(16), 8);
  CHECK(c[0] == 4);
}

// ---------------------------------------------------------------------------------------------
// quantize_rows

template <class T>
double widen(T x) {
  if constexpr (std::is_same_v<T, double>) return x;
  else return static_cast<double>(static_cast<float>(x));
}

/// Keras' abs_max_quantize as specified, written in double.
template <class T>
void reference_quantize(const std::vector<T>& x, std::size_t rows, std::size_t cols, std::vector<std::int8_t>& q,
                        std::vector<float>& scales) {
  q.assign(rows * cols, 0);
  scales.assign(rows, 0.0f);
  for (std::size_t r = 0; r < rows; ++r) {
    double amax = 0.0;
    bool nan = false;
    for (std::size_t j = 0; j < cols; ++j) {
      const double v = widen(x[r * cols + j]);
      nan = nan || std::isnan(v);
      amax = std::max(amax, std::fabs(v));
    }
    float scale;
    if (nan) {
      scale = nan_f;
    } else if constexpr (std::is_same_v<T, double>) {
      scale = static_cast<float>(127.0 / (amax + 1e-7));
    } else {  // float sums and quotient: each rounding of the exact double result
      const double sum = static_cast<float>(amax + static_cast<double>(1e-7f));
      scale = static_cast<float>(127.0 / sum);
    }
    scales[r] = scale;
    for (std::size_t j = 0; j < cols; ++j) {
      double product = widen(x[r * cols + j]) * static_cast<double>(scale);  // exact for float operands
      if constexpr (!std::is_same_v<T, double>) product = static_cast<float>(product);
      if (std::isnan(product)) continue;
      q[r * cols + j] = static_cast<std::int8_t>(std::nearbyint(std::clamp(product, -127.0, 127.0)));
    }
  }
}

template <class T>
std::string dtype() {
  if constexpr (std::is_same_v<T, float>) return "float32";
  else if constexpr (std::is_same_v<T, double>) return "float64";
  else return "bfloat16";
}

/// The kernel's q and scales equal the reference's, bit for bit, on every target.
template <class T>
void check_quantize(const std::vector<T>& x, std::size_t rows, std::size_t cols) {
  INFO(dtype<T>(), ", ", rows, " rows of ", cols);
  std::vector<std::int8_t> expected_q;
  std::vector<float> expected_scales;
  reference_quantize(x, rows, cols, expected_q, expected_scales);
  for_each_target([&](const std::string&) {
    std::vector<std::int8_t> q(rows * cols, 99);
    std::vector<float> scales(rows, -1.0f);
    kernels::quantize_rows<T>(x, rows, cols, q, scales);
    for (std::size_t r = 0; r < rows; ++r) {
      INFO("row ", r);
      REQUIRE(std::bit_cast<std::uint32_t>(scales[r]) == std::bit_cast<std::uint32_t>(expected_scales[r]));
      for (std::size_t j = 0; j < cols; ++j) {
        INFO("column ", j, ": x = ", widen(x[r * cols + j]));
        REQUIRE(int{q[r * cols + j]} == int{expected_q[r * cols + j]});
      }
    }
  });
}

/// The values rounded to T (through float unless T is double).
template <class T>
std::vector<T> values(std::initializer_list<double> list) {
  using Wide = std::conditional_t<std::is_same_v<T, double>, double, float>;
  std::vector<T> out;
  for (double v : list) out.push_back(static_cast<T>(static_cast<Wide>(v)));
  return out;
}

TEST_CASE_TEMPLATE("quantize_rows: Keras' examples, exact ties, zero, NaN and infinite rows", T, float, bfloat16,
                   double) {
  // A kernel column [0.25, -2.0] and [1.0, 0.5], as rows: 0.5 * 127 / 1.0000001 = 63.49999 -> 63.
  const auto keras = values<T>({0.25, -2.0, 1.0, 0.5});
  std::vector<std::int8_t> q(4);
  std::vector<float> scales(2);
  kernels::quantize_rows<T>(keras, 2, 2, q, scales);
  if constexpr (std::is_same_v<T, double>) {
    CHECK(scales[0] == static_cast<float>(127.0 / 2.0000001));
    CHECK(scales[1] == static_cast<float>(127.0 / 1.0000001));
  } else {
    CHECK(scales[0] == 127.0f / (2.0f + 1e-7f));  // 2 + 1e-7 rounds to 2 in float: 63.5
    CHECK(scales[1] == 127.0f / (1.0f + 1e-7f));
  }
  CHECK(std::vector<int>(q.begin(), q.end()) == std::vector<int>{16, -127, 127, 63});
  check_quantize(keras, 2, 2);

  // Ties round to even: a row holding 127 has scale exactly 1 (127 + 1e-7 rounds to 127), one
  // holding 254 scale 0.5.
  const auto ties = values<T>({127, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, -126.5, 3.5,
                               254, 1, 3, 5, 7, -3, -5, 253, -253, 0});
  std::vector<std::int8_t> tq(20);
  std::vector<float> ts(2);
  kernels::quantize_rows<T>(ties, 2, 10, tq, ts);
  CHECK(ts[0] == 1.0f);
  CHECK(ts[1] == 0.5f);
  CHECK(std::vector<int>(tq.begin(), tq.end()) ==
        std::vector<int>{127, 0, 2, 2, 0, -2, -2, 126, -126, 4, 127, 0, 2, 2, 4, -2, -2, 126, -126, 0});
  check_quantize(ties, 2, 10);

  // A zero row: scale 127 / 1e-7, all zeros. NaN anywhere: scale NaN, all zeros. An infinity:
  // scale 0, all zeros (inf * 0 is NaN, which gives 0). Negative zero and subnormals.
  const auto special = values<T>({0, -0.0, 0, 0, 0,                       //
                                  1, nan_f, 2, -inf_f, 3,                 //
                                  -1, 0.5, inf_f, 2, -7,                  //
                                  -inf_f, inf_f, -inf_f, 1e-30, -1e-38,   //
                                  1e-39, -2e-39, 1e-45, 0, -0.0,          //
                                  -100, 100, 99.99, -0.4, 1e-6});
  std::vector<std::int8_t> sq(30);
  std::vector<float> ss(6);
  kernels::quantize_rows<T>(special, 6, 5, sq, ss);
  CHECK(ss[0] == static_cast<float>(std::is_same_v<T, double> ? 127.0 / 1e-7 : 127.0f / 1e-7f));
  CHECK(std::bit_cast<std::uint32_t>(ss[1]) == 0x7FC00000u);
  CHECK(ss[2] == 0.0f);
  CHECK(ss[3] == 0.0f);
  for (std::size_t i = 0; i < 20; ++i) CHECK(int{sq[i]} == 0);
  check_quantize(special, 6, 5);

  // Sizes and overlaps.
  std::vector<std::int8_t> q6(6);
  std::vector<float> s2(2), s3(3);
  const auto x6 = values<T>({1, 2, 3, 4, 5, 6});
  CHECK_THROWS_WITH_AS(kernels::quantize_rows<T>(x6, 2, 4, q6, s2),
                       "quantize_rows: x has 6 elements but must have rows x cols = 8.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::quantize_rows<T>(x6, 2, 3, std::span<std::int8_t>(q6).first(5), s2),
                       "quantize_rows: q has 5 elements but must have rows x cols = 6.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::quantize_rows<T>(x6, 2, 3, q6, s3),
                       "quantize_rows: scales has 3 elements but must have rows = 2.", std::invalid_argument);
  kernels::quantize_rows<T>(x6, 3, 2, q6, s3);
  if constexpr (!std::is_same_v<T, double>) {  // 63.5 -> 64; in double the scale is 127 / 2.0000001 -> 63
    CHECK(std::vector<int>(q6.begin(), q6.end()) == std::vector<int>{64, 127, 95, 127, 106, 127});
  }
  check_quantize(x6, 3, 2);
}

TEST_CASE_TEMPLATE("quantize_rows on random rows of every length equals the double reference", T, float, bfloat16,
                   double) {
  std::mt19937 rng(6);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> exponent(-20.0, 20.0);
  for (std::size_t cols : {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 65, 1000}) {
    const std::size_t rows = 5;
    std::vector<T> x(rows * cols);
    for (std::size_t r = 0; r < rows; ++r) {
      const double row_scale = std::exp2(std::round(exponent(rng)));  // rows of very different magnitudes
      for (std::size_t j = 0; j < cols; ++j) x[r * cols + j] = static_cast<T>(normal(rng) * row_scale);
    }
    check_quantize(x, rows, cols);
  }
}

// ---------------------------------------------------------------------------------------------
// dequantize_rows

/// The specified roundings, computed in double: float(acc) exactly as float rounds it, the
/// scales' product, the quotient and the sum each rounded to float (double rounding of a
/// correctly rounded double result is innocuous for +, *, /), then one rounding to T.
template <class T>
T reference_dequantize(std::int32_t acc, float row_scale, float col_scale, const T* bias) {
  if constexpr (std::is_same_v<T, double>) {
    double v = static_cast<double>(acc) / (static_cast<double>(row_scale) * static_cast<double>(col_scale));
    if (bias != nullptr) v = v + *bias;
    return std::isnan(v) ? std::numeric_limits<double>::quiet_NaN() : v;
  } else {
    const double product = static_cast<float>(static_cast<double>(row_scale) * static_cast<double>(col_scale));
    double v = static_cast<float>(static_cast<double>(static_cast<float>(acc)) / product);
    if (bias != nullptr) v = static_cast<float>(v + static_cast<double>(static_cast<float>(*bias)));
    if (std::isnan(v)) return T(nan_f);
    return T(static_cast<float>(v));
  }
}

template <class T>
std::uint64_t bits_of(T x) {
  if constexpr (std::is_same_v<T, float>) return std::bit_cast<std::uint32_t>(x);
  else if constexpr (std::is_same_v<T, double>) return std::bit_cast<std::uint64_t>(x);
  else return x.to_bits();
}

TEST_CASE_TEMPLATE("dequantize_rows equals the specified roundings bit for bit, with and without bias", T, float,
                   bfloat16, double) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::int32_t> any_int(std::numeric_limits<std::int32_t>::min(),
                                                      std::numeric_limits<std::int32_t>::max());
  std::uniform_int_distribution<std::int32_t> small_int(-300000, 300000);
  std::uniform_real_distribution<float> scale(0.5f, 2000.0f);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  for (std::size_t cols : {1, 3, 8, 15, 16, 17, 33, 100}) {
    const std::size_t rows = 7;
    std::vector<std::int32_t> acc(rows * cols);
    for (std::size_t i = 0; i < acc.size(); ++i) acc[i] = i % 3 == 0 ? any_int(rng) : small_int(rng);
    acc[0] = std::numeric_limits<std::int32_t>::min();
    if (acc.size() > 1) acc[1] = std::numeric_limits<std::int32_t>::max();
    if (acc.size() > 2) acc[2] = 0;
    std::vector<float> row_scales(rows), col_scales(cols);
    for (auto& s : row_scales) s = scale(rng);
    for (auto& s : col_scales) s = scale(rng);
    // Special scales: NaN (a NaN row of quantize_rows), 0 (an infinite row), a negative one, and
    // products that overflow or underflow float.
    row_scales[1] = nan_f;
    row_scales[2] = 0.0f;
    row_scales[3] = -3.0f;
    row_scales[4] = 3e30f;
    row_scales[5] = 1e-30f;
    col_scales[0] = col_scales.size() > 1 ? 1e-20f : col_scales[0];
    if (cols > 1) col_scales[1] = 4e20f;
    std::vector<T> bias(cols);
    for (auto& b : bias) b = static_cast<T>(normal(rng));
    for (bool with_bias : {true, false}) {
      INFO(dtype<T>(), ", ", rows, " rows of ", cols, with_bias ? ", bias" : ", no bias");
      const std::span<const T> bias_span = with_bias ? std::span<const T>(bias) : std::span<const T>();
      std::vector<T> expected(rows * cols);
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c)
          expected[r * cols + c] = reference_dequantize<T>(acc[r * cols + c], row_scales[r], col_scales[c],
                                                           with_bias ? &bias[c] : nullptr);
      for_each_target([&](const std::string&) {
        std::vector<T> out(rows * cols, T(1234.5f));
        kernels::dequantize_rows<T>(acc, rows, cols, row_scales, col_scales, bias_span, out);
        for (std::size_t i = 0; i < out.size(); ++i) {
          INFO("element ", i, ": acc ", acc[i], ", scales ", row_scales[i / cols], " ", col_scales[i % cols]);
          REQUIRE(bits_of(out[i]) == bits_of(expected[i]));
        }
      });
    }
  }
  // Without bias -0 stays -0; with a +0 bias it becomes +0.
  const std::vector<std::int32_t> zero{0};
  const std::vector<float> negative{-2.0f}, one{1.0f};
  const std::vector<T> plus_zero{T(0.0f)};
  std::vector<T> out(1);
  kernels::dequantize_rows<T>(zero, 1, 1, negative, one, {}, out);
  CHECK(bits_of(out[0]) == bits_of(static_cast<T>(-0.0f)));
  kernels::dequantize_rows<T>(zero, 1, 1, negative, one, plus_zero, out);
  CHECK(bits_of(out[0]) == bits_of(static_cast<T>(0.0f)));
  // Sizes.
  const std::vector<std::int32_t> acc6(6, 1);
  const std::vector<float> s2(2, 1.0f), s3(3, 1.0f);
  const std::vector<T> b3(3, T(0.0f)), b2(2, T(0.0f));
  std::vector<T> out6(6), out5(5);
  CHECK_THROWS_WITH_AS(kernels::dequantize_rows<T>(acc6, 2, 3, s2, s3, b3, out5),
                       "dequantize_rows: out has 5 elements but must have rows x cols = 6.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::dequantize_rows<T>(acc6, 3, 2, s2, s2, b2, out6),
                       "dequantize_rows: row_scales has 2 elements but must have rows = 3.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::dequantize_rows<T>(acc6, 2, 3, s2, s2, b3, out6),
                       "dequantize_rows: col_scales has 2 elements but must have cols = 3.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::dequantize_rows<T>(acc6, 2, 3, s2, s3, b2, out6),
                       "dequantize_rows: bias has 2 elements but must have cols (or none) = 3.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::dequantize_rows<T>(acc6, 3, 3, s3, s3, b3, out6),
                       "dequantize_rows: acc has 6 elements but must have rows x cols = 9.", std::invalid_argument);
}

TEST_CASE("quantize_rows and dequantize_rows split across threads give the same bits") {
  settings_scope restore;
  const std::size_t rows = 300, cols = 1000;  // above the parallel threshold
  REQUIRE(rows * cols >= kernels::detail::int8_rows_parallel_elements);
  std::mt19937 rng(8);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(rows * cols), col_scales(cols), bias(cols);
  for (auto& v : x) v = normal(rng);
  for (auto& v : col_scales) v = 100.0f + normal(rng);
  for (auto& v : bias) v = normal(rng);
  std::vector<std::int32_t> acc(rows * cols);
  for (std::size_t i = 0; i < acc.size(); ++i) acc[i] = static_cast<std::int32_t>(normal(rng) * 1e6f);
  std::vector<std::int8_t> q1(rows * cols), q2(rows * cols);
  std::vector<float> s1(rows), s2(rows), y1(rows * cols), y2(rows * cols);
  kernels::set_num_threads(1);
  kernels::quantize_rows<float>(x, rows, cols, q1, s1);
  kernels::dequantize_rows<float>(acc, rows, cols, s1, col_scales, bias, y1);
  kernels::set_num_threads(2);
  kernels::quantize_rows<float>(x, rows, cols, q2, s2);
  kernels::dequantize_rows<float>(acc, rows, cols, s2, col_scales, bias, y2);
  CHECK(q1 == q2);
  CHECK(std::memcmp(s1.data(), s2.data(), rows * sizeof(float)) == 0);
  CHECK(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)) == 0);
  check_quantize(x, rows, cols);
}

TEST_CASE("int8 kernels run on this machine") {
  // The native kernels run exactly where the CPU has them and the target has their width.
  settings_scope restore;
  for_each_target([&](const std::string& target) {
    CHECK(kernels::detail::gemm_int8_kernel() == expected_kernel(target));
    kernels::detail::set_amx_int8_enabled(false);
    CHECK(kernels::detail::gemm_int8_kernel() == expected_kernel(target, false));
    kernels::detail::set_amx_int8_enabled(true);
    kernels::detail::set_native_int8_enabled(false);
    CHECK(kernels::detail::gemm_int8_kernel() == int8_gemm_kernel::highway);
    kernels::detail::set_native_int8_enabled(true);
  });
  CHECK(kernels::detail::native_int8_supported() ==
        (kernels::detail::amx_int8_supported() || kernels::detail::avx512_vnni_supported() ||
         kernels::detail::avx_vnni_supported()));
  std::string run;
  for (const auto& name : kernels_run) run += (run.empty() ? "" : " ") + name;
  std::printf("mixprec int8 GEMM kernels run (target:kernel): %s; AMX-INT8 %s, AVX-512 VNNI %s, AVX-VNNI %s\n",
              run.c_str(), kernels::detail::amx_int8_supported() ? "yes" : "no",
              kernels::detail::avx512_vnni_supported() ? "yes" : "no",
              kernels::detail::avx_vnni_supported() ? "yes" : "no");
}


/// Keras' quantize_and_dequantize written out on scalars with the codec (core/, tested
/// exhaustively against frexp): x / scale in float, clipped to F's range, rounded to F, widened,
/// times scale in float, rounded once to T.
template <class F, class T>
T reference_qdq(T x, float scale) {
  const float limit = std::is_same_v<F, float8_e4m3fn> ? 448.0f : 57344.0f;
  const float scaled = cast<float>(x) / scale;
  if (std::isnan(scaled)) return cast<T>(scaled);
  return cast<T>(cast<float>(cast<F>(std::clamp(scaled, -limit, limit))) * scale);
}

template <class F, class T>
void check_quantize_dequantize() {
  std::mt19937 rng(7);
  std::vector<T> x;
  for (double v : {0.0, -0.0, 1.0, -1.0, 0.5, 448.0, 449.0, 464.0, 1e6, -1e6, 57344.0, 61440.0, 1e-3, 2e-3, 1.0 / 512,
                   1.0 / 1024, 3.0 / 1024, 1e-9, 6.103515625e-05})
    x.push_back(cast<T>(v));
  x.push_back(cast<T>(std::numeric_limits<float>::infinity()));
  x.push_back(cast<T>(-std::numeric_limits<float>::infinity()));
  std::uniform_real_distribution<float> exponent(-20.0f, 20.0f);
  std::bernoulli_distribution negative(0.5);
  for (int i = 0; i < 1000; ++i) x.push_back(cast<T>((negative(rng) ? -1.0f : 1.0f) * std::exp2(exponent(rng))));
  for (float scale : {1.0f, 0.37f, 1.0f / 1024.0f, 1000.0f}) {
    for (std::size_t n : {x.size(), std::size_t{1}, std::size_t{7}, std::size_t{33}}) {
      INFO("scale ", scale, ", n ", n);
      const std::span<const T> in(x.data(), n);
      double expected_amax = 0.0;
      for (T v : in) expected_amax = std::max(expected_amax, std::abs(static_cast<double>(cast<float>(v))));
      for_each_target([&](const std::string& target) {
        INFO(target);
        std::vector<T> y(n);
        const float amax = kernels::quantize_dequantize<F, T>(in, scale, y);
        CHECK(static_cast<double>(amax) == expected_amax);
        for (std::size_t i = 0; i < n; ++i) {
          INFO("x = ", static_cast<double>(cast<float>(in[i])));
          REQUIRE(cast<float>(y[i]) == cast<float>(reference_qdq<F>(in[i], scale)));
        }
        // In place gives the same.
        std::vector<T> inplace(in.begin(), in.end());
        kernels::quantize_dequantize<F, T>(inplace, scale, std::span<T>(inplace));
        for (std::size_t i = 0; i < n; ++i) REQUIRE(std::memcmp(&inplace[i], &y[i], sizeof(T)) == 0);
      });
    }
  }
  // A NaN stays NaN and makes the max NaN.
  std::vector<T> with_nan{cast<T>(1.0f), cast<T>(std::numeric_limits<float>::quiet_NaN())};
  std::vector<T> out(2);
  CHECK(std::isnan(kernels::quantize_dequantize<F, T>(with_nan, 1.0f, out)));
  CHECK(std::isnan(static_cast<double>(cast<float>(out[1]))));
  if constexpr (std::is_same_v<T, double>) {  // canonical, whatever the input's sign and payload (as the float kernels')
    const std::vector<double> payload{-std::nan("7")};
    std::vector<double> canonical(1);
    kernels::quantize_dequantize<F, T>(payload, 1.0f, canonical);
    CHECK(std::bit_cast<std::uint64_t>(canonical[0]) == 0x7ff8000000000000u);
  }
  const auto short_output = [&] { kernels::quantize_dequantize<F, T>(with_nan, 1.0f, std::span<T>(out).first(1)); };
  CHECK_THROWS_AS(short_output(), std::invalid_argument);
}

TEST_CASE_TEMPLATE("float8 quantize_dequantize equals the scalar codec on every target (e4m3fn)", T, float, bfloat16,
                   float16, double) {
  check_quantize_dequantize<float8_e4m3fn, T>();
}
TEST_CASE_TEMPLATE("float8 quantize_dequantize equals the scalar codec on every target (e5m2)", T, float, bfloat16,
                   float16, double) {
  check_quantize_dequantize<float8_e5m2, T>();
}

}  // namespace

TEST_CASE("the quantization kernels deduce the dtype from containers") {
  const std::vector<float> x{1.0f, -0.5f};
  std::vector<std::int8_t> q(2), q_named(2);
  std::vector<float> scales(1), scales_named(1);
  kernels::quantize_rows(x, 1, 2, q, scales);
  kernels::quantize_rows<float>(x, 1, 2, q_named, scales_named);
  CHECK(q == q_named);
  CHECK(scales == scales_named);
  std::vector<bfloat16> out(2);
  kernels::dequantize_rows(std::vector<std::int32_t>{254, -127}, 1, 2, std::vector<float>{127.0f},
                           std::vector<float>{1.0f, 1.0f}, {}, out);
  CHECK(static_cast<float>(out[0]) == 2.0f);
  CHECK(static_cast<float>(out[1]) == -1.0f);
  std::vector<float> y(2);
  CHECK(kernels::quantize_dequantize<float8_e4m3fn>(x, 1.0f, y) == 1.0f);
  CHECK(y == x);
}
