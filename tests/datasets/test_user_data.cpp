// tests/datasets/test_user_data.cpp — users' text and TSV files: language
// modelling streams, classification labels, seq2seq pairs, splits from files
// or cut by a seeded ratio, and errors naming file and line.
#include "support/testing.h"

#include <set>

#include "datasets/data_testing.h"

using namespace ks;
using namespace ks::data;
using namespace ks::testing;

namespace {

// The stream a language-model split was cut from.
std::vector<int64_t> stream_of(const Dataset& d) {
  std::vector<int64_t> s;
  for (const Example& e : d.examples) s.insert(s.end(), e.tokens.begin(), e.tokens.end());
  if (!d.examples.empty()) s.push_back(d.examples.back().target.back());
  return s;
}

std::string decode(const Dataset& d, const Ids& ids) {
  return d.tokenizer->decode(std::vector<int64_t>(ids.begin(), ids.end()));
}

}  // namespace

TEST_CASE("text language model: lines become one stream with <eos> after each") {
  TempDir dir;
  write_text(dir / "train.txt", "hello world\n\nfoo bar\r\n");
  write_text(dir / "valid.txt", "ab\n");
  write_text(dir / "test.txt", "xyz");
  auto byte = std::make_shared<ByteTokenizer>();
  Splits s = text_language_model({.train = dir / "train.txt", .valid = dir / "valid.txt", .test = dir / "test.txt"},
                                 {.tokenizer = byte, .seq_len = 4});
  std::vector<int64_t> expected = byte->encode("hello world");
  expected.push_back(kEosId);
  for (int64_t id : byte->encode("foo bar")) expected.push_back(id);
  expected.push_back(kEosId);
  CHECK(stream_of(s.train) == expected);
  CHECK(s.train.examples[0].tokens.size() == 4);
  CHECK(s.train.examples[0].target[0] == s.train.examples[0].tokens[1]);
  CHECK(stream_of(s.valid) == std::vector<int64_t>{4 + 'a', 4 + 'b', kEosId});
  CHECK(s.test.task == Task::LanguageModel);
  CHECK(s.test.vocab_size == 260);
  s.train.validate("text");
}

TEST_CASE("text language model: splits cut from one file by a seeded ratio, tokenizer trained on train") {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 40; ++i) text += "line" + std::to_string(i) + " common\n";
  write_text(dir / "all.txt", text);
  DataFiles files{.train = dir / "all.txt", .valid_fraction = 0.1, .test_fraction = 0.2, .split_seed = 3};
  TextOptions o{.train_tokenizer = {.type = "word"}, .seq_len = 3};
  Splits s = text_language_model(files, o);
  auto tok = std::dynamic_pointer_cast<const WordTokenizer>(s.train.tokenizer);
  REQUIRE(tok);
  // Lines per split: 40 * 0.2 = 8 test, 4 valid, 28 train; every line exactly once.
  auto lines_of = [&](const Dataset& d) {
    std::vector<std::string> words;
    for (int64_t id : stream_of(d))
      if (id != kEosId) words.push_back(tok->token(id));
    return words;
  };
  std::vector<std::string> train = lines_of(s.train), valid = lines_of(s.valid), test = lines_of(s.test);
  CHECK(train.size() == 2 * 28);
  CHECK(valid.size() == 2 * 4);
  CHECK(test.size() == 2 * 8);
  // Held-out lines' first words are unknown to a tokenizer trained on train only.
  for (size_t k = 0; k < test.size(); k += 2) CHECK(test[k] == "<unk>");
  CHECK(test[1] == "common");
  std::set<std::string> seen(train.begin(), train.end());
  CHECK(seen.size() == 28 + 1);
  // The same seed cuts the same way; another seed differently.
  CHECK(stream_of(text_language_model(files, o).train) == stream_of(s.train));
  files.split_seed = 4;
  CHECK(stream_of(text_language_model(files, o).train) != stream_of(s.train));
  CHECK(error_of([&] { text_language_model({.train = dir / "missing.txt"}); }) ==
        "text data: file not found: " + (dir / "missing.txt").string());
}

