// datasets/added_tokens.cpp — the reversed Aho-Corasick automaton of the
// added tokens, built breadth-first from the patterns sorted by their
// reversed text, and its leftmost-longest search (see the header).
#include "datasets/added_tokens.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "core/error.h"

namespace ks::data {

namespace {

// Byte `k` of `p` counted from its end (k = 0: the last byte).
unsigned char from_end(std::string_view p, size_t k) { return static_cast<unsigned char>(p[p.size() - 1 - k]); }

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<std::string_view>& patterns) {
  const size_t m = patterns.size();
  size_t total = 0;
  lengths_.resize(m);
  for (size_t i = 0; i < m; ++i) {
    KS_CHECK(!patterns[i].empty(), "AddedTokenMatcher: pattern ", i, " is empty");
    lengths_[i] = patterns[i].size();
    longest_ = std::max(longest_, lengths_[i]);
    total += lengths_[i];
  }
  KS_CHECK(total < size_t(std::numeric_limits<int32_t>::max()), "AddedTokenMatcher: the patterns hold ", total,
           " bytes, over the limit of 2^31");
  if (m == 0) return;

  // Sorted by reversed text, a shorter one before its extensions, equal ones
  // by index: the patterns below any node are one run, its own first.
  std::vector<int32_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const std::string_view x = patterns[size_t(a)], y = patterns[size_t(b)];
    for (size_t k = 0; k < x.size() && k < y.size(); ++k)
      if (from_end(x, k) != from_end(y, k)) return from_end(x, k) < from_end(y, k);
    return x.size() != y.size() ? x.size() < y.size() : a < b;
  });

  // Breadth-first, one level at a time: a node at depth d stands for the
  // patterns order[lo, hi), which agree on their last d bytes.
  struct Range {
    size_t lo, hi;
  };
  std::vector<Range> level = {{0, m}}, next;
  first_child_ = {1};
  label_ = {0};
  fail_ = {0};
  out_ = {-1};
  root_next_.assign(256, 0);
  int32_t node = 0;  // the first node of `level`
  for (size_t depth = 0; !level.empty(); ++depth) {
    next.clear();
    for (size_t j = 0; j < level.size(); ++j, ++node) {
      size_t lo = level[j].lo;
      const size_t hi = level[j].hi;
      while (lo < hi && lengths_[size_t(order[lo])] == depth) ++lo;  // patterns ending here
      while (lo < hi) {
        const unsigned char c = from_end(patterns[size_t(order[lo])], depth);
        size_t end = lo + 1;
        while (end < hi && from_end(patterns[size_t(order[end])], depth) == c) ++end;
        // A child for byte c: its fail node is the longest proper suffix in the trie.
        const int32_t u = int32_t(label_.size());
        int32_t fail = 0;
        if (node != 0) {
          int32_t f = fail_[size_t(node)];
          while (true) {
            if (const int32_t g = child(f, c); g != 0) {
              fail = g;
              break;
            }
            if (f == 0) break;
            f = fail_[size_t(f)];
          }
        } else {
          root_next_[c] = u;
        }
        const int32_t first = order[lo];
        label_.push_back(c);
        fail_.push_back(fail);
        out_.push_back(lengths_[size_t(first)] == depth + 1 ? first : out_[size_t(fail)]);
        next.push_back({lo, end});
        lo = end;
      }
      first_child_.push_back(int32_t(label_.size()));  // closes this node's run of children
    }
    level.swap(next);
  }
}

int32_t AddedTokenMatcher::child(int32_t node, unsigned char c) const {
  if (node == 0) return root_next_[c];
  const auto begin = label_.begin() + first_child_[size_t(node)], end = label_.begin() + first_child_[size_t(node) + 1];
  const auto it = std::lower_bound(begin, end, c);
  return it != end && *it == c ? int32_t(it - label_.begin()) : 0;
}

void AddedTokenMatcher::find(std::string_view text, const std::function<void(const Match&)>& found) const {
  if (empty()) return;
  const size_t n = text.size();
  // best[k - lo]: the longest pattern starting at k, for k in the window
  // [lo, hi). The automaton runs from the window's end plus the longest
  // pattern (a match starting inside ends by there) down to lo; its state
  // is exact from there on, since a node is at most `longest_` bytes.
  const size_t window = std::max<size_t>(size_t(1) << 16, longest_);
  std::vector<int32_t> best;
  size_t i = 0;
  while (i < n) {
    const size_t lo = i, hi = std::min(n, lo + window), scan_end = std::min(n, hi + longest_ - 1);
    best.assign(hi - lo, -1);
    int32_t s = 0;
    for (size_t k = scan_end; k-- > lo;) {
      const unsigned char c = static_cast<unsigned char>(text[k]);
      int32_t g = child(s, c);
      while (g == 0 && s != 0) {
        s = fail_[size_t(s)];
        g = child(s, c);
      }
      s = g;
      if (k < hi) best[k - lo] = out_[size_t(s)];
    }
    while (i < hi) {
      const int32_t p = best[i - lo];
      if (p < 0) {
        ++i;
        continue;
      }
      found(Match{i, lengths_[size_t(p)], p});
      i += lengths_[size_t(p)];
    }
  }
}

int32_t AddedTokenMatcher::find_exact(std::string_view text) const {
  if (empty() || text.empty()) return -1;
  int32_t s = 0;
  for (size_t k = 0; k < text.size(); ++k)
    if ((s = child(s, from_end(text, k))) == 0) return -1;
  const int32_t p = out_[size_t(s)];
  return p >= 0 && lengths_[size_t(p)] == text.size() ? p : -1;
}

}  // namespace ks::data
