// datasets/added_tokens.h — finds a tokenizer's added tokens in a text in
// linear time: the leftmost match first, and of the matches starting there
// the longest, then on from its end (non-overlapping), as the Hugging Face
// `tokenizers` library's Aho-Corasick automaton (MatchKind::LeftmostLongest)
// splits added tokens out of a text before anything else.
//
// How: an Aho-Corasick automaton over the reversed patterns, run over the
// text from its end, gives at each position the longest pattern that starts
// there; a left-to-right pass then takes the first position that has one,
// jumps past it, and so on. Each text byte is scanned about once (twice at
// most, across the windows that bound the scan's memory), whatever the
// number of patterns: 100,000 added tokens cost what one does, where trying
// every pattern at every position took 199 s for 160 KB of text.
//
// The automaton holds 13 bytes per node (at most one node per pattern byte),
// children in breadth-first order so a node's children are one sorted run.
// Used by datasets/hf_bpe.h. Not here: what a match means (its id).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace ks::data {

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // The patterns, each non-empty; they need not outlive the matcher. Of two
  // equal patterns the first (lower index) is the one reported.
  explicit AddedTokenMatcher(const std::vector<std::string_view>& patterns);

  bool empty() const { return lengths_.empty(); }

  struct Match {
    size_t start, length;
    int32_t pattern;  // index into the constructor's list
  };
  // Calls `found` for each match of `text`, left to right, leftmost-longest
  // and non-overlapping.
  void find(std::string_view text, const std::function<void(const Match&)>& found) const;
  // The index of the pattern equal to `text`, or -1.
  int32_t find_exact(std::string_view text) const;

 private:
  int32_t child(int32_t node, unsigned char c) const;

  std::vector<int32_t> first_child_;  // node -> its first child; first_child_[node + 1] ends the run
  std::vector<unsigned char> label_;  // node -> the byte on the edge into it
  std::vector<int32_t> fail_;         // node -> the longest proper suffix that is a node
  std::vector<int32_t> out_;          // node -> the longest pattern that is a suffix of it, or -1
  std::vector<int32_t> root_next_;    // byte -> the root's child, or 0 (the root)
  std::vector<size_t> lengths_;       // pattern -> its length
  size_t longest_ = 0;
};

}  // namespace ks::data
