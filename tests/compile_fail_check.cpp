// Checks one compile-fail snippet against the diagnostics of a compile that held it, alone or
// with the other snippets in one translation unit (unity.cmake, each inside a namespace
// unity_<stem>, whose name is taken out of the diagnostics: the user's code has none):
//   compile_fail_check <diagnostics.log> <snippet.cpp>
// An error belongs to the snippet named last at the head of a line (GCC's "<file>:<line>:..."
// and "<file>: In function ..."), from the line after the previous error to the error itself:
// the context GCC prints before an error ends with the user's line ("required from here"). An
// error without such a line follows on from the one before it. The snippet must own an error;
// the first of its "// expect: <text>" lines must be in its first error (what a user reads first,
// and all that -Wfatal-errors shows, is ours), and every one must be in the text around its
// errors (each error with the lines from the previous error to the next).
#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace {

std::vector<std::string> read_lines(const char* path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "compile_fail_check: cannot read " << path << "\n";
    std::exit(2);
  }
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The source file a diagnostic line starts with ("<file>:<line>:<column>: ..." or
// "<file>: In ..."), if it is a .cpp file.
std::optional<std::string> leading_source(const std::string& line) {
  const auto end = line.find(".cpp:");
  if (end == std::string::npos || line.find(' ') < end) return std::nullopt;
  return line.substr(0, end + 4);
}

// "<file>:<line>:<column>: error: ..." (a note's text may quote "error: " further on).
bool is_error(const std::string& line) {
  for (const char* marker : {": error: ", ": fatal error: "}) {
    const auto at = line.find(marker);
    if (at != std::string::npos && line.find(' ') > at) return true;
  }
  return false;
}

void erase_all(std::string& text, const std::string& what) {
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at)) text.erase(at, what.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: compile_fail_check <diagnostics.log> <snippet.cpp>\n";
    return 2;
  }
  const std::string snippet = argv[2];
  std::vector<std::string> expected;
  for (const auto& line : read_lines(argv[2]))
    if (line.rfind("// expect: ", 0) == 0) expected.push_back(line.substr(11));
  if (expected.empty()) {
    std::cerr << snippet << " needs at least one '// expect: <message>' line\n";
    return 1;
  }
  const auto slash = snippet.find_last_of('/');
  const auto stem = snippet.substr(slash + 1, snippet.size() - slash - 1 - 4);
  std::vector<std::string> lines = read_lines(argv[1]);
  for (auto& line : lines) erase_all(line, "unity_" + stem + "::");

  std::vector<std::size_t> errors;  // line indices
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (is_error(lines[i])) errors.push_back(i);
  std::vector<std::size_t> owned;  // indices into errors
  std::optional<std::string> owner;
  for (std::size_t e = 0; e < errors.size(); ++e) {
    const std::size_t from = e == 0 ? 0 : errors[e - 1] + 1;
    for (std::size_t i = from; i <= errors[e]; ++i)
      if (auto source = leading_source(lines[i])) owner = source;
    if (owner == snippet) owned.push_back(e);
  }
  if (owned.empty()) {
    std::cerr << snippet << " compiled, but it must be rejected with: " << expected.front() << "\n";
    return 1;
  }
  std::string text;  // every owned error with the lines from the previous error to the next
  for (const std::size_t e : owned) {
    const std::size_t from = e == 0 ? 0 : errors[e - 1] + 1;
    const std::size_t to = e + 1 < errors.size() ? errors[e + 1] : lines.size();
    for (std::size_t i = from; i < to; ++i) text += lines[i] + "\n";
  }
  const std::string& first_error = lines[errors[owned.front()]];
  if (first_error.find(expected.front()) == std::string::npos) {
    std::cerr << snippet << " failed to compile, but its first error is not '" << expected.front() << "':\n" << text;
    return 1;
  }
  for (const auto& message : expected) {
    if (text.find(message) == std::string::npos) {
      std::cerr << snippet << " failed to compile, but without the message '" << message << "':\n" << text;
      return 1;
    }
    std::cout << "rejected as expected: " << message << "\n";
  }
  return 0;
}
