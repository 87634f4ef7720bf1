// What the fuzz targets share: the exception contract and the checks that abort on a finding.
//
// Untrusted input may make mixprec throw std::invalid_argument (bad input) and, for lookups,
// std::out_of_range; a target catches exactly those, by their types, where they may occur. Anything else (an
// nlohmann::json exception, std::length_error, std::bad_alloc, ...) is left uncaught: no handler
// is found, so std::terminate runs at the throw site, libstdc++ prints the exception's type and
// what(), and libFuzzer reports the abort as a crash whose stack shows where it was thrown.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mixprec::fuzz {

/// The input as text.
inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// The input cut at NUL bytes: the first part is the document, the others are extra arguments
/// (layer paths to look up, ...). Seeds without a NUL are a document alone.
inline std::vector<std::string_view> split_at_nul(std::string_view text) {
  std::vector<std::string_view> parts;
  for (std::size_t at; (at = text.find('\0')) != std::string_view::npos; text.remove_prefix(at + 1))
    parts.push_back(text.substr(0, at));
  parts.push_back(text);
  return parts;
}

/// A file in memory (a memfd) with a path, for the loaders that take a path: each input is
/// written over the previous one.
class memory_file {
 public:
  explicit memory_file(const char* name) : descriptor_(memfd_create(name, 0)) {
    if (descriptor_ < 0) {
      std::perror("memfd_create");
      std::exit(1);
    }
  }
  const std::string& path() const { return path_; }
  void write(std::string_view content) const {
    if (ftruncate(descriptor_, 0) != 0) std::abort();
    for (std::size_t done = 0; done < content.size();) {
      const ssize_t n = pwrite(descriptor_, content.data() + done, content.size() - done, static_cast<off_t>(done));
      if (n <= 0) std::abort();
      done += static_cast<std::size_t>(n);
    }
  }

 private:
  int descriptor_;
  std::string path_ = "/proc/self/fd/" + std::to_string(descriptor_);
};

/// A property mixprec promises (a round trip, state untouched after a rejection) that failed.
[[noreturn]] inline void broken(const char* what, const char* file, int line) {
  std::fprintf(stderr, "\n==mixprec fuzz== broken property at %s:%d: %s\n", file, line, what);
  std::fflush(stderr);
  std::abort();
}

/// Runs f; true if it returned, false if it threw a documented exception (std::invalid_argument).
template <class F>
bool accepted(F&& f) {
  try {
    f();
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

}  // namespace mixprec::fuzz

/// Aborts with the condition's text when a promised property does not hold (also in release builds).
#define MIXPREC_FUZZ_CHECK(condition) \
  ((condition) ? void() : ::mixprec::fuzz::broken(#condition, __FILE__, __LINE__))