TEST_CASE("tsv classification: labels, header, last-tab split and truncation") {
  TempDir dir;
  write_text(dir / "train.tsv", "text\tlabel\ngood film\tpos\nbad\tneg\na\ttab\tpos\n\n");
  write_text(dir / "test.tsv", "text\tlabel\nfine\tneg\n");
  Splits s = tsv_classification({.train = dir / "train.tsv", .valid = dir / "test.tsv", .test = dir / "test.tsv"},
                                {.tokenizer = std::make_shared<ByteTokenizer>(), .max_length = 5, .header = true});
  CHECK(s.train.classes == std::vector<std::string>{"neg", "pos"});
  REQUIRE(s.train.size() == 3);
  CHECK(decode(s.train, s.train.examples[0].tokens) == "good ");  // cut to 5 bytes
  CHECK(s.train.examples[0].label == 1);
  CHECK(decode(s.train, s.train.examples[2].tokens) == "a\ttab");  // split at the last tab
  CHECK(s.test.examples[0].label == 0);
  s.train.validate("tsv");

  write_text(dir / "num.tsv", "x\t10\ny\t2\nz\t1\n");
  Splits n = tsv_classification({.train = dir / "num.tsv", .valid_fraction = 0, .test_fraction = 0});
  CHECK(n.train.classes == std::vector<std::string>{"1", "2", "10"});  // numeric order
  CHECK(n.train.examples[0].label == 2);
  CHECK(n.valid.size() == 0);
  TextOptions with_classes;
  with_classes.classes = {"10", "2", "1", "0"};
  Splits given = tsv_classification({.train = dir / "num.tsv", .valid_fraction = 0, .test_fraction = 0}, with_classes);
  CHECK(given.train.examples[0].label == 0);
  CHECK(given.train.num_classes() == 4);
}

TEST_CASE("tsv classification: bad lines and unknown labels name file and line") {
  TempDir dir;
  write_text(dir / "train.tsv", "good\tpos\nbad\tneg\n");
  write_text(dir / "valid.tsv", "ok\tpos\nmeh\tneutral\n");
  DataFiles f{.train = dir / "train.tsv", .valid = dir / "valid.tsv", .test = dir / "train.tsv"};
  CHECK(error_of([&] { tsv_classification(f); }) ==
        "tsv classification: " + (dir / "valid.tsv").string() + ":2: unknown label \"neutral\" (known: neg, pos)");
  write_text(dir / "valid.tsv", "ok\tpos\n\nno tab here\n");
  CHECK(error_of([&] { tsv_classification(f); }) ==
        "tsv classification: " + (dir / "valid.tsv").string() + ":3: expected \"text<TAB>label\", found no tab");
  write_text(dir / "valid.tsv", "ok\t\n");
  CHECK(error_of([&] { tsv_classification(f); }) ==
        "tsv classification: " + (dir / "valid.tsv").string() + ":1: empty label");
  CHECK(error_of([&] { tsv_classification({.train = dir / "train.tsv", .valid = dir / "nope.tsv"}); }) ==
        "tsv classification: file not found: " + (dir / "nope.tsv").string());
}

TEST_CASE("tsv classification: a class listed twice, or two labels of one number, is refused by name") {
  TempDir dir;
  write_text(dir / "train.tsv", "good\tpos\nbad\tneg\n");
  DataFiles f{.train = dir / "train.tsv", .valid_fraction = 0, .test_fraction = 0};
  // The second "pos" would take an id no example gets, and the model an output it never learns.
  TextOptions o;
  o.classes = {"pos", "neg", "pos"};
  CHECK(error_of([&] { tsv_classification(f, o); }) ==
        "tsv classification: classes: \"pos\" is listed twice (as class 0 and class 2)");
  // Integer labels are ordered by value: "01" and "1" would tie, their order then up to the sort.
  write_text(dir / "num.tsv", "a\t1\nb\t2\nc\t01\n");
  CHECK(error_of([&] { tsv_classification({.train = dir / "num.tsv", .valid_fraction = 0, .test_fraction = 0}); }) ==
        "tsv classification: " + (dir / "num.tsv").string() +
            ": the labels \"01\" and \"1\" are the same number; write each class one way");
}

