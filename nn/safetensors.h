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

#include <map>
#include <string>
#include <string_view>

#include "nn/module.h"

namespace ks::nn {

// The largest file load_safetensors reads into memory, and the largest JSON
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
// Loads every tensor into CPU memory.
SafetensorsContent load_safetensors(const std::string& path);
// The same from the file's bytes; `path` names them in errors.
SafetensorsContent safetensors_from_bytes(std::string_view bytes, const std::string& path);

// Writes `bytes` to `path` atomically: a temporary file "<path>.tmp.<pid>",
// fsync, rename over `path`, fsync of the folder.
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace ks::nn
