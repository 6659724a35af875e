// tests/datasets/test_listops.cpp — ListOps: generated expressions checked by
// an independent evaluator written here (over the token text), the tree
// limits (depth, argument count, length), seeding, the TSV cache and its
// corruption errors.
#include "support/testing.h"

#include <set>

#include "datasets/data_testing.h"

using namespace ks;
using namespace ks::data;
using namespace ks::testing;
namespace fs = std::filesystem;

namespace {

// Evaluates words[pos...] recursively; records the deepest nesting (a digit
// at the root has depth 1) and the argument counts seen.
struct Checker {
  std::vector<std::string> words{};
  size_t pos = 0;
  int64_t max_depth_seen = 0;
  std::vector<int64_t> arg_counts{};

  int64_t node(int64_t depth) {
    REQUIRE(pos < words.size());
    max_depth_seen = std::max(max_depth_seen, depth);
    std::string w = words[pos++];
    if (w.size() == 1 && w[0] >= '0' && w[0] <= '9') return w[0] - '0';
    REQUIRE((w == "[MIN" || w == "[MAX" || w == "[MED" || w == "[SM"));
    std::vector<int64_t> args;
    while (pos < words.size() && words[pos] != "]") args.push_back(node(depth + 1));
    REQUIRE(pos < words.size());
    ++pos;  // "]"
    arg_counts.push_back(int64_t(args.size()));
    std::sort(args.begin(), args.end());
    if (w == "[MIN") return args.front();
    if (w == "[MAX") return args.back();
    if (w == "[SM") {
      int64_t s = 0;
      for (int64_t a : args) s += a;
      return s % 10;
    }
    size_t n = args.size();  // median, floor of the mean of the middle two when even
    return n % 2 == 1 ? args[n / 2] : (args[n / 2 - 1] + args[n / 2]) / 2;
  }
};

std::vector<std::string> words_of(const Example& e) {
  std::vector<std::string> w;
  for (int32_t id : e.tokens) w.push_back(listops_tokenizer()->token(id));
  return w;
}

Ids encode(const std::string& text) { return compact_ids(listops_tokenizer()->encode(text)); }

}  // namespace

TEST_CASE("listops: vocabulary and hand-evaluated expressions") {
  auto tok = listops_tokenizer();
  CHECK(tok->vocab_size() == kListOpsVocab);
  CHECK(tok->encode("0 9 [MIN [MAX [MED [SM ]") == std::vector<int64_t>{4, 13, 14, 15, 16, 17, 18});
  CHECK(listops_evaluate(encode("[MAX 2 9 [MIN 4 7 ] 0 ]")) == 9);
  CHECK(listops_evaluate(encode("[MED 1 2 3 4 ]")) == 2);
  CHECK(listops_evaluate(encode("[MED 3 1 2 ]")) == 2);
  CHECK(listops_evaluate(encode("[SM 5 6 7 ]")) == 8);
  CHECK(listops_evaluate(encode("7")) == 7);
  CHECK_THROWS_WITH_AS(listops_evaluate(encode("[MAX 2 9")),
                       "listops_evaluate: the expression is incomplete (1 operators left open)", Error);
  CHECK_THROWS_WITH_AS(listops_evaluate(encode("[MAX 2 ] 3")),
                       "listops_evaluate: token 3 follows a complete expression", Error);
  CHECK_THROWS_WITH_AS(listops_evaluate(Ids{14, 2}), "listops_evaluate: token 1 has id 2, which is not a ListOps token",
                       Error);
}

TEST_CASE("listops: generated labels equal an independent evaluation, trees respect the limits") {
  ListOpsOptions o{.min_length = 20, .max_length = 80, .max_depth = 6, .max_args = 5, .seed = 3};
  Dataset d = generate_listops(300, o, 0);
  CHECK(d.task == Task::Classification);
  CHECK(d.num_classes() == 10);
  CHECK(d.vocab_size == kListOpsVocab);
  d.validate("listops");
  std::set<int64_t> labels;
  int64_t deepest = 0;
  for (const Example& e : d.examples) {
    Checker c{words_of(e)};
    CHECK(c.node(1) == e.label);
    CHECK(c.pos == c.words.size());  // one complete expression
    CHECK(int64_t(e.tokens.size()) >= o.min_length);
    CHECK(int64_t(e.tokens.size()) <= o.max_length);
    CHECK(c.max_depth_seen <= o.max_depth);
    for (int64_t n : c.arg_counts) CHECK((n >= 2 && n <= o.max_args));
    deepest = std::max(deepest, c.max_depth_seen);
    labels.insert(e.label);
  }
  CHECK(deepest == o.max_depth);  // deep trees do occur
  CHECK(labels.size() >= 8);
}

