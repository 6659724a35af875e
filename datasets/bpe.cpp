// datasets/bpe.cpp — byte-level BPE: pre-tokenisation, training with
// incrementally updated pair counts, encoding by merge rank, JSON form.
#include "datasets/bpe.h"

#include <algorithm>
#include <queue>
#include <unordered_set>

#include "core/error.h"
#include "datasets/tokenizer_json.h"

namespace ks::data {

using detail::json;

namespace {

enum class Cls { Space, Letter, Digit, Other };

Cls cls(char ch) {
  unsigned char c = static_cast<unsigned char>(ch);
  if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') return Cls::Space;
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80) return Cls::Letter;
  if (c >= '0' && c <= '9') return Cls::Digit;
  return Cls::Other;
}

uint64_t key(int64_t a, int64_t b) { return uint64_t(a) << 32 | uint64_t(b); }

}  // namespace

std::vector<std::string_view> BpeTokenizer::pretokenize(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0, n = s.size();
  auto run = [&](size_t j) {
    Cls c = cls(s[j]);
    while (j < n && cls(s[j]) == c) ++j;
    return j;
  };
  while (i < n) {
    size_t start = i;
    if (s[i] == ' ' && i + 1 < n && cls(s[i + 1]) != Cls::Space) {
      i = run(i + 1);  // " word": the space belongs to the word after it
    } else if (cls(s[i]) == Cls::Space) {
      i = run(i);
      // Leave a final plain space to the word that follows the run.
      if (i < n && s[i - 1] == ' ' && i - 1 > start) --i;
    } else {
      i = run(i);
    }
    out.push_back(s.substr(start, i - start));
  }
  return out;
}

BpeTokenizer::BpeTokenizer(std::vector<std::pair<int64_t, int64_t>> merges) : merges_(std::move(merges)) {
  bytes_.reserve(size_t(vocab_size()));
  for (int64_t id = 0; id < kNumSpecial; ++id) bytes_.push_back(id == kUnkId ? special_tokens()[kUnkId] : "");
  for (int b = 0; b < 256; ++b) bytes_.emplace_back(1, static_cast<char>(b));
  for (size_t i = 0; i < merges_.size(); ++i) {
    auto [a, b] = merges_[i];
    int64_t id = kFirstMerge + int64_t(i);
    KS_CHECK(a >= kNumSpecial && a < id && b >= kNumSpecial && b < id, "bpe tokenizer: merge ", i, " (", a, ", ", b,
             ") must join two earlier non-special ids, each in [", kNumSpecial, ", ", id, ")");
    KS_CHECK(rank_.emplace(key(a, b), int64_t(i)).second, "bpe tokenizer: merge ", i, " (", a, ", ", b,
             ") repeats an earlier merge");
    const size_t len = bytes_[size_t(a)].size() + bytes_[size_t(b)].size();
    KS_CHECK(len <= kMaxTokenBytes, "bpe tokenizer: merge ", i, " (", a, ", ", b, ") makes a token of ", len,
             " bytes, over the ", kMaxTokenBytes, "-byte limit");
    bytes_.push_back(bytes_[size_t(a)] + bytes_[size_t(b)]);
  }
}

