// tests/datasets/test_user_data_checks.cpp — what the readers of users' text
// and TSV files refuse rather than train on silently (issue 51): files in
// UTF-16/UTF-32 (a byte-order mark, or NULs between characters), TSV lines
// with an empty side, every bad line named in one error (up to a limit), files
// that are no regular file; and the contiguous hold-out (holdout "last").
#include "support/testing.h"

#include <sys/stat.h>

#include "datasets/data_testing.h"
#include "datasets/io.h"

using namespace ks;
using namespace ks::data;
using namespace ks::testing;

namespace {

// `text` (ASCII) in UTF-16 or UTF-32, little or big endian, without a byte-order mark.
std::string widen(const std::string& text, int width, bool big_endian) {
  std::string out;
  for (char c : text) {
    std::string unit(size_t(width), '\0');
    unit[big_endian ? size_t(width) - 1 : 0] = c;
    out += unit;
  }
  return out;
}

// The lines of a language-model split (its stream cut at each <eos>), each
// as its tokens decoded and joined by spaces.
std::vector<std::string> lines_of(const Dataset& d) {
  std::vector<int64_t> stream;
  for (const Example& e : d.examples) stream.insert(stream.end(), e.tokens.begin(), e.tokens.end());
  if (!d.examples.empty()) stream.push_back(d.examples.back().target.back());
  std::vector<std::string> lines(1);
  for (int64_t id : stream) {
    if (id == kEosId)
      lines.emplace_back();
    else
      lines.back() += (lines.back().empty() ? "" : " ") + d.tokenizer->decode({id});
  }
  lines.pop_back();  // after the last <eos>
  return lines;
}

}  // namespace

