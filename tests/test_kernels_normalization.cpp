// Batch normalization kernels (kernels/normalization.hpp) on every target this CPU runs: the same
// bits as the arithmetic written out here, column counts around every vector width and the
// scalar tails, NaN and infinity, in place, the float64 path, and every size error.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <mixprec/kernels/normalization.hpp>

#include "kernel_targets.hpp"

using namespace mixprec;
using mixprec::test::for_each_target;

namespace {

constexpr float nan_f = std::numeric_limits<float>::quiet_NaN();

std::uint32_t bits(float v) { return std::bit_cast<std::uint32_t>(v); }
std::uint64_t bits(double v) { return std::bit_cast<std::uint64_t>(v); }
template <class T>
T canonical(T v) {
  return std::isnan(v) ? std::numeric_limits<T>::quiet_NaN() : v;
}

/// Column counts that meet 4-vector blocks, single vectors and scalar tails on every target
/// (4 float lanes on SSE4 up to 16 on AVX3; doubles have half as many).
std::vector<std::size_t> column_counts() {
  std::vector<std::size_t> counts{31, 32, 33, 63, 64, 65, 96, 129};
  for (std::size_t c = 1; c <= 20; ++c) counts.push_back(c);
  return counts;
}

struct matrix_case {
  std::size_t cols, rows;
  std::vector<float> x, dy;
};

/// Values around 3 (so a mean is far from 0, as for activations after ReLU), with a NaN or an
/// infinity now and then in `special` of the columns.
matrix_case make_case(std::mt19937& rng, std::size_t cols, std::size_t rows, bool specials) {
  std::normal_distribution<float> normal(3.0f, 2.0f);
  matrix_case m{cols, rows, std::vector<float>(cols * rows), std::vector<float>(cols * rows)};
  for (auto& v : m.x) v = normal(rng);
  for (auto& v : m.dy) v = normal(rng) - 3.0f;
  if (specials && rows > 0)
    for (std::size_t c = 0; c < cols; c += 7) {
      m.x[(rng() % rows) * cols + c] = c % 14 == 0 ? nan_f : std::numeric_limits<float>::infinity();
      m.dy[(rng() % rows) * cols + (c + 3) % cols] = nan_f;
    }
  return m;
}

std::vector<float> per_channel(std::mt19937& rng, std::size_t cols, float low, float high) {
  std::uniform_real_distribution<float> u(low, high);
  std::vector<float> v(cols);
  for (auto& e : v) e = u(rng);
  return v;
}

}  // namespace

TEST_CASE("batch_norm_moments: double sums in row order, bit for bit on every target") {
  std::mt19937 rng(3);
  for_each_target([&](const std::string&) {
    for (std::size_t cols : column_counts())
      for (std::size_t rows : {1, 2, 7, 40})
        for (bool specials : {false, true}) {
          const matrix_case m = make_case(rng, cols, rows, specials);
          std::vector<double> mean(cols), variance(cols);
          kernels::batch_norm_moments<float>(m.x, cols, mean, variance);
          INFO("cols = ", cols, ", rows = ", rows);
          for (std::size_t c = 0; c < cols; ++c) {
            double sum = 0.0;
            for (std::size_t r = 0; r < rows; ++r) sum += m.x[r * cols + c];
            const double mu = sum / static_cast<double>(rows);
            double squares = 0.0;
            for (std::size_t r = 0; r < rows; ++r) squares += (m.x[r * cols + c] - mu) * (m.x[r * cols + c] - mu);
            REQUIRE(bits(mean[c]) == bits(canonical(mu)));
            REQUIRE(bits(variance[c]) == bits(canonical(squares / static_cast<double>(rows))));
          }
        }
  });
}

