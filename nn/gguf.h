// nn/gguf.h — reading and writing the GGUF container (version 3), the file
// format of llama.cpp and ggml (spec: ggml's docs/gguf.md).
//
// Layout, all little-endian:
//   "GGUF" (4 bytes), version u32 (3), tensor_count u64, metadata_kv_count u64,
//   metadata: key (string: u64 length + bytes), value type u32, value
//             (scalars; string; array: element type u32, count u64, elements),
//   tensor infos: name (string), n_dims u32, dims u64[n_dims] (ggml's order:
//             dims[0] is the fastest-moving, a row's length), ggml type u32,
//             offset u64 (from the start of the data section),
//   padding to general.alignment (default 32), then the data section; every
//   tensor's offset a multiple of the alignment.
// A torch/Keystone shape (rows, cols) is dims [cols, rows]: the reversed list.
//
// The reader checks everything before it allocates by a count the file gives:
// a string or array longer than the bytes left, a count of tensors or keys
// that cannot fit, a nested array, a bool other than 0/1, a duplicate key or
// tensor name, more than 4 dims, a dim product that overflows, a row not a
// whole number of blocks, an unknown ggml type id, an offset that is not a
// multiple of the alignment or whose data leaves the file, two tensors' data
// overlapping. Each is a ks::Error naming the file and what (and the key or
// tensor) is wrong. Tensor data is decoded on request: F32, F16, BF16 and
// Q8_0 to float32 (others refused by name, e.g. "Q4_K"), every value checked
// finite.
// Writing: F32, F16 and BF16 rounded to nearest even, Q8_0 exactly as ggml's
// quantize_row_q8_0_ref (scale d = amax / 127 stored as fp16, q = roundf(x / d);
// ops/q8_0.h quantize_q8_0_row, which Keystone's own Q8_0 weights use too).
// Not here: what the tensors and keys mean for a model (tools/interop/gguf_llama.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"

namespace ks::nn {

// GGUF's metadata value types (gguf_metadata_value_type), numbered 0 to 12
// in this order, as the file stores them.
enum class GgufKind : uint32_t {
  UInt8,
  Int8,
  UInt16,
  Int16,
  UInt32,
  Int32,
  Float32,
  Bool,
  String,
  Array,
  UInt64,
  Int64,
  Float64
};
static_assert(uint32_t(GgufKind::Float32) == 6 && uint32_t(GgufKind::Array) == 9 && uint32_t(GgufKind::Float64) == 12,
              "GgufKind must number its values as GGUF's spec does");
const char* gguf_kind_name(GgufKind k);  // "u32", "string", "array", ...

// ggml's tensor types (enum ggml_type) that Keystone writes or reads.
enum class GgmlType : uint32_t { F32 = 0, F16 = 1, Q8_0 = 8, BF16 = 30 };
// "F32", "Q4_K", ... for any id GGUF's spec lists; "type 31" for an id it does not.
std::string ggml_type_name(uint32_t type);

// One metadata value. Scalars: integers in `i` (u64 values above INT64_MAX
// keep their bits), floats in `f`, bools in `i` (0/1), strings in `s`.
// Arrays (of scalars or strings, not of arrays): `elem` and either `ints`,
// `floats` or `strings`.
struct GgufValue {
  GgufKind kind = GgufKind::UInt32;
  int64_t i = 0;
  double f = 0;
  std::string s;
  GgufKind elem = GgufKind::UInt32;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strings;

  static GgufValue u32(uint32_t v) { return scalar(GgufKind::UInt32, v); }
  static GgufValue i32(int32_t v) { return scalar(GgufKind::Int32, v); }
  static GgufValue f32(float v);
  static GgufValue boolean(bool v) { return scalar(GgufKind::Bool, v ? 1 : 0); }
  static GgufValue str(std::string v);
  static GgufValue string_array(std::vector<std::string> v);
  static GgufValue i32_array(std::vector<int64_t> v);
  static GgufValue f32_array(std::vector<double> v);
  static GgufValue scalar(GgufKind k, int64_t v);
  size_t count() const { return ints.size() + floats.size() + strings.size(); }  // an array's length
};

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> dims;  // ggml order: dims[0] is a row's length
  uint32_t type = 0;          // ggml_type
  uint64_t offset = 0;        // from the start of the data section
  uint64_t bytes = 0;         // its data's size
  Shape shape() const;        // Keystone's order: dims reversed
  int64_t numel() const;
};

struct GgufFile {
  uint32_t version = 3;
  uint64_t alignment = 32;
  std::vector<std::pair<std::string, GgufValue>> metadata;  // in file order
  std::vector<GgufTensorInfo> tensors;                      // in file order
  std::string bytes;                                        // the whole file
  uint64_t data_start = 0;                                  // where the data section begins in `bytes`
  std::string where;                                        // the file's name, for errors

  const GgufValue* find(const std::string& key) const;
  const GgufTensorInfo* tensor(const std::string& name) const;
  std::string_view data(const GgufTensorInfo& t) const { return {bytes.data() + data_start + t.offset, t.bytes}; }
};

// The largest GGUF file read into memory.
inline constexpr uint64_t kMaxGgufBytes = uint64_t(64) << 30;

// Parses and checks the container (not the tensor values); `where` names it in errors.
GgufFile gguf_from_bytes(std::string bytes, const std::string& where);
GgufFile load_gguf(const std::string& path);

// A tensor's values as a float32 CPU tensor of shape info.shape(): F32, F16,
// BF16 and Q8_0 (others: an error naming the type and the tensor); a NaN or
// infinity is an error naming the tensor and how many there are.
Tensor gguf_tensor_float32(const GgufFile& f, const GgufTensorInfo& info);

// A contiguous float32 tensor's values encoded as `type`; Q8_0 needs rows
// (the last dim) of a multiple of 32 values.
std::string gguf_encode(const Tensor& t, GgmlType type);
// Q8_0 blocks of `n` (a multiple of 32) floats, as ggml's quantize_row_q8_0_ref.
std::string quantize_q8_0(const float* x, int64_t n);

// A file to write: metadata in order (general.alignment is written by the
// writer, 32), then the tensors, each with its shape in Keystone's order and
// its data already encoded.
struct GgufTensorOut {
  std::string name;
  Shape shape;
  GgmlType type;
  std::string data;
};
std::string gguf_to_bytes(const std::vector<std::pair<std::string, GgufValue>>& metadata,
                          const std::vector<GgufTensorOut>& tensors);

}  // namespace ks::nn
