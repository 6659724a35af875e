// tests/datasets/test_fashion_mnist.cpp — the gzipped IDX reader on tiny
// files made here (good ones, and malformed: missing, not gzip, truncated
// gzip, wrong magic, short payload, bad label, count mismatch), the
// Fashion-MNIST splits over fake files, and the Debian package's files when
// they are installed.
#include "support/testing.h"

#include <sys/stat.h>

#include <set>

#include "datasets/data_testing.h"
#include "datasets/io.h"

using namespace ks;
using namespace ks::data;
using namespace ks::testing;
namespace fs = std::filesystem;

namespace {

std::string be32(uint32_t v) { return {char(v >> 24), char(v >> 16 & 0xff), char(v >> 8 & 0xff), char(v & 0xff)}; }
// An IDX image file of `count` images whose pixel j of image i is (i * 31 + j) % 256.
std::string idx_images(uint32_t count, uint32_t rows, uint32_t cols, uint32_t stored = UINT32_MAX) {
  std::string b = be32(2051) + be32(count) + be32(rows) + be32(cols);
  uint32_t n = stored == UINT32_MAX ? count : stored;
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t j = 0; j < rows * cols; ++j) b.push_back(char((i * 31 + j) % 256));
  return b;
}
std::string idx_labels(const std::vector<int>& labels) {
  std::string b = be32(2049) + be32(uint32_t(labels.size()));
  for (int l : labels) b.push_back(char(l));
  return b;
}
// Writes `bytes` gzipped (by the gzip program) at path.
void write_gz(const fs::path& path, const std::string& bytes) {
  fs::path raw = path;
  raw.replace_extension("");
  write_text(raw, bytes);
  ks::testing::shell("gzip -f '" + raw.string() + "'");
  REQUIRE(fs::exists(path));
}

}  // namespace

TEST_CASE("idx: gzipped images and labels read back exactly") {
  TempDir dir;
  write_gz(dir / "img.gz", idx_images(3, 2, 3));
  write_gz(dir / "lab.gz", idx_labels({7, 0, 9}));
  IdxImages img = read_idx_images(dir / "img.gz");
  CHECK(img.count == 3);
  CHECK(img.rows == 2);
  CHECK(img.cols == 3);
  REQUIRE(img.pixels.size() == 18);
  CHECK(img.pixels[7] == (1 * 31 + 1) % 256);
  CHECK(read_idx_labels(dir / "lab.gz") == std::vector<uint8_t>{7, 0, 9});
  // Raw (uncompressed) IDX files work too.
  write_text(dir / "img.idx", idx_images(2, 1, 4));
  CHECK(read_idx_images(dir / "img.idx").pixels.size() == 8);

  Dataset d = idx_classification(dir / "img.gz", dir / "lab.gz");
  CHECK(d.task == Task::Classification);
  CHECK(d.vocab_size == 256);
  CHECK(d.num_classes() == 10);
  REQUIRE(d.size() == 3);
  CHECK(d.examples[2].tokens == Ids{62, 63, 64, 65, 66, 67});
  CHECK(d.examples[2].label == 9);
  d.validate("idx");
}