TEST_CASE("listops: LRA default lengths") {
  Dataset d = generate_listops(4, {}, 2);
  for (const Example& e : d.examples) {
    CHECK(e.tokens.size() >= 500);
    CHECK(e.tokens.size() <= 2000);
    Checker c{words_of(e)};
    CHECK(c.node(1) == e.label);
    CHECK(c.max_depth_seen <= 10);
  }
}

TEST_CASE("listops: seeded, with separate streams per split") {
  ListOpsOptions o{.min_length = 10, .max_length = 40, .seed = 1};
  Dataset a = generate_listops(20, o, 0), b = generate_listops(20, o, 0), v = generate_listops(20, o, 1);
  o.seed = 2;
  Dataset c = generate_listops(20, o, 0);
  auto same = [](const Dataset& x, const Dataset& y) {
    for (size_t i = 0; i < x.examples.size(); ++i)
      if (x.examples[i].tokens != y.examples[i].tokens) return false;
    return true;
  };
  CHECK(same(a, b));
  CHECK_FALSE(same(a, v));
  CHECK_FALSE(same(a, c));
  // Example i does not depend on how many are generated.
  CHECK(generate_listops(5, {.min_length = 10, .max_length = 40, .seed = 1}, 0).examples[4].tokens ==
        a.examples[4].tokens);
  CHECK_THROWS_WITH_AS(generate_listops(1, {.min_length = 2, .max_length = 3}, 0),
                       "listops: max_length 3 leaves no room for an operator (at least 4 tokens)", Error);
}

TEST_CASE("listops: the TSV cache is written once, read back, and checked") {
  TempDir dir;
  ListOpsOptions o{.min_length = 10, .max_length = 40, .seed = 5};
  Splits first = listops(o, {.train = 30, .valid = 5, .test = 5}, dir.path());
  fs::path file = dir / "listops/len10-40_depth10_args10_seed5_train30.tsv";
  REQUIRE(fs::exists(file));
  std::string text = ks::testing::read_text(file);
  CHECK(text.rfind("Source\tTarget\n", 0) == 0);
  Splits again = listops(o, {.train = 30, .valid = 5, .test = 5}, dir.path());
  for (size_t i = 0; i < 30; ++i) {
    CHECK(again.train.examples[i].tokens == first.train.examples[i].tokens);
    CHECK(again.train.examples[i].label == first.train.examples[i].label);
  }
  CHECK(again.test.examples[4].tokens == first.test.examples[4].tokens);

  std::vector<std::string> lines = split_lines(text);
  auto rewrite_line = [&](size_t k, const std::string& line) {
    std::vector<std::string> l = lines;
    l[k] = line;
    std::string out;
    for (auto& s : l) out += s + "\n";
    write_text(file, out);
  };
  std::string src = lines[2].substr(0, lines[2].find('\t'));
  int64_t value = first.train.examples[1].label;
  const std::string where = "listops cache: " + file.string() + ":3: ";
  const std::string fix = " (delete the file to generate it again)";
  rewrite_line(2, src + "\t" + std::to_string((value + 1) % 10));
  CHECK(error_of([&] { listops(o, {.train = 30, .valid = 5, .test = 5}, dir.path()); }) ==
        where + "label " + std::to_string((value + 1) % 10) + " but the expression's value is " +
            std::to_string(value) + fix);
  rewrite_line(2, "[MAX 1 [FIRST 2 ] ]\t1");
  CHECK(error_of([&] { read_listops_tsv(file, o); }) == where + "unknown token \"[FIRST\"" + fix);
  rewrite_line(2, src);
  CHECK(error_of([&] { read_listops_tsv(file, o); }) == where + "expected \"<tokens><TAB><label>\"" + fix);
  rewrite_line(2, src + "\tx");
  CHECK(error_of([&] { read_listops_tsv(file, o); }) == where + "label \"x\" is not a digit 0-9" + fix);
  rewrite_line(2, "[MAX 1 2 3 4 5 6 7 8 9 ] ]\t9");
  CHECK(error_of([&] { read_listops_tsv(file, o); }).find(where + "malformed expression: listops_evaluate:") == 0);
  rewrite_line(0, "Source,Target");
  CHECK(error_of([&] { read_listops_tsv(file, o); }) ==
        "listops cache: " + file.string() + ": the first line must be \"Source<TAB>Target\"" + fix);
  rewrite_line(2, lines[2]);  // restored; now drop the last line
  lines.pop_back();
  rewrite_line(0, lines[0]);
  CHECK(error_of([&] { listops(o, {.train = 30, .valid = 5, .test = 5}, dir.path()); }) ==
        "listops cache: " + file.string() + " holds 29 examples, expected 30" + fix);
}
