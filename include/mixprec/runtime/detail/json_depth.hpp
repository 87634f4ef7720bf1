// The nesting limit for JSON that mixprec is given (configs, policy JSON, weight-file headers).
// nlohmann::json parses and destroys iteratively, but copies, dumps and compares recursively: a
// value nested 100,000 deep overflows the stack in the first of those. Every entry point that
// takes JSON checks its depth first, with a walk that does not recurse itself.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace mixprec {

/// The deepest nesting of JSON arrays and objects mixprec accepts (`{}` and `[1]` are 1 deep,
/// `{"config": {}}` 2). Keras configs nest fewer than 20 levels.
inline constexpr std::size_t max_json_depth = 128;

namespace detail {

/// Throws std::invalid_argument ("<what> nests JSON arrays and objects deeper than ...") when
/// `value` is nested deeper than max_json_depth. Walks with an explicit stack of at most
/// max_json_depth iterators.
template <class Json>
  requires nlohmann::detail::is_basic_json<Json>::value
void check_json_depth(const Json& value, std::string_view what) {
  if (!value.is_structured()) return;
  struct open_container {
    typename Json::const_iterator next, end;
  };
  std::vector<open_container> open{{value.cbegin(), value.cend()}};
  while (!open.empty()) {
    open_container& top = open.back();
    if (top.next == top.end) {
      open.pop_back();
      continue;
    }
    const Json& element = *top.next++;
    if (!element.is_structured()) continue;
    if (open.size() == max_json_depth)
      throw std::invalid_argument(std::string(what) + " nests JSON arrays and objects deeper than " +
                                  std::to_string(max_json_depth) + " levels (mixprec::max_json_depth).");
    open.push_back({element.cbegin(), element.cend()});
  }
}

}  // namespace detail
}  // namespace mixprec