TEST_CASE("idx: malformed files fail naming the file") {
  TempDir dir;
  auto p = [&](const char* name) { return (dir / name).string(); };
  CHECK(error_of([&] { read_idx_images(dir / "none.gz"); }) == "idx: file not found: " + p("none.gz"));
  write_text(dir / "text.gz", "not compressed at all");
  CHECK(error_of([&] { read_idx_images(dir / "text.gz"); }) ==
        "idx: " + p("text.gz") + " is not a gzip file (bad magic bytes)");

  write_gz(dir / "good.gz", idx_images(50, 28, 28));
  std::string gz = ks::testing::read_text(dir / "good.gz");
  write_text(dir / "cut.gz", gz.substr(0, gz.size() / 2));
  std::string e = error_of([&] { read_idx_images(dir / "cut.gz"); });
  CHECK(e.find("idx: " + p("cut.gz") + " is corrupt or truncated: `gzip -dc " + p("cut.gz") +
               "` exited with status 1") == 0);
  CHECK(e.find("unexpected end of file") != std::string::npos);

  write_gz(dir / "lab.gz", idx_labels({1, 2}));
  CHECK(error_of([&] { read_idx_images(dir / "lab.gz"); }) ==
        "idx: " + p("lab.gz") + " has magic number 2049, expected 2051 (IDX images)");
  write_gz(dir / "short.gz", idx_images(3, 2, 2, 2));
  CHECK(error_of([&] { read_idx_images(dir / "short.gz"); }) ==
        "idx: " + p("short.gz") + " holds 8 bytes after its header but the header promises [3, 2, 2] = 12 (truncated)");
  write_gz(dir / "long.gz", idx_labels({1, 2}) + "xx");
  CHECK(error_of([&] { read_idx_labels(dir / "long.gz"); }) ==
        "idx: " + p("long.gz") + " holds 4 bytes after its header but the header promises [2] = 2 (trailing data)");
  write_gz(dir / "head.gz", be32(2051) + be32(1));
  CHECK(error_of([&] { read_idx_images(dir / "head.gz"); }) ==
        "idx: " + p("head.gz") + " is truncated: 8 bytes, shorter than the 16-byte header of an IDX images file");

  write_gz(dir / "img.gz", idx_images(2, 2, 2));
  write_gz(dir / "bad_label.gz", idx_labels({3, 12}));
  CHECK(error_of([&] { idx_classification(dir / "img.gz", dir / "bad_label.gz"); }) ==
        "idx: " + p("bad_label.gz") + ": label 12 of example 1 is outside 0-9");
  write_gz(dir / "three.gz", idx_labels({3, 1, 2}));
  CHECK(error_of([&] { idx_classification(dir / "img.gz", dir / "three.gz"); }) ==
        "idx: " + p("img.gz") + " holds 2 images but " + p("three.gz") + " holds 3 labels");
}

TEST_CASE("idx: header sizes whose product wraps are refused, not matched to an empty payload") {
  TempDir dir;
  // 2^16 * 2^24 * 2^24 = 2^64, which wraps to 0: a bare 16-byte header "held" every image.
  write_text(dir / "wrap.idx", be32(2051) + be32(1u << 16) + be32(1u << 24) + be32(1u << 24));
  CHECK(error_of([&] { read_idx_images(dir / "wrap.idx"); }) ==
        "idx: " + (dir / "wrap.idx").string() +
            ": header sizes [65536, 16777216, 16777216]... promise more than 2^63 bytes");
}

TEST_CASE("idx: no images of 2^32 - 1 squared pixels, even when there are none") {
  TempDir dir;
  // count 0 makes the payload 0 bytes whatever rows and cols are; rows * cols in
  // int64 then overflowed (undefined behaviour) while the examples were cut out.
  write_text(dir / "none.idx", be32(2051) + be32(0) + be32(0xffffffffu) + be32(0xffffffffu));
  write_text(dir / "none-labels.idx", be32(2049) + be32(0));
  const std::string want = "idx: " + (dir / "none.idx").string() +
                           ": images of 4294967295 x 4294967295 pixels are "
                           "over the 1073741824-byte limit of an IDX file";
  CHECK(error_of([&] { read_idx_images(dir / "none.idx"); }) == want);
  CHECK(error_of([&] { idx_classification(dir / "none.idx", dir / "none-labels.idx"); }) == want);
  // An empty pair of sane sizes is an empty data set.
  CHECK(idx_dataset(idx_images_from_bytes(be32(2051) + be32(0) + be32(28) + be32(28), "i"), {}, "i", "l").size() == 0);
}