TEST_CASE("user data: lines that are not UTF-8 load, with one warning per file naming the first") {
  TempDir dir;
  // Latin-1 bytes (\xe9, \xff): the char tokenizer would quietly make each one a symbol of its own.
  write_text(dir / "pairs.tsv",
             "abc\tcba\ncaf\xe9\t\xe9"
             "fac\nxy\tyx\n\xff\tz\n");
  write_text(dir / "clean.tsv", "ab\tba\n");
  const std::string tail =
      " (is the file in another encoding? such bytes are kept as bytes, not read as the characters they meant)";
  for (const char* type : {"char", "bpe", "byte", "word"}) {
    CAPTURE(type);
    Splits s = tsv_seq2seq({.train = dir / "pairs.tsv", .valid = dir / "clean.tsv", .test = dir / "pairs.tsv"},
                           {.train_tokenizer = {.type = type, .vocab_size = std::string(type) == "bpe" ? 270 : 0}});
    CHECK(s.train.size() == 4);
    CHECK(s.warnings == std::vector<std::string>{"tsv seq2seq: " + (dir / "pairs.tsv").string() +
                                                 ":2: not valid UTF-8, and so is 1 more line" + tail});
  }
  write_text(dir / "lines.txt", "one\ntwo \xc3\x28\nthree\n");
  CHECK(text_language_model({.train = dir / "lines.txt", .valid = dir / "lines.txt", .test = dir / "lines.txt"},
                            {.seq_len = 4})
            .warnings == std::vector<std::string>{"text data: " + (dir / "lines.txt").string() +
                                                  ":2: not valid UTF-8 (the only such line)" + tail});
  write_text(dir / "cls.tsv", "caf\xc3\xa9\tpos\n\xe2\x82\tneg\n\xed\xa0\x80\tneg\n\xf0\x9f\x98\x80\tpos\n");
  CHECK(tsv_classification({.train = dir / "cls.tsv", .valid = dir / "cls.tsv", .test = dir / "cls.tsv"}).warnings ==
        std::vector<std::string>{"tsv classification: " + (dir / "cls.tsv").string() +
                                 ":2: not valid UTF-8, and so is 1 more line" + tail});  // a cut character, a surrogate
  CHECK(tsv_seq2seq({.train = dir / "clean.tsv", .valid = dir / "clean.tsv", .test = dir / "clean.tsv"})
            .warnings.empty());
}

TEST_CASE("tsv seq2seq: pairs with a shared or separate target tokenizer") {
  TempDir dir;
  write_text(dir / "pairs.tsv", "abc\tcba!\nhello\tolleh\nxy\tyx\n");
  DataFiles f{.train = dir / "pairs.tsv", .valid = dir / "pairs.tsv", .test = dir / "pairs.tsv"};
  Splits s = tsv_seq2seq(f, {.train_tokenizer = {.type = "char"}});
  CHECK(s.train.task == Task::Seq2Seq);
  CHECK(s.train.tokenizer == s.train.target_tokenizer);
  CHECK(s.train.vocab_size == kNumSpecial + 10);  // a b c e h l o x y !
  CHECK(decode(s.train, s.train.examples[1].target) == "olleh");
  s.train.validate("pairs");

  auto target_tok = std::make_shared<ByteTokenizer>();
  Splits t = tsv_seq2seq(f, {.train_tokenizer = {.type = "char"}, .target_tokenizer = target_tok});
  CHECK(t.train.target_vocab_size == 260);
  CHECK(t.train.vocab_size == kNumSpecial + 9);  // trained on the sources only: no "!"
  CHECK(t.train.examples[2].target == Ids{4 + 'y', 4 + 'x'});

  write_text(dir / "bad.tsv", "a\tb\tc\n");
  CHECK(error_of([&] { tsv_seq2seq({.train = dir / "bad.tsv"}); }) ==
        "tsv seq2seq: " + (dir / "bad.tsv").string() + ":1: expected \"source<TAB>target\" with exactly one tab");
}
