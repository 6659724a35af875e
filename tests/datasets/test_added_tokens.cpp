// tests/datasets/test_added_tokens.cpp — AddedTokenMatcher
// (datasets/added_tokens.h) against a plain leftmost-longest reference (every
// pattern tried at every position, longest first): random patterns that are
// prefixes, suffixes and infixes of each other, on random texts; matches that
// cross the scan's 64 KiB windows; find_exact; and 100,000 patterns over
// 160 KB of text in linear time.
#include "support/testing.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "datasets/added_tokens.h"

using namespace ks;
using data::AddedTokenMatcher;

namespace {

using Found = std::vector<std::tuple<size_t, size_t, int32_t>>;  // start, length, pattern

Found matcher_finds(const AddedTokenMatcher& m, std::string_view text) {
  Found out;
  m.find(text, [&](const AddedTokenMatcher::Match& x) { out.emplace_back(x.start, x.length, x.pattern); });
  return out;
}

// The reference: at each position the longest pattern there (of equal ones
// the first), then on from its end; O(text x patterns).
Found reference_finds(const std::vector<std::string>& patterns, std::string_view text) {
  Found out;
  for (size_t i = 0; i < text.size();) {
    int32_t best = -1;
    for (size_t p = 0; p < patterns.size(); ++p)
      if (text.compare(i, patterns[p].size(), patterns[p]) == 0 &&
          (best < 0 || patterns[p].size() > patterns[size_t(best)].size()))
        best = int32_t(p);
    if (best < 0) {
      ++i;
      continue;
    }
    out.emplace_back(i, patterns[size_t(best)].size(), best);
    i += patterns[size_t(best)].size();
  }
  return out;
}

std::vector<std::string_view> views(const std::vector<std::string>& patterns) {
  return std::vector<std::string_view>(patterns.begin(), patterns.end());
}

std::string random_text(std::mt19937& rng, size_t n, const std::string& alphabet) {
  std::string s(n, ' ');
  for (char& c : s) c = alphabet[rng() % alphabet.size()];
  return s;
}

}  // namespace

TEST_CASE("AddedTokenMatcher: leftmost, then longest, non-overlapping, as the reference") {
  // Hand cases: the leftmost start wins over a longer match further right;
  // at one start the longest wins; equal patterns report the first.
  const std::vector<std::string> hand = {"bcd", "abcdx", "ab", "b", "cdxyz", "ab"};
  const AddedTokenMatcher m(views(hand));
  CHECK(matcher_finds(m, "abcdxyz") == Found{{0, 5, 1}});  // not "ab" + "cdxyz"
  CHECK(matcher_finds(m, "abcdy") == Found{{0, 2, 2}});    // "ab" at 0 hides "bcd" at 1
  CHECK(matcher_finds(m, "xbcdab") == Found{{1, 3, 0}, {4, 2, 2}});
  CHECK(matcher_finds(m, "") == Found{});

  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    const std::string alphabet = round % 3 == 0 ? "ab" : round % 3 == 1 ? "abc" : "abcd\xff";
    std::vector<std::string> patterns;
    const size_t n = 1 + rng() % 12;
    for (size_t p = 0; p < n; ++p) patterns.push_back(random_text(rng, 1 + rng() % 6, alphabet));
    const std::string text = random_text(rng, rng() % 80, alphabet);
    const AddedTokenMatcher matcher(views(patterns));
    INFO("round ", round, " text ", text);
    CHECK(matcher_finds(matcher, text) == reference_finds(patterns, text));
    for (size_t p = 0; p < patterns.size(); ++p) {
      const int32_t exact = matcher.find_exact(patterns[p]);
      CHECK(exact >= 0);
      CHECK(patterns[size_t(exact)] == patterns[p]);
      CHECK(exact <= int32_t(p));  // the first of equal ones
    }
    CHECK(matcher.find_exact(patterns[0] + "\x01") == -1);
  }
}

TEST_CASE("AddedTokenMatcher: matches across its 64 KiB scan windows, and patterns longer than a window") {
  std::mt19937 rng(3);
  std::vector<std::string> patterns = {random_text(rng, 70001, "ab"), "aab", "ba", std::string(300, 'b')};
  std::string text = random_text(rng, 200000, "ab");
  text[65529] = 'c';  // nothing matches across it, so the long pattern is the match at 65530
  text.replace(65530, 70001, patterns[0]);
  text.replace(150000, 300, patterns[3]);
  const AddedTokenMatcher m(views(patterns));
  const Found found = matcher_finds(m, text);
  CHECK(found == reference_finds(patterns, text));
  CHECK(std::count_if(found.begin(), found.end(), [](const auto& f) { return std::get<2>(f) == 0; }) >= 1);
}

TEST_CASE("AddedTokenMatcher: 100,000 patterns over 160 KB of text in linear time") {
  // Each pattern tried at each position took 199 s (issue 51); the automaton
  // scans each byte about once.
  std::vector<std::string> patterns;
  for (int i = 0; i < 100000; ++i) patterns.push_back("<|tok" + std::to_string(i) + "|>");
  patterns.push_back("<|tok1|><|tok2|>");  // longer than its two parts, at the same start
  std::mt19937 rng(1);
  std::string text;
  std::vector<int32_t> placed;
  while (text.size() < 160000) {
    text += "some text <|to ";
    const int32_t p = int32_t(rng() % 100000);
    text += patterns[size_t(p)];
    placed.push_back(p);
  }
  text += "<|tok1|><|tok2|>";
  const AddedTokenMatcher m(views(patterns));
  const auto start = std::chrono::steady_clock::now();
  const Found found = matcher_finds(m, text);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 2.0);
  REQUIRE(found.size() == placed.size() + 1);
  for (size_t i = 0; i < placed.size(); ++i) CHECK(std::get<2>(found[i]) == placed[i]);
  CHECK(std::get<2>(found.back()) == 100000);
}
