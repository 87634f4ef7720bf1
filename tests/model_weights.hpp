// Comparing and copying the weights of two models (either kind), for the training tests.
#pragma once

#include <doctest/doctest.h>

#include <cstddef>
#include <vector>

namespace mixprec::test {

/// Every weight's bytes, in order, to compare models bit for bit.
template <class Model>
std::vector<std::vector<std::byte>> weight_bytes(Model& model) {
  std::vector<std::vector<std::byte>> result;
  for (const auto& handle : model.weights()) result.emplace_back(handle.bytes.begin(), handle.bytes.end());
  return result;
}

/// Copies every weight of `from` into `to`, by path (converted to the target's dtype).
template <class From, class To>
void copy_weights(From& from, To& to) {
  auto source = from.weights();
  auto target = to.weights();
  REQUIRE(source.size() == target.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    REQUIRE(source[i].path == target[i].path);
    target[i].load(source[i].dtype, source[i].bytes);
  }
}

}  // namespace mixprec::test
