// tests/tour/check_tour.cpp — the tour's rot check (docs/tour/), run by ctest
// as "tour: the chapters quote the snippets and symbols that exist":
//   ks_tour_check ROOT
// For every chapter docs/tour/*.md it checks
//   (a) each embedded snippet, a line `<!-- snippet: FILE NAME -->` followed by
//       a ```cpp block, equals the region of FILE between the lines
//       `// [tour NAME begin]` and `// [tour NAME end]` (less the begin
//       marker's indentation), character for character;
//   (b) each quoted symbol, a link [`SYMBOL`](PATH) whose PATH is a file of the
//       repository, names a word that PATH contains (`ns::name()` is looked
//       up as `name`); a link to any other local path must exist.
// It prints every failure, naming the chapter and line, and exits 1 on any.
// Not a Markdown parser: it reads only those two forms. Plain C++17, no
// Keystone, so it runs in every build, the sanitizer one too.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

int failures = 0;

void fail(const fs::path& md, size_t line, const std::string& what) {
  std::cerr << md.string() << ":" << line << ": " << what << "\n";
  ++failures;
}

std::vector<std::string> read_lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// The lines of `file` between the markers of region `name`, dedented; false if a marker is missing.
bool region(const fs::path& file, const std::string& name, std::vector<std::string>& out) {
  const std::string begin = "// [tour " + name + " begin]", end = "// [tour " + name + " end]";
  bool inside = false;
  size_t indent = 0;
  for (const std::string& l : read_lines(file)) {
    if (!inside && l.find(begin) != std::string::npos) {
      inside = true;
      indent = l.find_first_not_of(' ');
      continue;
    }
    if (inside && l.find(end) != std::string::npos) return true;
    if (inside) out.push_back(l.size() >= indent && l.find_first_not_of(' ') >= indent ? l.substr(indent) : l);
  }
  return false;
}

bool has_word(const fs::path& file, const std::string& word) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const bool left = at == 0 || !ident(text[at - 1]) || !ident(word.front());
    const bool right = at + word.size() >= text.size() || !ident(text[at + word.size()]) || !ident(word.back());
    if (left && right) return true;
  }
  return false;
}

void check_chapter(const fs::path& root, const fs::path& md, int& snippets, int& symbols) {
  const std::vector<std::string> lines = read_lines(md);
  const std::regex snippet_re(R"(^<!-- snippet: (\S+) (\S+) -->$)");
  const std::regex link_re(R"(\[(`?)([^\]`]+)`?\]\(([^)\s#]+)(#[^)]*)?\))");
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (std::regex_match(lines[i], m, snippet_re)) {
      ++snippets;
      const fs::path file = root / m[1].str();
      std::vector<std::string> want;
      if (!fs::is_regular_file(file) || !region(file, m[2].str(), want)) {
        fail(md, i + 1, "snippet " + m[2].str() + ": no region [tour " + m[2].str() + " begin/end] in " + m[1].str());
        continue;
      }
      if (i + 1 >= lines.size() || lines[i + 1] != "```cpp") {
        fail(md, i + 1, "snippet " + m[2].str() + ": the marker must be followed by a ```cpp block");
        continue;
      }
      std::vector<std::string> got;
      size_t j = i + 2;
      for (; j < lines.size() && lines[j] != "```"; ++j) got.push_back(lines[j]);
      if (got != want) {
        size_t k = 0;
        while (k < got.size() && k < want.size() && got[k] == want[k]) ++k;
        fail(md, i + 3 + k,
             "snippet " + m[2].str() + " differs from " + m[1].str() + " at its line " + std::to_string(k + 1) +
                 ":\n  chapter: " + (k < got.size() ? got[k] : "(ends)") + "\n  source:  " +
                 (k < want.size() ? want[k] : "(ends)") + "\n  (copy the region from the source into the chapter)");
      }
      i = j;
      continue;
    }
    for (auto it = std::sregex_iterator(lines[i].begin(), lines[i].end(), link_re); it != std::sregex_iterator();
         ++it) {
      const std::string target = (*it)[3].str();
      if (target.find("://") != std::string::npos || target.rfind("mailto:", 0) == 0) continue;
      const fs::path path = (md.parent_path() / target).lexically_normal();
      if (!fs::exists(path)) {
        fail(md, i + 1, "link to " + target + ": no such file");
        continue;
      }
      const bool code = !(*it)[1].str().empty();
      std::string symbol = (*it)[2].str();
      if (!code || !fs::is_regular_file(path) || symbol.find('/') != std::string::npos ||
          symbol.find(".h") != std::string::npos || symbol.find(".cpp") != std::string::npos)
        continue;  // a path shown as code, or a plain link: existence is enough
      ++symbols;
      if (symbol.size() > 2 && symbol.compare(symbol.size() - 2, 2, "()") == 0) symbol.resize(symbol.size() - 2);
      if (const size_t colons = symbol.rfind("::"); colons != std::string::npos) symbol = symbol.substr(colons + 2);
      if (!has_word(path, symbol))
        fail(md, i + 1,
             "symbol `" + (*it)[2].str() + "` not found in " + target + " (renamed or moved? fix the chapter)");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: ks_tour_check ROOT\n";
    return 2;
  }
  const fs::path root = fs::path(argv[1]);
  std::vector<fs::path> chapters;
  for (const auto& e : fs::directory_iterator(root / "docs" / "tour"))
    if (e.path().extension() == ".md") chapters.push_back(e.path());
  std::sort(chapters.begin(), chapters.end());
  int snippets = 0, symbols = 0;
  for (const fs::path& md : chapters) check_chapter(root, md, snippets, symbols);
  if (chapters.empty() || snippets == 0 || symbols == 0) {
    std::cerr << "found " << chapters.size() << " chapters, " << snippets << " snippets and " << symbols
              << " symbols under " << (root / "docs" / "tour").string() << ": expected some of each\n";
    return 1;
  }
  if (failures) {
    std::cerr << failures << " problem(s) in the tour\n";
    return 1;
  }
  std::cout << "tour ok: " << chapters.size() << " chapters, " << snippets << " snippets, " << symbols << " symbols\n";
  return 0;
}