TEST_CASE("user data: a file in UTF-16 or UTF-32 is refused, naming the file and the encoding") {
  TempDir dir;
  const std::string text = "hello world\nsecond line\n", tsv = "hello\tworld\nab\tba\n";
  struct Case {
    std::string bytes;
    std::string says;
  };
  const std::string bom16le("\xFF\xFE", 2), bom16be("\xFE\xFF", 2), bom32le("\xFF\xFE\0\0", 4),
      bom32be("\0\0\xFE\xFF", 4);
  const std::vector<Case> cases = {
      {bom16le + widen(text, 2, false),
       "looks like UTF-16 LE (byte-order mark FF FE), not UTF-8: convert it first, "
       "e.g. iconv -f UTF-16 -t UTF-8 "},
      {bom16be + widen(text, 2, true), "looks like UTF-16 BE (byte-order mark FE FF)"},
      {bom32le + widen(text, 4, false), "looks like UTF-32 LE (byte-order mark FF FE 00 00)"},
      {bom32be + widen(text, 4, true), "looks like UTF-32 BE (byte-order mark 00 00 FE FF)"},
      {widen(text, 2, false),
       "looks like UTF-16 LE (24 of its first 48 bytes are NUL, nearly all at odd offsets), "
       "not UTF-8: convert it first, e.g. iconv -f UTF-16LE -t UTF-8 "},
      {widen(text, 2, true), "looks like UTF-16 BE (24 of its first 48 bytes are NUL, nearly all at even offsets)"},
      {widen(text, 4, false), "looks like UTF-32 LE (72 of its first 96 bytes are NUL, as in UTF-32 LE)"},
      {widen(text, 4, true), "looks like UTF-32 BE (72 of its first 96 bytes are NUL, as in UTF-32 BE)"},
      {std::string(100, '\0') + "abc", "is not UTF-8 text: 100 of its first 103 bytes are NUL (a binary file?)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.says);
    const std::filesystem::path file = dir / "data.txt";
    write_text(file, c.bytes);
    const std::string err = error_of([&] { text_language_model({.train = file}); });
    CHECK(err.rfind("text data: " + file.string() + " " + c.says, 0) == 0);
  }
  // Each reader, whichever split the file is given as; TSV too.
  write_text(dir / "ok.tsv", tsv);
  write_text(dir / "wide.tsv", bom16le + widen(tsv, 2, false));
  CHECK(error_of([&] {
          tsv_seq2seq({.train = dir / "ok.tsv", .test = dir / "wide.tsv"});
        }).rfind("tsv seq2seq: " + (dir / "wide.tsv").string() + " looks like UTF-16 LE", 0) == 0);
  CHECK(error_of([&] {
          tsv_classification({.train = dir / "wide.tsv"});
        }).rfind("tsv classification: " + (dir / "wide.tsv").string() + " looks like UTF-16 LE", 0) == 0);
  CHECK(error_of([&] { check_text_encoding(bom16le + "x", "p.txt", "who"); }) ==
        "who: p.txt looks like UTF-16 LE (byte-order mark FF FE), not UTF-8: convert it first, e.g. iconv -f UTF-16 "
        "-t UTF-8 p.txt > p.txt.utf8");
}

TEST_CASE("user data: UTF-8 (with its byte-order mark too), Latin-1 and a few NULs still load") {
  TempDir dir;
  for (const std::string& bytes : {std::string("\xEF\xBB\xBFhello\nworld\n"), std::string("caf\xe9\nna\xefve\n"),
                                   std::string("a\0b\nsome more text here\n", 24), std::string("\xFF\n")}) {
    write_text(dir / "t.txt", bytes);
    CHECK(error_of([&] { text_language_model({.train = dir / "t.txt", .valid_fraction = 0, .test_fraction = 0}); }) ==
          "no error");
  }
  CHECK_NOTHROW(check_text_encoding("", "empty.txt", "who"));
  // The sample is the first 4 KB: NULs further on are not looked at.
  CHECK_NOTHROW(check_text_encoding(std::string(kEncodingSampleBytes, 'a') + std::string(100, '\0'), "p", "who"));
}

TEST_CASE("tsv seq2seq: an empty source or target is refused by file and line") {
  TempDir dir;
  write_text(dir / "pairs.tsv", "abc\tcba\nword\t\n");
  CHECK(error_of([&] { tsv_seq2seq({.train = dir / "pairs.tsv"}); }) ==
        "tsv seq2seq: " + (dir / "pairs.tsv").string() + ":2: empty target");
  write_text(dir / "pairs.tsv", "\tcba\nab\tba\n");
  CHECK(error_of([&] { tsv_seq2seq({.train = dir / "pairs.tsv"}); }) ==
        "tsv seq2seq: " + (dir / "pairs.tsv").string() + ":1: empty source");
  write_text(dir / "pairs.tsv", "ab\tba\n\t\r\n");
  CHECK(error_of([&] { tsv_seq2seq({.train = dir / "pairs.tsv"}); }) ==
        "tsv seq2seq: " + (dir / "pairs.tsv").string() + ":2: empty source and target");
}

TEST_CASE("tsv: every bad line is named in one error, in file order, up to 20 and then counted") {
  TempDir dir;
  const std::string f = (dir / "pairs.tsv").string();
  write_text(dir / "pairs.tsv", "ok\tko\nno tab\nab\t\nx\ty\tz\n\tsrc\nfine\tenif\n");
  // Cut by a ratio (lines in three splits) and given as all three splits (each line read thrice): each named once.
  for (const DataFiles& files : {DataFiles{.train = f, .valid_fraction = 0.3, .test_fraction = 0.3},
                                 DataFiles{.train = f, .valid = f, .test = f}}) {
    CHECK(error_of([&] { tsv_seq2seq(files); }) ==
          "tsv seq2seq: 4 bad lines:\n  " + f + ":2: expected \"source<TAB>target\" with exactly one tab\n  " + f +
              ":3: empty target\n  " + f + ":4: expected \"source<TAB>target\" with exactly one tab\n  " + f +
              ":5: empty source");
  }
  // Files in the order of the splits, train's first.
  write_text(dir / "train.tsv", "a\tb\nc\n");
  write_text(dir / "valid.tsv", "d\n");
  CHECK(error_of([&] { tsv_seq2seq({.train = dir / "train.tsv", .valid = dir / "valid.tsv"}); }) ==
        "tsv seq2seq: 2 bad lines:\n  " + (dir / "train.tsv").string() +
            ":2: expected \"source<TAB>target\" with exactly one tab\n  " + (dir / "valid.tsv").string() +
            ":1: expected \"source<TAB>target\" with exactly one tab");
  // 25 bad lines: the first 20 named, then how many more.
  std::string many;
  for (int i = 0; i < 25; ++i) many += "good\tline\nbad" + std::to_string(i) + "\t\n";
  write_text(dir / "many.tsv", many);
  const std::string err = error_of([&] { tsv_seq2seq({.train = dir / "many.tsv"}); });
  CHECK(err.rfind("tsv seq2seq: 25 bad lines:\n  " + (dir / "many.tsv").string() + ":2: empty target\n", 0) == 0);
  CHECK(err.find(":40: empty target\n  and 5 more") != std::string::npos);
  CHECK(err.find(":42:") == std::string::npos);
}

TEST_CASE("tsv classification: bad lines and unknown labels are each named in one error") {
  TempDir dir;
  const std::string t = (dir / "train.tsv").string(), v = (dir / "valid.tsv").string();
  write_text(dir / "train.tsv", "good\tpos\nno tab\nbad\tneg\nmeh\t\n");
  CHECK(error_of([&] { tsv_classification({.train = t, .valid_fraction = 0, .test_fraction = 0}); }) ==
        "tsv classification: 2 bad lines:\n  " + t + ":2: expected \"text<TAB>label\", found no tab\n  " + t +
            ":4: empty label");
  write_text(dir / "train.tsv", "good\tpos\nbad\tneg\n");
  write_text(dir / "valid.tsv", "ok\tpos\nmeh\tneutral\nugh\tawful\n");
  CHECK(error_of([&] { tsv_classification({.train = t, .valid = v, .test = t}); }) ==
        "tsv classification: 2 bad lines:\n  " + v + ":2: unknown label \"neutral\" (known: neg, pos)\n  " + v +
            ":3: unknown label \"awful\" (known: neg, pos)");
}

TEST_CASE("user data: a data file that is no regular file is refused at once, naming it") {
  TempDir dir;
  const std::string fifo = (dir / "data.fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);  // no writer: a plain open would block forever
  CHECK(error_of([&] { text_language_model({.train = fifo}); }) ==
        "text data: " + fifo + " is not a regular file (it is a FIFO)");
  write_text(dir / "ok.tsv", "a\tb\n");
  CHECK(error_of([&] { tsv_seq2seq({.train = dir / "ok.tsv", .valid = "/dev/zero"}); }) ==
        "tsv seq2seq: /dev/zero is not a regular file (it is a character device)");
  CHECK(error_of([&] { tsv_classification({.train = dir.path()}); }) ==
        "tsv classification: " + dir.path().string() + " is a directory, expected a file");
}

TEST_CASE("user data: holdout last cuts valid and test from the end of the file, in order") {
  SplitIndices s = split_last(10, 0.2, 0.1);
  CHECK(s.train == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6});
  CHECK(s.valid == std::vector<int64_t>{7, 8});
  CHECK(s.test == std::vector<int64_t>{9});
  // The same counts as the random cut.
  SplitIndices r = split_by_ratio(10, 0.2, 0.1, 5);
  CHECK(r.valid.size() == 2);
  CHECK(r.test.size() == 1);
  CHECK(split_last(3, 0, 0).train.size() == 3);
  CHECK(error_of([] { split_last(3, 0.8, 0.5); }) ==
        "split: fractions valid 0.8 and test 0.5 must be >= 0 and add up to at most 1");

  TempDir dir;
  std::string text;
  for (int i = 0; i < 20; ++i) text += "w" + std::to_string(i) + "\n\n";  // blank lines do not count
  write_text(dir / "all.txt", text);
  DataFiles files{.train = dir / "all.txt", .valid_fraction = 0.1, .test_fraction = 0.15, .holdout = Holdout::Last};
  TextOptions o{.train_tokenizer = {.type = "word"}, .seq_len = 2};
  Splits s2 = text_language_model(files, o);
  CHECK(lines_of(s2.test) == std::vector<std::string>{"<unk>", "<unk>", "<unk>"});  // w17 w18 w19, unseen in train
  CHECK(lines_of(s2.valid).size() == 2);
  std::vector<std::string> train = lines_of(s2.train);
  REQUIRE(train.size() == 15);
  for (int i = 0; i < 15; ++i) CHECK(train[size_t(i)] == "w" + std::to_string(i));
  // Given as a file, a split is not cut: holdout changes nothing then.
  write_text(dir / "v.txt", "w0\n");
  Splits given = text_language_model(
      {.train = dir / "all.txt", .valid = dir / "v.txt", .test_fraction = 0.1, .holdout = Holdout::Last}, o);
  CHECK(lines_of(given.train).size() == 18);
  CHECK(lines_of(given.valid) == std::vector<std::string>{"w0"});
  CHECK(holdout_name(Holdout::Last) == std::string("last"));
  CHECK(holdout_of("random") == Holdout::Random);
  CHECK_FALSE(holdout_of("tail").has_value());
}