BpeTokenizer BpeTokenizer::train(const std::vector<std::string>& corpus, int64_t vocab_size, int64_t min_freq) {
  KS_CHECK(vocab_size >= kFirstMerge, "bpe tokenizer: vocab_size must be at least ", kFirstMerge,
           " (4 specials + 256 bytes), got ", vocab_size);
  KS_CHECK(min_freq >= 1, "bpe tokenizer: min_freq must be >= 1, got ", min_freq);
  // Distinct chunks with their counts, as symbol sequences.
  std::unordered_map<std::string_view, int64_t> chunk_count;
  for (const auto& text : corpus)
    for (auto chunk : pretokenize(text)) ++chunk_count[chunk];
  std::vector<std::pair<std::string_view, int64_t>> chunks(chunk_count.begin(), chunk_count.end());
  std::sort(chunks.begin(), chunks.end());  // a fixed order, whatever the hash map did
  std::vector<std::vector<int32_t>> words(chunks.size());
  std::vector<int64_t> freq(chunks.size());
  std::unordered_map<uint64_t, int64_t> pair_count;
  std::unordered_map<uint64_t, std::vector<int32_t>> where;  // pair -> words that (may) hold it
  for (size_t w = 0; w < chunks.size(); ++w) {
    freq[w] = chunks[w].second;
    for (char c : chunks[w].first) words[w].push_back(int32_t(kNumSpecial + static_cast<unsigned char>(c)));
    for (size_t k = 0; k + 1 < words[w].size(); ++k) {
      uint64_t p = key(words[w][k], words[w][k + 1]);
      pair_count[p] += freq[w];
      where[p].push_back(int32_t(w));
    }
  }
  // Max-heap on (count, then the smaller pair); entries whose count is stale are skipped.
  auto lower_priority = [](const std::pair<int64_t, uint64_t>& x, const std::pair<int64_t, uint64_t>& y) {
    return x.first != y.first ? x.first < y.first : x.second > y.second;
  };
  std::priority_queue<std::pair<int64_t, uint64_t>, std::vector<std::pair<int64_t, uint64_t>>, decltype(lower_priority)>
      heap(lower_priority);
  for (auto& [p, n] : pair_count) heap.emplace(n, p);

  std::vector<std::pair<int64_t, int64_t>> merges;
  std::vector<size_t> length(size_t(kFirstMerge), 1);  // id -> bytes of its token
  while (kFirstMerge + int64_t(merges.size()) < vocab_size && !heap.empty()) {
    auto [count, p] = heap.top();
    heap.pop();
    auto it = pair_count.find(p);
    if (it == pair_count.end() || it->second != count) continue;
    if (count < min_freq) break;
    int32_t a = int32_t(p >> 32), b = int32_t(p & 0xffffffffu);
    if (length[size_t(a)] + length[size_t(b)] > kMaxTokenBytes) {
      // Never learnable (a and b keep their lengths): drop it for good.
      pair_count.erase(it);
      where.erase(p);
      continue;
    }
    length.push_back(length[size_t(a)] + length[size_t(b)]);
    int32_t id = int32_t(kFirstMerge + int64_t(merges.size()));
    merges.emplace_back(a, b);
    std::vector<int32_t> touched = std::move(where[p]);
    where.erase(p);
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    std::unordered_set<uint64_t> changed;
    for (int32_t w : touched) {
      std::vector<int32_t>& sym = words[size_t(w)];
      std::vector<int32_t> merged;
      merged.reserve(sym.size());
      for (size_t k = 0; k < sym.size(); ++k) {
        if (k + 1 < sym.size() && sym[k] == a && sym[k + 1] == b) {
          merged.push_back(id);
          ++k;
        } else {
          merged.push_back(sym[k]);
        }
      }
      if (merged.size() == sym.size()) continue;  // a stale entry in `where`
      for (size_t k = 0; k + 1 < sym.size(); ++k) {
        uint64_t q = key(sym[k], sym[k + 1]);
        pair_count[q] -= freq[size_t(w)];
        changed.insert(q);
      }
      for (size_t k = 0; k + 1 < merged.size(); ++k) {
        uint64_t q = key(merged[k], merged[k + 1]);
        pair_count[q] += freq[size_t(w)];
        where[q].push_back(w);
        changed.insert(q);
      }
      sym = std::move(merged);
    }
    for (uint64_t q : changed) {
      auto c = pair_count.find(q);
      if (c->second <= 0)
        pair_count.erase(c);
      else
        heap.emplace(c->second, q);
    }
  }
  return BpeTokenizer(std::move(merges));
}

void BpeTokenizer::encode_chunk(std::string_view chunk, std::vector<int64_t>& out) const {
  std::vector<int64_t> sym;
  sym.reserve(chunk.size());
  for (char c : chunk) sym.push_back(kNumSpecial + static_cast<unsigned char>(c));
  while (sym.size() > 1) {
    int64_t best = -1;
    for (size_t k = 0; k + 1 < sym.size(); ++k) {
      auto it = rank_.find(key(sym[k], sym[k + 1]));
      if (it != rank_.end() && (best < 0 || it->second < best)) best = it->second;
    }
    if (best < 0) break;
    auto [a, b] = merges_[size_t(best)];
    size_t w = 0;
    for (size_t k = 0; k < sym.size(); ++k) {
      if (k + 1 < sym.size() && sym[k] == a && sym[k + 1] == b) {
        sym[w++] = kFirstMerge + best;
        ++k;
      } else {
        sym[w++] = sym[k];
      }
    }
    sym.resize(w);
  }
  out.insert(out.end(), sym.begin(), sym.end());
}

std::vector<int64_t> BpeTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> ids;
  ids.reserve(text.size() / 2);
  for (auto chunk : pretokenize(text)) encode_chunk(chunk, ids);
  return ids;
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids) {
    KS_CHECK(id >= 0 && id < vocab_size(), "tokenizer decode: id ", id, " is out of range for a bpe tokenizer (",
             vocab_size(), " ids)");
    out += bytes_[size_t(id)];
  }
  return out;
}

std::string BpeTokenizer::token(int64_t id) const {
  KS_CHECK(id >= 0 && id < vocab_size(), "tokenizer token: id ", id, " is out of range (", vocab_size(), " ids)");
  return id < kNumSpecial ? special_tokens()[size_t(id)] : bytes_[size_t(id)];
}

std::string BpeTokenizer::to_json() const {
  json j = detail::tokenizer_head("bpe");
  json m = json::array();
  for (auto [a, b] : merges_) m.push_back({a, b});
  j["merges"] = m;
  return detail::dump_tokenizer(j);
}

namespace detail {

BpeTokenizer bpe_tokenizer_from_json(const json& j, const std::string& where) {
  const json& list = entries(j, "merges", where);
  std::vector<std::pair<int64_t, int64_t>> merges;
  for (const json& m : list) {
    KS_CHECK(m.is_array() && m.size() == 2 && m[0].is_number_integer() && m[1].is_number_integer(),
             "load_tokenizer: ", where, ": merge ", merges.size(), " must be [left id, right id], got ",
             nn::json_excerpt(m));
    merges.emplace_back(m[0].get<int64_t>(), m[1].get<int64_t>());
  }
  try {
    return BpeTokenizer(std::move(merges));
  } catch (const Error& e) {
    throw Error(str("load_tokenizer: ", where, ": ", e.what()));
  }
}

}  // namespace detail

}  // namespace ks::data