TEST_CASE("batch_norm_moments: exact on data whose statistics are exact, and the float64 path agrees") {
  // Columns 0..2 of {1, 2, 3, 4}, {-1, 1, -1, 1}, {5, 5, 5, 5}: means 2.5, 0, 5; variances 1.25, 1, 0.
  const std::vector<float> x{1, -1, 5, 2, 1, 5, 3, -1, 5, 4, 1, 5};
  std::vector<double> mean(3), variance(3);
  for_each_target([&](const std::string&) {
    kernels::batch_norm_moments<float>(x, 3, mean, variance);
    CHECK(mean == std::vector<double>{2.5, 0, 5});
    CHECK(variance == std::vector<double>{1.25, 1, 0});
  });
  const std::vector<double> x64(x.begin(), x.end());
  std::vector<double> mean64(3), variance64(3);
  kernels::batch_norm_moments<double>(x64, 3, mean64, variance64);
  CHECK(mean64 == mean);
  CHECK(variance64 == variance);
}

TEST_CASE("scale_shift_columns: a multiply then an add per element, in place too") {
  std::mt19937 rng(5);
  for_each_target([&](const std::string&) {
    for (std::size_t cols : column_counts())
      for (std::size_t rows : {0, 1, 3, 9}) {
        const matrix_case m = make_case(rng, cols, rows, true);
        const std::vector<float> scale = per_channel(rng, cols, -2.0f, 2.0f), shift = per_channel(rng, cols, -5.0f, 5.0f);
        std::vector<float> y(m.x.size()), in_place = m.x;
        kernels::scale_shift_columns<float>(m.x, scale, shift, y);
        kernels::scale_shift_columns<float>(in_place, scale, shift, in_place);
        INFO("cols = ", cols, ", rows = ", rows);
        for (std::size_t i = 0; i < y.size(); ++i) {
          const float product = m.x[i] * scale[i % cols];
          const float expected = canonical(product + shift[i % cols]);
          REQUIRE(bits(y[i]) == bits(expected));
          REQUIRE(bits(in_place[i]) == bits(expected));
        }
      }
  });
  const std::vector<double> x{1, 2, 3, 4}, scale{2, -1}, shift{0.5, 0.25};
  std::vector<double> y(4);
  kernels::scale_shift_columns<double>(x, scale, shift, y);
  CHECK(y == std::vector<double>{2.5, -1.75, 6.5, -3.75});
}

TEST_CASE("batch_norm_backward_sums and batch_norm_input_gradient, bit for bit on every target") {
  std::mt19937 rng(7);
  for_each_target([&](const std::string&) {
    for (std::size_t cols : column_counts())
      for (std::size_t rows : {1, 4, 17})
        for (bool specials : {false, true}) {
          const matrix_case m = make_case(rng, cols, rows, specials);
          const std::vector<float> mean = per_channel(rng, cols, 2.0f, 4.0f),
                                   inverse = per_channel(rng, cols, 0.2f, 2.0f),
                                   factor = per_channel(rng, cols, -1.5f, 1.5f),
                                   mean_dy = per_channel(rng, cols, -0.5f, 0.5f),
                                   mean_dy_x_hat = per_channel(rng, cols, -0.5f, 0.5f);
          std::vector<double> sum_dy(cols), sum_dy_x_hat(cols);
          kernels::batch_norm_backward_sums<float>(m.x, m.dy, mean, inverse, sum_dy, sum_dy_x_hat);
          std::vector<float> dx(m.x.size()), dx_in_place = m.dy;
          kernels::batch_norm_input_gradient<float>(m.x, m.dy, mean, inverse, factor, mean_dy, mean_dy_x_hat, dx);
          kernels::batch_norm_input_gradient<float>(m.x, dx_in_place, mean, inverse, factor, mean_dy, mean_dy_x_hat,
                                                    dx_in_place);
          INFO("cols = ", cols, ", rows = ", rows);
          for (std::size_t c = 0; c < cols; ++c) {
            double s = 0.0, p = 0.0;
            for (std::size_t r = 0; r < rows; ++r) {
              const float centered = m.x[r * cols + c] - mean[c];
              const float x_hat = centered * inverse[c];
              s += m.dy[r * cols + c];
              p += static_cast<double>(m.dy[r * cols + c]) * x_hat;
            }
            REQUIRE(bits(sum_dy[c]) == bits(canonical(s)));
            REQUIRE(bits(sum_dy_x_hat[c]) == bits(canonical(p)));
          }
          for (std::size_t i = 0; i < dx.size(); ++i) {
            const std::size_t c = i % cols;
            const float centered = m.x[i] - mean[c];
            const float x_hat = centered * inverse[c];
            const float dy_centered = m.dy[i] - mean_dy[c];
            const float correction = x_hat * mean_dy_x_hat[c];
            const float inner = dy_centered - correction;
            const float expected = canonical(factor[c] * inner);
            REQUIRE(bits(dx[i]) == bits(expected));
            REQUIRE(bits(dx_in_place[i]) == bits(expected));
          }
        }
  });
}

