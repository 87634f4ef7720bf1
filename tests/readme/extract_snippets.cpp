// Writes one C++ file holding every ```cpp block of README.md, so that a test can compile them:
//   extract_snippets README.md out.cpp
// Each block becomes the body of a function of its own (its #include lines go to the top). A
// block that uses names it does not declare gets them from an HTML comment right before its
// fence, invisible on the rendered page:
//   <!-- snippet context: std::size_t batch = 2; -->
#include <algorithm>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string trimmed(const std::string& line) {
  const auto first = line.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  return line.substr(first, line.find_last_not_of(" \t") - first + 1);
}

constexpr const char* context_open = "<!-- snippet context:";

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: extract_snippets README.md out.cpp\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << "extract_snippets: cannot read " << argv[1] << "\n";
    return 1;
  }
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // CRLF
    lines.push_back(line);
  }

  std::set<std::string> includes{"#include <iostream>", "#include <mixprec/mixprec.hpp>", "#include <mixprec/layers.hpp>",
                                 "#include <mixprec/models.hpp>", "#include <mixprec/training.hpp>",
                                 "#include <mixprec/datasets.hpp>"};
  std::ostringstream bodies;
  std::string context;  // the last context comment, until a line other than a blank one follows it
  std::size_t context_line = 0;
  std::size_t blocks = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string line = trimmed(lines[i]);
    if (line.rfind(context_open, 0) == 0) {
      context_line = i + 1;
      std::string text = line.substr(std::string(context_open).size());
      while (text.find("-->") == std::string::npos && i + 1 < lines.size()) text += "\n" + lines[++i];
      const std::size_t close = text.find("-->");
      if (close == std::string::npos) {
        std::cerr << "extract_snippets: the context comment at line " << context_line << " is not closed\n";
        return 1;
      }
      context = text.substr(0, close);
      continue;
    }
    if (line == "```c++" || line == "```C++" || line == "```cxx") {
      std::cerr << "extract_snippets: line " << i + 1 << " opens a C++ block as " << line
                << "; write ```cpp, which this test compiles\n";
      return 1;
    }
    if (line != "```cpp") {
      if (!line.empty()) context.clear();
      continue;
    }
    const std::size_t fence_line = i + 1, indent = lines[i].find('`');
    std::ostringstream body;
    for (++i; i < lines.size() && trimmed(lines[i]) != "```"; ++i) {
      // The fence's indentation off each line (spaces only: code is never cut).
      const std::size_t leading_spaces = std::min(lines[i].find_first_not_of(' '), lines[i].size());
      const std::string code = lines[i].substr(std::min(indent, leading_spaces));
      const bool include = trimmed(code).rfind("#include", 0) == 0;
      if (include) includes.insert(trimmed(code));
      body << (include ? "" : code) << "\n";  // a blank line keeps the #line numbering
    }
    if (i == lines.size()) {
      std::cerr << "extract_snippets: the block at line " << fence_line << " is not closed\n";
      return 1;
    }
    ++blocks;
    bodies << "namespace readme_block_" << blocks << " {  // README.md line " << fence_line << "\n"
           << "[[maybe_unused]] void run() {\nusing namespace mixprec;\n"
           << (context.empty() ? "" : "#line " + std::to_string(context_line) + " \"README.md\"\n") << context
           << "\n#line " << fence_line + 1 << " \"README.md\"\n"
           << body.str() << "}\n}  // namespace readme_block_" << blocks << "\n\n";
    context.clear();
  }
  std::ofstream out(argv[2]);
  for (const std::string& include : includes) out << include << "\n";
  out << "\n" << bodies.str();
  if (!out || blocks == 0) {
    std::cerr << "extract_snippets: " << (blocks == 0 ? "no ```cpp block found" : "cannot write the output") << "\n";
    return 1;
  }
  std::cout << "extract_snippets: " << blocks << " blocks of " << argv[1] << "\n";
  return 0;
}
