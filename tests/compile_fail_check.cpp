// Checks one compile-fail snippet against the diagnostics of a compile that held it: alone, or
// with the other snippets in one translation unit (unity.cmake, each inside a namespace
// unity_<stem>, whose name is taken out of the diagnostics: the user's code has none):
//   compile_fail_check <diagnostics.log> <snippet.cpp> [alone]
// The log is read as GCC writes it: a diagnostic is an error with the context lines GCC prints
// before it ("In instantiation of ...", "... required from here"), its source lines and carets,
// and the notes that follow (each with its own context). An error belongs to the snippet named
// last at the head of a line of that context or of the error line ("<file>:<line>:..." and
// "<file>: In function ..."): the context ends with the user's line. An error without such a
// line follows on from the one before it; compiled alone, every error is the snippet's (clang
// prints its context after the error). The snippet must own an error; the first of its
// "// expect: <text>" lines must be in its first error (what a user reads first, and all that
// -Wfatal-errors shows, is ours), and every one in its own diagnostics.
#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace {

std::vector<std::string> read_lines(const std::string& path) {
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

// "<file>:<line>:<column>: <kind>: ..." (a message may quote "error: " further on).
bool is_a(const std::string& line, std::initializer_list<const char*> markers) {
  for (const char* marker : markers) {
    const auto at = line.find(marker);
    if (at != std::string::npos && line.find(' ') > at) return true;
  }
  return false;
}
bool is_error(const std::string& line) { return is_a(line, {": error: ", ": fatal error: "}); }
bool is_note(const std::string& line) { return is_a(line, {": note: "}); }

// "   15 | float f();" and "      |   ^~~": the source line and carets under a message.
bool is_source_excerpt(const std::string& line) {
  const auto bar = line.find(" |");
  return bar != std::string::npos && line.find_first_not_of(" 0123456789") == bar + 1;
}

// One error with its context, excerpts and notes; `owner` the snippet whose line it comes from.
struct diagnostic {
  std::string error;
  std::string text;
  std::optional<std::string> owner;
};

std::vector<diagnostic> diagnostics_of(const std::vector<std::string>& lines) {
  std::vector<diagnostic> diagnostics;
  std::string context;  // lines since the last message and its excerpts
  std::optional<std::string> source_in_context;
  std::optional<std::string> owner;
  bool in_excerpt = false;
  for (const auto& line : lines) {
    if (in_excerpt && is_source_excerpt(line)) {
      if (!diagnostics.empty()) diagnostics.back().text += line + "\n";
      continue;
    }
    in_excerpt = false;
    if (auto source = leading_source(line)) source_in_context = source;
    context += line + "\n";
    const bool error = is_error(line);
    if (!error && !is_note(line)) continue;
    if (error) {
      if (source_in_context) owner = source_in_context;
      diagnostics.push_back({line, "", owner});
    }
    if (!diagnostics.empty()) diagnostics.back().text += context;
    context.clear();
    source_in_context.reset();
    in_excerpt = true;
  }
  return diagnostics;
}

void erase_all(std::string& text, const std::string& what) {
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at)) text.erase(at, what.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4 || (argc == 4 && std::string(argv[3]) != "alone")) {
    std::cerr << "usage: compile_fail_check <diagnostics.log> <snippet.cpp> [alone]\n";
    return 2;
  }
  const std::string log = argv[1];
  const std::string snippet = argv[2];
  const bool alone = argc == 4;
  std::vector<std::string> expected;
  for (const auto& line : read_lines(snippet))
    if (line.rfind("// expect: ", 0) == 0) expected.push_back(line.substr(11));
  if (expected.empty()) {
    std::cerr << snippet << " needs at least one '// expect: <message>' line\n";
    return 1;
  }
  const auto name = snippet.substr(snippet.find_last_of('/') + 1);
  const auto stem = name.substr(0, name.find('.'));  // as CMake's NAME_WE, which unity.cmake uses
  std::vector<std::string> lines = read_lines(log);
  for (auto& line : lines) erase_all(line, "unity_" + stem + "::");

  std::vector<diagnostic> owned;
  for (auto& d : diagnostics_of(lines))
    if (alone || d.owner == snippet) owned.push_back(std::move(d));
  if (owned.empty()) {
    std::cerr << snippet << " was not rejected: no error of " << log
              << " comes from its lines (it compiled, or the compile stopped before it); it must be rejected with: "
              << expected.front() << "\n";
    return 1;
  }
  std::string text;
  for (const auto& d : owned) text += d.text;
  if (owned.front().error.find(expected.front()) == std::string::npos) {
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