TEST_CASE("batch normalization's backward kernels give the gradient of the normalization (float64 finite differences)") {
  // L = sum w * gamma * x_hat with batch statistics: the kernels' dx (factor = gamma / sigma,
  // the column means of dy and dy x_hat) against central differences of L in float64.
  const std::size_t cols = 3, rows = 5;
  std::mt19937 rng(11);
  std::normal_distribution<double> normal(1.0, 2.0);
  std::vector<double> x(cols * rows), w(cols * rows), gamma{0.5, -1.25, 2.0};
  for (auto& v : x) v = normal(rng);
  for (auto& v : w) v = normal(rng);
  const double epsilon = 1e-3;
  const auto loss = [&](const std::vector<double>& input) {
    std::vector<double> mean(cols), variance(cols);
    kernels::batch_norm_moments<double>(input, cols, mean, variance);
    double total = 0.0;
    for (std::size_t i = 0; i < input.size(); ++i) {
      const std::size_t c = i % cols;
      total += w[i] * gamma[c] * (input[i] - mean[c]) / std::sqrt(variance[c] + epsilon);
    }
    return total;
  };
  std::vector<double> mean(cols), variance(cols), inverse(cols), factor(cols), mean_dy(cols), mean_dy_x_hat(cols);
  kernels::batch_norm_moments<double>(x, cols, mean, variance);
  std::vector<double> dy(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) dy[i] = w[i] * gamma[i % cols];  // dL/dy with y = gamma x_hat
  for (std::size_t c = 0; c < cols; ++c) inverse[c] = 1.0 / std::sqrt(variance[c] + epsilon);
  // dL/dx_hat = w gamma; the kernel takes it as dy with factor = inverse (gamma folded into dy).
  std::vector<double> sum_dy(cols), sum_dy_x_hat(cols);
  kernels::batch_norm_backward_sums<double>(x, dy, mean, inverse, sum_dy, sum_dy_x_hat);
  for (std::size_t c = 0; c < cols; ++c) {
    factor[c] = inverse[c];
    mean_dy[c] = sum_dy[c] / rows;
    mean_dy_x_hat[c] = sum_dy_x_hat[c] / rows;
  }
  std::vector<double> dx(x.size());
  kernels::batch_norm_input_gradient<double>(x, dy, mean, inverse, factor, mean_dy, mean_dy_x_hat, dx);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double h = 1e-6;
    std::vector<double> up = x, down = x;
    up[i] += h;
    down[i] -= h;
    const double numeric = (loss(up) - loss(down)) / (2 * h);
    CHECK(dx[i] == doctest::Approx(numeric).epsilon(1e-6));
  }
}

