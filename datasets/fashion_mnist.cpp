// datasets/fashion_mnist.cpp — the IDX reader and the Fashion-MNIST splits.
#include "datasets/fashion_mnist.h"

#include <algorithm>

#include "core/error.h"
#include "datasets/io.h"

namespace ks::data {
namespace fs = std::filesystem;

namespace {

std::string load(const fs::path& path) {
  return path.extension() == ".gz" ? gunzip_file(path, "idx", kMaxIdxBytes) : read_file(path, "idx", kMaxIdxBytes);
}

uint32_t be32(std::string_view b, size_t at) {
  auto u = [&](size_t i) { return uint32_t(static_cast<unsigned char>(b[at + i])); };
  return u(0) << 24 | u(1) << 16 | u(2) << 8 | u(3);
}

// Checks the header (magic + `dims` sizes) and that the payload is exactly
// the product of the sizes; returns the sizes.
std::vector<int64_t> header(std::string_view b, const std::string& path, uint32_t magic, size_t dims,
                            const char* what) {
  size_t head = 4 * (1 + dims);
  KS_CHECK(b.size() < 4 || be32(b, 0) == magic, "idx: ", path, " has magic number ", be32(b, 0), ", expected ", magic,
           " (IDX ", what, ")");
  KS_CHECK(b.size() >= head, "idx: ", path, " is truncated: ", b.size(), " bytes, shorter than the ", head,
           "-byte header of an IDX ", what, " file");
  std::vector<int64_t> sizes;
  int64_t payload = 1;  // checked: sizes whose product wraps to 0 would "match" an empty payload
  for (size_t d = 0; d < dims; ++d) {
    sizes.push_back(int64_t(be32(b, 4 * (1 + d))));
    KS_CHECK(!__builtin_mul_overflow(payload, sizes.back(), &payload), "idx: ", path, ": header sizes ", sizes,
             "... promise more than 2^63 bytes");
  }
  KS_CHECK(int64_t(b.size() - head) == payload, "idx: ", path, " holds ", b.size() - head,
           " bytes after its header but the header promises ", sizes, " = ", payload,
           int64_t(b.size() - head) < payload ? " (truncated)" : " (trailing data)");
  return sizes;
}

// The examples at `indices` (sorted, cut to `limit` when > 0), moved out of `from`.
Dataset take(Dataset& from, std::vector<int64_t> indices, int64_t limit) {
  std::sort(indices.begin(), indices.end());
  if (limit > 0 && int64_t(indices.size()) > limit) indices.resize(size_t(limit));
  Dataset d = from.subset({});
  for (int64_t i : indices) d.examples.push_back(std::move(from.examples[size_t(i)]));
  return d;
}

}  // namespace

IdxImages read_idx_images(const fs::path& path) { return idx_images_from_bytes(load(path), path.string()); }

std::vector<uint8_t> read_idx_labels(const fs::path& path) { return idx_labels_from_bytes(load(path), path.string()); }

IdxImages idx_images_from_bytes(std::string_view b, const std::string& path) {
  std::vector<int64_t> s = header(b, path, 2051, 3, "images");
  KS_CHECK(s[1] > 0 && s[2] > 0, "idx: ", path, ": images of ", s[1], " x ", s[2], " pixels");
  // With a count of 0 the payload check holds for any image size; one image
  // must fit in a file, so rows * cols (each < 2^32) is then < 2^63 below.
  KS_CHECK(uint64_t(s[1]) * uint64_t(s[2]) <= kMaxIdxBytes, "idx: ", path, ": images of ", s[1], " x ", s[2],
           " pixels are over the ", kMaxIdxBytes, "-byte limit of an IDX file");
  IdxImages img{s[0], s[1], s[2], {}};
  img.pixels.assign(b.begin() + 16, b.end());
  return img;
}

std::vector<uint8_t> idx_labels_from_bytes(std::string_view b, const std::string& path) {
  header(b, path, 2049, 1, "labels");
  return {b.begin() + 8, b.end()};
}

const std::vector<std::string>& fashion_mnist_classes() {
  static const std::vector<std::string> c = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                             "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return c;
}

Dataset idx_classification(const fs::path& images, const fs::path& labels) {
  IdxImages img = read_idx_images(images);
  return idx_dataset(std::move(img), read_idx_labels(labels), images.string(), labels.string());
}

Dataset idx_dataset(IdxImages img, const std::vector<uint8_t>& lab, const std::string& images,
                    const std::string& labels) {
  KS_CHECK(int64_t(lab.size()) == img.count, "idx: ", images, " holds ", img.count, " images but ", labels, " holds ",
           lab.size(), " labels");
  Dataset d;
  d.task = Task::Classification;
  d.vocab_size = 256;
  d.classes = fashion_mnist_classes();
  int64_t len = img.rows * img.cols;
  d.examples.resize(size_t(img.count));
  for (int64_t i = 0; i < img.count; ++i) {
    KS_CHECK(lab[size_t(i)] < 10, "idx: ", labels, ": label ", int(lab[size_t(i)]), " of example ", i,
             " is outside 0-9");
    Example& e = d.examples[size_t(i)];
    e.tokens.assign(img.pixels.begin() + i * len, img.pixels.begin() + (i + 1) * len);
    e.label = lab[size_t(i)];
  }
  return d;
}

Splits fashion_mnist(const FashionMnistOptions& o) {
  Dataset train = idx_classification(o.dir / "train-images-idx3-ubyte.gz", o.dir / "train-labels-idx1-ubyte.gz");
  Dataset test = idx_classification(o.dir / "t10k-images-idx3-ubyte.gz", o.dir / "t10k-labels-idx1-ubyte.gz");
  for (const Dataset* d : {&train, &test})
    KS_CHECK(d->examples.empty() || d->examples[0].tokens.size() == 784, "fashion_mnist: expected 28 x 28 images in ",
             o.dir.string(), ", got ", d->examples[0].tokens.size(), " pixels each");
  KS_CHECK(o.valid_size >= 0 && o.valid_size <= train.size(), "fashion_mnist: valid_size ", o.valid_size,
           " must be in [0, ", train.size(), "]");
  std::vector<int64_t> p = permutation(train.size(), o.split_seed, 0xfa5);
  std::vector<int64_t> valid(p.begin(), p.begin() + o.valid_size), rest(p.begin() + o.valid_size, p.end());
  std::vector<int64_t> all_test(size_t(test.size()));
  for (int64_t i = 0; i < test.size(); ++i) all_test[size_t(i)] = i;
  Splits out{take(train, std::move(rest), o.limit), take(train, std::move(valid), o.limit),
             take(test, std::move(all_test), o.limit)};
  return out;
}

}  // namespace ks::data
