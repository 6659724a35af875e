// datasets/fashion_mnist.h — Fashion-MNIST (Xiao et al., 2017) from the
// gzipped IDX files of Debian's dataset-fashion-mnist package
// (/usr/share/datasets/fashion-mnist), as sequence classification: each
// 28 x 28 image is a sequence of 784 pixel tokens in row-major order, the
// token id being the pixel value (vocabulary 256, no specials: every sequence
// has the same length, so nothing is ever padded; a model over this set
// should have no padding id), and one of 10 classes.
//
// IDX (LeCun's MNIST format), all integers big-endian:
//   images: magic 2051 (0x00000803), count, rows, cols, then count*rows*cols bytes
//   labels: magic 2049 (0x00000801), count, then count bytes
// The files are decompressed with `gzip -dc` (datasets/io.h). Errors name the
// file: missing, not gzip, corrupt or truncated, wrong magic, a size that
// disagrees with the header (or header sizes whose product overflows), over
// kMaxIdxBytes (decompressed), an image over kMaxIdxBytes (even when there
// are none), a label outside 0-9, image/label count mismatch.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/dataset.h"

namespace ks::data {

// The largest IDX file read (after decompression): EMNIST, the largest IDX
// set in use, is about 0.7 GB; a gzip bomb is stopped here.
inline constexpr uint64_t kMaxIdxBytes = uint64_t(1) << 30;

struct IdxImages {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // (count, rows, cols)
};
// A .gz path is gunzipped first; any other is read as raw IDX.
IdxImages read_idx_images(const std::filesystem::path& path);
std::vector<uint8_t> read_idx_labels(const std::filesystem::path& path);
// The same from raw (decompressed) IDX bytes; `name` names them in errors.
IdxImages idx_images_from_bytes(std::string_view bytes, const std::string& name);
std::vector<uint8_t> idx_labels_from_bytes(std::string_view bytes, const std::string& name);

// The ten class names, index = label ("T-shirt/top", "Trouser", ...).
const std::vector<std::string>& fashion_mnist_classes();

struct FashionMnistOptions {
  std::filesystem::path dir = "/usr/share/datasets/fashion-mnist";
  int64_t valid_size = 5000;  // cut from the 60,000 training images by a seeded permutation
  uint64_t split_seed = 0;
  int64_t limit = 0;  // > 0: keep at most this many examples per split (quick runs)
};
// train-{images-idx3,labels-idx1}-ubyte.gz minus valid_size -> train and valid;
// t10k-* -> test.
Splits fashion_mnist(const FashionMnistOptions& options = {});

// Images and labels of one IDX pair as classification examples (pixel ids).
Dataset idx_classification(const std::filesystem::path& images, const std::filesystem::path& labels);
// The same from images and labels already read; the names are for errors.
Dataset idx_dataset(IdxImages images, const std::vector<uint8_t>& labels, const std::string& images_name,
                    const std::string& labels_name);

}  // namespace ks::data
