// datasets/listops.cpp — the ListOps generator, evaluator and TSV cache.
#include "datasets/listops.h"

#include <algorithm>
#include <charconv>

#include "core/error.h"
#include "core/parallel.h"
#include "datasets/io.h"

namespace ks::data {
namespace fs = std::filesystem;

namespace {

constexpr int32_t kDigit0 = int32_t(kNumSpecial);  // "0" .. "9" = 4 .. 13
constexpr int32_t kFirstOp = kDigit0 + 10;         // [MIN [MAX [MED [SM = 14 .. 17
constexpr int32_t kClose = kFirstOp + 4;           // ] = 18
constexpr int64_t kMaxAttempts = 1000000;          // per example, so bad options fail instead of hanging
enum Op { kMin, kMax, kMed, kSm };

int64_t apply(int op, std::vector<int64_t>& v) {
  switch (op) {
    case kMin: return *std::min_element(v.begin(), v.end());
    case kMax: return *std::max_element(v.begin(), v.end());
    case kMed: {
      std::sort(v.begin(), v.end());
      size_t n = v.size();
      return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }
    default: {
      int64_t s = 0;
      for (int64_t x : v) s += x;
      return s % 10;
    }
  }
}

// Appends one node to out and returns its value; -1 once out is longer than
// `limit` (the tree will be rejected, so the rest is not generated).
int64_t generate_node(Rng& rng, int64_t depth, const ListOpsOptions& o, Ids& out) {
  if (int64_t(out.size()) > o.max_length) return -1;
  bool op_node = depth < o.max_depth && rng.uniform() <= 0.25;
  if (!op_node) {
    int64_t d = rng.below(10);
    out.push_back(kDigit0 + int32_t(d));
    return d;
  }
  int op = int(rng.below(4));
  int64_t nargs = rng.between(2, o.max_args);
  out.push_back(kFirstOp + op);
  std::vector<int64_t> values;
  for (int64_t k = 0; k < nargs; ++k) {
    int64_t v = generate_node(rng, depth + 1, o, out);
    if (v < 0) return -1;
    values.push_back(v);
  }
  out.push_back(kClose);
  return apply(op, values);
}

void check_options(const ListOpsOptions& o) {
  KS_CHECK(o.min_length >= 1 && o.min_length <= o.max_length, "listops: need 1 <= min_length <= max_length, got ",
           o.min_length, " and ", o.max_length);
  KS_CHECK(o.max_depth >= 2, "listops: max_depth must be >= 2 (an operator needs one level below it), got ",
           o.max_depth);
  KS_CHECK(o.max_args >= 2, "listops: max_args must be >= 2, got ", o.max_args);
  KS_CHECK(o.min_length <= 1 || o.max_length >= 4, "listops: max_length ", o.max_length,
           " leaves no room for an operator (at least 4 tokens)");
}

Dataset empty_set() {
  Dataset d;
  d.task = Task::Classification;
  d.vocab_size = kListOpsVocab;
  for (int v = 0; v < 10; ++v) d.classes.push_back(std::to_string(v));
  d.tokenizer = listops_tokenizer();
  return d;
}

}  // namespace

std::shared_ptr<const WordTokenizer> listops_tokenizer() {
  static const auto tok = std::make_shared<const WordTokenizer>(
      std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "[MIN", "[MAX", "[MED", "[SM", "]"},
      WordOptions{.lowercase = false, .split_punctuation = false});
  return tok;
}

int64_t listops_evaluate(const Ids& tokens) {
  // One stack frame per open operator: its op and the values seen so far.
  std::vector<std::pair<int, std::vector<int64_t>>> stack;
  int64_t result = -1;
  for (size_t i = 0; i < tokens.size(); ++i) {
    int32_t t = tokens[i];
    KS_CHECK(result < 0, "listops_evaluate: token ", i, " follows a complete expression");
    int64_t value = -1;
    if (t >= kDigit0 && t < kDigit0 + 10) {
      value = t - kDigit0;
    } else if (t >= kFirstOp && t < kClose) {
      stack.push_back({t - kFirstOp, {}});
      continue;
    } else if (t == kClose) {
      KS_CHECK(!stack.empty(), "listops_evaluate: token ", i, ": \"]\" closes nothing");
      KS_CHECK(stack.back().second.size() >= 1, "listops_evaluate: token ", i, ": an operator with no arguments");
      value = apply(stack.back().first, stack.back().second);
      stack.pop_back();
    } else {
      throw Error(str("listops_evaluate: token ", i, " has id ", t, ", which is not a ListOps token"));
    }
    if (stack.empty())
      result = value;
    else
      stack.back().second.push_back(value);
  }
  KS_CHECK(result >= 0, "listops_evaluate: the expression is incomplete (", stack.size(), " operators left open)");
  return result;
}

