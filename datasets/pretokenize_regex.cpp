// datasets/pretokenize_regex.cpp — GPT-2's, Llama-3's and Qwen2's pre-tokenizer regexes as
// hand-written matchers over code points (see the header for the patterns).
#include "datasets/pretokenize_regex.h"

#include "datasets/unicode_classes.h"

namespace ks::data {
namespace {

using unicode::CodePoint;

const char* const kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char* const kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The text's code points with the classes the patterns ask about.
struct Cursor {
  const std::vector<CodePoint>& cp;
  size_t n() const { return cp.size(); }
  char32_t at(size_t i) const { return i < cp.size() ? cp[i].c : 0; }
  bool letter(size_t i) const { return i < n() && unicode::is_letter(cp[i].c); }
  bool number(size_t i) const { return i < n() && unicode::is_number(cp[i].c); }
  bool space(size_t i) const { return i < n() && unicode::is_whitespace(cp[i].c); }
  bool other(size_t i) const { return i < n() && !space(i) && !letter(i) && !number(i); }  // [^\s\p{L}\p{N}]
  bool newline(size_t i) const { return at(i) == '\r' || at(i) == '\n'; }
  template <class P> size_t run(size_t i, P p) const {  // the end of the run of p from i
    while (i < n() && (this->*p)(i)) ++i;
    return i;
  }
};

// 's|'t|'re|'ve|'m|'ll|'d, ASCII case folded when `fold` ((?i:...): also ſ for s,
// as Oniguruma and Python fold it). Returns the end, or 0 for no match.
size_t contraction(const Cursor& c, size_t i, bool fold) {
  if (c.at(i) != '\'') return 0;
  auto is = [&](size_t k, char lower) {
    char32_t x = c.at(k);
    if (x == char32_t(lower)) return true;
    if (!fold) return false;
    return x == char32_t(lower - 'a' + 'A') || (lower == 's' && x == 0x17F);
  };
  if (is(i + 1, 's') || is(i + 1, 't') || is(i + 1, 'm') || is(i + 1, 'd')) return i + 2;
  if ((is(i + 1, 'r') && is(i + 2, 'e')) || (is(i + 1, 'v') && is(i + 2, 'e')) || (is(i + 1, 'l') && is(i + 2, 'l')))
    return i + 3;
  return 0;
}

// \s+(?!\S)|\s+ from a whitespace code point at i: the run, less its last
// code point when a non-space follows it and the run is longer than one.
size_t whitespace_tail(const Cursor& c, size_t i) {
  const size_t j = c.run(i, &Cursor::space);
  return (j < c.n() && j - i > 1) ? j - 1 : j;
}

size_t match_gpt2(const Cursor& c, size_t i) {
  if (size_t e = contraction(c, i, false)) return e;
  const size_t from = (c.at(i) == ' ') ? i + 1 : i;  // " ?" then the class
  if (c.letter(from)) return c.run(from, &Cursor::letter);
  if (c.number(from)) return c.run(from, &Cursor::number);
  if (c.other(from)) return c.run(from, &Cursor::other);
  return whitespace_tail(c, i);  // at a space, for `from == i` fails all three
}

// Llama-3's pattern, and Qwen2's, which differs only in taking one digit a
// piece (\p{N}) where Llama-3's takes up to three (\p{N}{1,3}).
size_t match_llama3(const Cursor& c, size_t i, size_t max_digits) {
  if (size_t e = contraction(c, i, true)) return e;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (c.letter(i)) return c.run(i, &Cursor::letter);
  if (i < c.n() && !c.newline(i) && !c.number(i) && c.letter(i + 1)) return c.run(i + 1, &Cursor::letter);
  // \p{N}{1,3} (Qwen2: \p{N})
  if (c.number(i)) {
    size_t e = i + 1;
    while (e < i + max_digits && c.number(e)) ++e;
    return e;
  }
  // " ?[^\s\p{L}\p{N}]+[\r\n]*"
  const size_t from = (c.at(i) == ' ') ? i + 1 : i;
  if (c.other(from)) return c.run(c.run(from, &Cursor::other), &Cursor::newline);
  // \s*[\r\n]+: up to the last newline of the whitespace run, when it holds one
  const size_t j = c.run(i, &Cursor::space);
  for (size_t k = j; k > i; --k)
    if (c.newline(k - 1)) return k;
  return whitespace_tail(c, i);
}

}  // namespace

std::optional<SplitPattern> known_pattern(const std::string& regex) {
  if (regex == kGpt2) return SplitPattern::Gpt2;
  if (regex == kLlama3) return SplitPattern::Llama3;
  if (regex == kQwen2) return SplitPattern::Qwen2;
  return std::nullopt;
}

const char* pattern_text(SplitPattern p) {
  switch (p) {
    case SplitPattern::Gpt2: return kGpt2;
    case SplitPattern::Llama3: return kLlama3;
    case SplitPattern::Qwen2: return kQwen2;
  }
  return kGpt2;
}

std::vector<std::string_view> split_by_pattern(std::string_view text, SplitPattern p) {
  const std::vector<CodePoint> cps = unicode::decode_utf8(text);
  const Cursor c{cps};
  std::vector<std::string_view> out;
  size_t i = 0, gap = 0;  // code points [gap, i) matched nothing so far
  auto bytes = [&](size_t a, size_t b) { return text.substr(cps[a].begin, cps[b - 1].end - cps[a].begin); };
  while (i < cps.size()) {
    const size_t e = p == SplitPattern::Gpt2 ? match_gpt2(c, i) : match_llama3(c, i, p == SplitPattern::Qwen2 ? 1 : 3);
    if (e <= i) {
      ++i;  // no match here (the patterns cover every code point, but a Split keeps gaps)
      continue;
    }
    if (gap < i) out.push_back(bytes(gap, i));
    out.push_back(bytes(i, e));
    i = gap = e;
  }
  if (gap < cps.size()) out.push_back(bytes(gap, cps.size()));
  return out;
}

}  // namespace ks::data