TEST_CASE("normalization kernels reject mismatched sizes and overlaps") {
  std::vector<float> x(6), y(6), two(2), three(3);
  std::vector<double> mean(3), variance(3), short_stats(2);
  CHECK_THROWS_WITH_AS(kernels::batch_norm_moments<float>(x, 4, mean, variance),
                       "batch_norm_moments: the size 6 is not a multiple of cols = 4.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::batch_norm_moments<float>(x, 3, mean, short_stats),
                       "batch_norm_moments: variance has 2 elements but there are 3 channels.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::batch_norm_moments<float>(std::vector<float>{}, 3, mean, variance),
                       "batch_norm_moments: x has no rows; statistics need at least one.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::scale_shift_columns<float>(x, three, two, y),
                       "scale_shift_columns: shift has 2 elements but there are 3 channels.", std::invalid_argument);
  CHECK_THROWS_AS(kernels::scale_shift_columns<float>(x, three, three, std::span(y).first(5)), std::invalid_argument);
  CHECK_THROWS_AS(kernels::scale_shift_columns<float>(std::span(x).first(5), std::vector<float>(5), std::vector<float>(5),
                                                      std::span(x).subspan(1)),
                  std::invalid_argument);  // a partial overlap
  std::vector<double> s(3), p(3);
  CHECK_THROWS_WITH_AS(kernels::batch_norm_backward_sums<float>(x, std::span(y).first(3), three, three, s, p),
                       "batch_norm_backward_sums: x has 6 elements and dy 3; they must match.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      kernels::batch_norm_input_gradient<float>(x, y, three, three, three, two, three, std::span(y)),
      "batch_norm_input_gradient: mean_dy has 2 elements but there are 3 channels.", std::invalid_argument);
  CHECK_THROWS_AS(kernels::batch_norm_input_gradient<float>(x, y, three, three, three, three, three, std::span(x)),
                  std::invalid_argument);  // dx over x
  std::vector<float> dx(6);
  kernels::batch_norm_input_gradient<float>(x, y, three, three, three, three, three, dx);  // well-formed: no throw
  // Two statistics into one buffer lost one of them silently.
  std::vector<double> one(3);
  CHECK_THROWS_WITH_AS(kernels::batch_norm_moments<float>(x, 3, one, one),
                       "batch_norm_moments: mean and variance overlap; they must lie apart.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::batch_norm_backward_sums<float>(x, y, three, three, one, one),
                       "batch_norm_backward_sums: sum_dy and sum_dy_x_hat overlap; they must lie apart.",
                       std::invalid_argument);
  std::vector<double> x_and_sums(6);
  const auto x_double = std::span<const double>(x_and_sums).first(6);
  const auto sums_over_x = std::span<double>(x_and_sums).first(3);
  CHECK_THROWS_WITH_AS(kernels::batch_norm_moments<double>(x_double, 3, sums_over_x, p),
                       "batch_norm_moments: x and mean overlap; they must lie apart.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::batch_norm_backward_sums<double>(x_double, std::vector<double>(6), std::vector<double>(3),
                                                                 std::vector<double>(3), s, sums_over_x),
                       "batch_norm_backward_sums: x and sum_dy_x_hat overlap; they must lie apart.", std::invalid_argument);
}

TEST_CASE("the normalization kernels deduce the dtype from containers") {
  const std::vector<float> x{1.0f, 10.0f, 3.0f, 30.0f};  // 2 rows x 2 channels
  std::vector<double> mean(2), variance(2);
  kernels::batch_norm_moments(x, 2, mean, variance);
  CHECK(mean == std::vector<double>{2.0, 20.0});
  CHECK(variance == std::vector<double>{1.0, 100.0});
  std::vector<float> y(4);
  kernels::scale_shift_columns(x, std::vector<float>{2.0f, 1.0f}, std::vector<float>{0.0f, -10.0f}, y);
  CHECK(y == std::vector<float>{2.0f, 0.0f, 6.0f, 20.0f});
  const std::vector<float> dy{1.0f, 1.0f, 1.0f, 1.0f}, mean32{2.0f, 20.0f}, inverse{1.0f, 0.1f};
  std::vector<double> sum_dy(2), sum_dy_x_hat(2);
  kernels::batch_norm_backward_sums(x, dy, mean32, inverse, sum_dy, sum_dy_x_hat);
  CHECK(sum_dy == std::vector<double>{2.0, 2.0});
  CHECK(sum_dy_x_hat == std::vector<double>{0.0, 0.0});
  std::vector<float> dx(4);
  const std::vector<float> ones{1.0f, 1.0f}, zeros{0.0f, 0.0f};
  kernels::batch_norm_input_gradient(x, dy, mean32, inverse, ones, ones, zeros, dx);
  CHECK(dx == std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f});
}
