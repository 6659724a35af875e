// nn/safetensors.h — reading and writing the safetensors format.
//
// Layout: 8-byte little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value"}}
// then the raw little-endian, row-major bytes of every tensor (offsets are
// relative to the end of the header). Python's safetensors and torch open it.
// Writes are atomic: a temporary file in the same folder, fsync, rename; a
// crash never leaves a half-written file under the real name. Every problem
// in a file read (missing or not a regular file, truncated, bad JSON, a
// tensor named twice, bad dtype, offsets that do not match shapes,
// overlapping or out-of-range data, data bytes that belong to no tensor,
// sizes whose product overflows) throws a ks::Error naming the file and what
// is wrong (and the tensor, where one is).
// Not here: which tensors make a checkpoint (nn/checkpoint.h).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nn/module.h"

namespace ks::nn {

// The largest file load_safetensors reads, and the largest JSON
// header it parses (Python's safetensors refuses headers over 100 MB too).
inline constexpr uint64_t kMaxSafetensorsBytes = uint64_t(64) << 30;
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = uint64_t(100) << 20;

struct SafetensorsContent {
  NamedTensors tensors;                         // in file order of data offsets
  std::map<std::string, std::string> metadata;  // "__metadata__" (string values only)
};

// Tensors are written from any device/layout (copied to contiguous CPU first).
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// Loads the tensors into CPU memory, each read from the file straight into
// its own storage (never the whole file at once). With `wanted`, only the
// tensors it accepts by name are read (a checkpoint's weights without its
// optimizer state, for eval and generate); the others are checked all the
// same, as part of the file's layout, and left out of `tensors`. With
// `floating_as`, each floating tensor is cast to that type as it is read, so
// only one tensor is ever held in the file's type (a float32 checkpoint
// loaded into a bf16 model); a finite value the type cannot hold (float16
// beyond ±65504) is an error naming the tensor, not an infinity.
SafetensorsContent load_safetensors(const std::string& path, const std::function<bool(const std::string&)>& wanted = {},
                                    std::optional<DType> floating_as = std::nullopt);
// A safetensors file opened for reading tensor by tensor: the header is read
// and the whole layout checked when it opens (the errors load_safetensors
// gives), the data only as each tensor is asked for. read_into reads a
// tensor straight into existing storage (a model's parameter: no second copy
// of the weights, nn/checkpoint.h load_weights). Names not in the file, and a
// destination of another shape, are errors naming the file and tensor.
class SafetensorsReader {
 public:
  explicit SafetensorsReader(const std::string& path);
  ~SafetensorsReader();
  SafetensorsReader(const SafetensorsReader&) = delete;
  SafetensorsReader& operator=(const SafetensorsReader&) = delete;

  const std::map<std::string, std::string>& metadata() const;
  std::vector<std::string> names() const;  // in order of their data
  bool has(const std::string& name) const;
  DType dtype(const std::string& name) const;
  Shape shape(const std::string& name) const;
  // A new CPU tensor; floating_as as load_safetensors's.
  Tensor read(const std::string& name, std::optional<DType> floating_as = std::nullopt) const;
  // Into `dst` (CPU, contiguous, the tensor's shape): in place when dst has
  // the file's dtype, else read and cast a slab of rows_per_slab rows at a
  // time (both floating; float16's range checked as floating_as checks it),
  // so no whole copy of the tensor in either type is made beside dst.
  void read_into(const std::string& name, const Tensor& dst) const;
  // Rows [first, first + count) of the tensor along its first dim, as read
  // gives the whole: a large weight read a slab at a time (a Q8_0 weight,
  // quantized as it is read, never held whole in float32).
  Tensor read_rows(const std::string& name, int64_t first, int64_t count,
                   std::optional<DType> floating_as = std::nullopt) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// How many rows of `row_values` values each make a slab of about 4 MiB of
// float32 (at least one): what read_into casts at once, and what
// nn::load_weights reads of a Q8_0 weight before quantizing it.
int64_t rows_per_slab(int64_t row_values);

// The same from the file's bytes; `path` names them in errors.
SafetensorsContent safetensors_from_bytes(std::string_view bytes, const std::string& path);

// Writes `bytes` to `path` atomically: a temporary file "<path>.tmp.<pid>",
// fsync, rename over `path`, fsync of the folder.
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace ks::nn