TEST_CASE("idx: a gzip bomb stops at the size cap, and only regular files are read") {
  TempDir dir;
  write_gz(dir / "zeros.gz", std::string(1 << 20, '\0'));  // 1 MiB from about 1 KB of gzip
  CHECK(error_of([&] { gunzip_file(dir / "zeros.gz", "idx", 4096); }) ==
        "idx: " + (dir / "zeros.gz").string() + " decompresses to more than 4096 bytes, the limit for this file");
  CHECK(gunzip_file(dir / "zeros.gz", "idx", 1 << 20).size() == 1 << 20);  // exactly at the cap is fine
  fs::create_directory(dir / "d.gz");
  CHECK(error_of([&] { read_idx_images(dir / "d.gz"); }) ==
        "idx: " + (dir / "d.gz").string() + " is a directory, expected a file");
  REQUIRE(::mkfifo((dir / "f.gz").c_str(), 0600) == 0);  // no writer: opening it plainly would block
  CHECK(error_of([&] { read_idx_images(dir / "f.gz"); }) ==
        "idx: " + (dir / "f.gz").string() + " is not a regular file (it is a FIFO)");
  CHECK(error_of([&] { read_idx_images("/dev/zero"); }) ==
        "idx: /dev/zero is not a regular file (it is a character device)");
}

TEST_CASE("fashion_mnist: splits from the four files, valid cut from train by seed") {
  TempDir dir;
  std::vector<int> train_labels, test_labels;
  for (int i = 0; i < 40; ++i) train_labels.push_back(i % 10);
  for (int i = 0; i < 12; ++i) test_labels.push_back((i * 3) % 10);
  write_gz(dir / "train-images-idx3-ubyte.gz", idx_images(40, 28, 28));
  write_gz(dir / "train-labels-idx1-ubyte.gz", idx_labels(train_labels));
  write_gz(dir / "t10k-images-idx3-ubyte.gz", idx_images(12, 28, 28));
  write_gz(dir / "t10k-labels-idx1-ubyte.gz", idx_labels(test_labels));
  Splits s = fashion_mnist({.dir = dir.path(), .valid_size = 8, .split_seed = 3});
  CHECK(s.train.size() == 32);
  CHECK(s.valid.size() == 8);
  CHECK(s.test.size() == 12);
  CHECK(s.test.examples[5].label == 5);
  CHECK(s.train.classes[9] == "Ankle boot");
  // Train and valid partition the 40 training images. Image i starts with
  // pixel 31 i mod 256, so i = 223 * pixel mod 256 (223 = 31^-1 mod 256).
  std::set<int64_t> images;
  for (const Dataset* d : {&s.train, &s.valid})
    for (const Example& e : d->examples) {
      CHECK(e.tokens.size() == 784);
      int64_t i = int64_t(e.tokens[0]) * 223 % 256;
      images.insert(i);
      CHECK(e.label == i % 10);  // the label travels with its image
    }
  CHECK(images.size() == 40);
  Splits again = fashion_mnist({.dir = dir.path(), .valid_size = 8, .split_seed = 3});
  CHECK(again.valid.examples[0].tokens == s.valid.examples[0].tokens);
  Splits small = fashion_mnist({.dir = dir.path(), .valid_size = 8, .limit = 5});
  CHECK(small.train.size() == 5);
  CHECK(small.test.size() == 5);
  CHECK_THROWS_WITH_AS(fashion_mnist({.dir = dir.path(), .valid_size = 41}),
                       "fashion_mnist: valid_size 41 must be in [0, 40]", Error);
}

TEST_CASE("fashion_mnist: the Debian package's test set, when installed") {
  fs::path dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(dir / "t10k-images-idx3-ubyte.gz")) {
    MESSAGE("skipped: " << dir.string() << " is not installed (apt-get install dataset-fashion-mnist)");
    return;
  }
  Dataset test = idx_classification(dir / "t10k-images-idx3-ubyte.gz", dir / "t10k-labels-idx1-ubyte.gz");
  REQUIRE(test.size() == 10000);
  std::vector<int64_t> per_class(10);
  for (const Example& e : test.examples) {
    ++per_class[size_t(e.label)];
    REQUIRE(e.tokens.size() == 784);
  }
  CHECK(per_class == std::vector<int64_t>(10, 1000));  // the test set is balanced
  std::vector<uint8_t> train_labels = read_idx_labels(dir / "train-labels-idx1-ubyte.gz");
  CHECK(train_labels.size() == 60000);
}
