// Weight initializers (Keras' names and formulas). Values are drawn in double and rounded once
// to the variable dtype, so a bfloat16 weight is the correctly rounded bfloat16 of its draw.
//
// An initializer is called as init(values, extents, default_seed). A seed of 0 (the default)
// means "use default_seed", which layers derive from the weight's path ("dense_1/kernel"), so
// every weight of a model gets its own, reproducible draws.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string_view>

namespace mixprec::initializers {

/// Keras' fan-in / fan-out of a weight shape: a 2-D [in, out] kernel, or a convolution kernel
/// [kh, kw, in, out] whose receptive field multiplies both.
struct fans {
  double in;
  double out;
};
inline fans compute_fans(std::span<const std::size_t> extents) {
  if (extents.empty()) return {1, 1};
  if (extents.size() == 1) return {static_cast<double>(extents[0]), static_cast<double>(extents[0])};
  double receptive = 1;
  for (std::size_t i = 0; i + 2 < extents.size(); ++i) receptive *= static_cast<double>(extents[i]);
  return {receptive * static_cast<double>(extents[extents.size() - 2]),
          receptive * static_cast<double>(extents[extents.size() - 1])};
}

/// Any initializer, type-erased (for run-time configuration).
using any = std::function<void(std::span<double>, std::span<const std::size_t>, std::uint64_t)>;

/// A stable 64-bit hash (FNV-1a) of a weight's path, to seed its initializer.
constexpr std::uint64_t seed_for(std::string_view path) {
  std::uint64_t hash = 14695981039346656037ull;
  for (char c : path) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return hash;
}

/// Uniform in [-limit, limit], limit = sqrt(6 / (fan_in + fan_out)). The default for kernels.
struct glorot_uniform {
  std::uint64_t seed = 0;
  void operator()(std::span<double> values, std::span<const std::size_t> extents, std::uint64_t default_seed) const {
    const fans f = compute_fans(extents);
    const double limit = std::sqrt(6.0 / (f.in + f.out));
    std::mt19937_64 rng(seed ? seed : default_seed);
    std::uniform_real_distribution<double> uniform(-limit, limit);
    for (double& v : values) v = uniform(rng);
  }
};

/// Normal(mean, stddev).
struct random_normal {
  double mean = 0.0;
  double stddev = 0.05;
  std::uint64_t seed = 0;
  void operator()(std::span<double> values, std::span<const std::size_t>, std::uint64_t default_seed) const {
    std::mt19937_64 rng(seed ? seed : default_seed);
    std::normal_distribution<double> normal(mean, stddev);
    for (double& v : values) v = normal(rng);
  }
};

struct constant {
  double value = 0.0;
  void operator()(std::span<double> values, std::span<const std::size_t>, std::uint64_t) const {
    for (double& v : values) v = value;
  }
};

/// The default for biases.
struct zeros : constant {};
struct ones : constant {
  ones() : constant{1.0} {}
};

}  // namespace mixprec::initializers

#include <mixprec/core/cast.hpp>
#include <vector>

namespace mixprec::detail {
/// A weight's initial values: drawn in double by `initializer` for `shape`, seeded from the
/// weight's path, rounded once to V.
template <class V, class Initializer>
std::vector<V> initial_values(const Initializer& initializer, const std::vector<std::size_t>& shape,
                              std::string_view path) {
  std::size_t size = 1;
  for (std::size_t extent : shape) size *= extent;
  std::vector<double> draws(size);
  initializer(std::span(draws), std::span<const std::size_t>(shape), initializers::seed_for(path));
  std::vector<V> values(size);
  for (std::size_t i = 0; i < size; ++i) values[i] = cast<V>(draws[i]);
  return values;
}
}  // namespace mixprec::detail