Dataset generate_listops(int64_t count, const ListOpsOptions& o, int split) {
  check_options(o);
  KS_CHECK(count >= 0, "listops: count must be >= 0, got ", count);
  Dataset d = empty_set();
  d.examples.resize(size_t(count));
  parallel_for(0, count, 16, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      Rng rng(o.seed, uint64_t(split) << 48 | uint64_t(i));
      Example& e = d.examples[size_t(i)];
      for (int64_t attempt = 0;; ++attempt) {
        KS_CHECK(attempt < kMaxAttempts, "listops: no tree with a length in [", o.min_length, ", ", o.max_length,
                 "] after ", kMaxAttempts, " draws; widen the range or change max_depth / max_args");
        e.tokens.clear();
        int64_t v = generate_node(rng, 1, o, e.tokens);
        int64_t len = int64_t(e.tokens.size());
        if (v >= 0 && len >= o.min_length && len <= o.max_length) {
          e.label = v;
          break;
        }
      }
      e.tokens.shrink_to_fit();
    }
  });
  return d;
}

void write_listops_tsv(const fs::path& path, const Dataset& data) {
  auto tok = listops_tokenizer();
  std::string out = "Source\tTarget\n";
  for (const Example& e : data.examples) {
    for (size_t k = 0; k < e.tokens.size(); ++k) {
      if (k) out += ' ';
      out += tok->token(e.tokens[k]);
    }
    out += '\t';
    out += std::to_string(e.label);
    out += '\n';
  }
  write_file_atomic(path, out, "listops cache");
}

Dataset read_listops_tsv(const fs::path& path, const ListOpsOptions& o, int64_t expected_count) {
  std::vector<std::string> lines = split_lines(read_file(path, "listops cache"));
  auto where = [&](size_t ln) { return str("listops cache: ", path.string(), ":", ln + 1, ": "); };
  const std::string fix = " (delete the file to generate it again)";
  KS_CHECK(!lines.empty() && lines[0] == "Source\tTarget", "listops cache: ", path.string(),
           ": the first line must be \"Source<TAB>Target\"", fix);
  auto tok = listops_tokenizer();
  Dataset d = empty_set();
  for (size_t ln = 1; ln < lines.size(); ++ln) {
    const std::string& line = lines[ln];
    size_t tab = line.find('\t');
    KS_CHECK(tab != std::string::npos && line.find('\t', tab + 1) == std::string::npos, where(ln),
             "expected \"<tokens><TAB><label>\"", fix);
    Example e;
    std::string_view label(line.data() + tab + 1, line.size() - tab - 1);
    auto [end, ec] = std::from_chars(label.data(), label.data() + label.size(), e.label);
    KS_CHECK(ec == std::errc() && end == label.data() + label.size() && e.label >= 0 && e.label <= 9, where(ln),
             "label \"", label, "\" is not a digit 0-9", fix);
    for (auto& w : tok->split(std::string_view(line.data(), tab))) {
      int64_t id = tok->id(w);
      KS_CHECK(id != kUnkId, where(ln), "unknown token \"", w, "\"", fix);
      e.tokens.push_back(int32_t(id));
    }
    int64_t len = int64_t(e.tokens.size());
    KS_CHECK(len >= o.min_length && len <= o.max_length, where(ln), len, " tokens, outside the range [", o.min_length,
             ", ", o.max_length, "]", fix);
    int64_t value = -1;
    try {
      value = listops_evaluate(e.tokens);
    } catch (const Error& err) {
      throw Error(where(ln) + "malformed expression: " + err.what() + fix);
    }
    KS_CHECK(value == e.label, where(ln), "label ", e.label, " but the expression's value is ", value, fix);
    d.examples.push_back(std::move(e));
  }
  KS_CHECK(expected_count < 0 || d.size() == expected_count, "listops cache: ", path.string(), " holds ", d.size(),
           " examples, expected ", expected_count, fix);
  return d;
}

Splits listops(const ListOpsOptions& o, const ListOpsSizes& sizes, const fs::path& cache) {
  check_options(o);
  Splits out;
  Dataset* dest[3] = {&out.train, &out.valid, &out.test};
  int64_t counts[3] = {sizes.train, sizes.valid, sizes.test};
  const char* names[3] = {"train", "valid", "test"};
  for (int s = 0; s < 3; ++s) {
    if (cache.empty()) {
      *dest[s] = generate_listops(counts[s], o, s);
      continue;
    }
    fs::path file = cache / "listops" /
                    str("len", o.min_length, "-", o.max_length, "_depth", o.max_depth, "_args", o.max_args, "_seed",
                        o.seed, "_", names[s], counts[s], ".tsv");
    std::error_code ec;
    if (fs::exists(file, ec)) {
      *dest[s] = read_listops_tsv(file, o, counts[s]);
    } else {
      *dest[s] = generate_listops(counts[s], o, s);
      write_listops_tsv(file, *dest[s]);
    }
  }
  return out;
}

}  // namespace ks::data
