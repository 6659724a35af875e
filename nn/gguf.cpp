// nn/gguf.cpp — the GGUF v3 reader and writer (nn/gguf.h).
#include "nn/gguf.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/copy.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/user_file.h"
#include "ops/q8_0.h"

namespace ks::nn {
namespace {

constexpr uint32_t kMaxDims = 4;       // GGML_MAX_DIMS
constexpr size_t kMaxTensorName = 63;  // GGML_MAX_NAME 64, with its terminating zero
constexpr uint64_t kMaxAlignment = 1u << 20;

// Block length and bytes per block of each type GGUF's spec lists (ggml.c's
// type_traits); {0, 0} for ids it does not (removed or unknown).
struct TypeTraits {
  const char* name;
  uint64_t block, size;
};
TypeTraits traits(uint32_t t) {
  static const TypeTraits table[] = {
      {"F32", 1, 4},      {"F16", 1, 2},        {"Q4_0", 32, 18},    {"Q4_1", 32, 20},     {nullptr, 0, 0},
      {nullptr, 0, 0},    {"Q5_0", 32, 22},     {"Q5_1", 32, 24},    {"Q8_0", 32, 34},     {"Q8_1", 32, 36},
      {"Q2_K", 256, 84},  {"Q3_K", 256, 110},   {"Q4_K", 256, 144},  {"Q5_K", 256, 176},   {"Q6_K", 256, 210},
      {"Q8_K", 256, 292}, {"IQ2_XXS", 256, 66}, {"IQ2_XS", 256, 74}, {"IQ3_XXS", 256, 98}, {"IQ1_S", 256, 50},
      {"IQ4_NL", 32, 18}, {"IQ3_S", 256, 110},  {"IQ2_S", 256, 82},  {"IQ4_XS", 256, 136}, {"I8", 1, 1},
      {"I16", 1, 2},      {"I32", 1, 4},        {"I64", 1, 8},       {"F64", 1, 8},        {"IQ1_M", 256, 56},
      {"BF16", 1, 2},     {nullptr, 0, 0},      {nullptr, 0, 0},     {nullptr, 0, 0},      {"TQ1_0", 256, 54},
      {"TQ2_0", 256, 66}, {nullptr, 0, 0},      {nullptr, 0, 0},     {nullptr, 0, 0},      {"MXFP4", 32, 17}};
  return t < sizeof(table) / sizeof(table[0]) ? table[t] : TypeTraits{nullptr, 0, 0};
}

// Bytes read with bounds checks; every failure names the file, the offset and what was being read.
class Reader {
 public:
  Reader(std::string_view b, const std::string& where) : b_(b), where_(where) {}
  [[noreturn]] void fail(const std::string& what) const { throw Error(str("gguf: ", where_, ": ", what)); }
  uint64_t left() const { return b_.size() - pos_; }
  uint64_t pos() const { return pos_; }
  void need(uint64_t n, const std::string& what) const {
    if (n > left())
      fail(str("truncated: ", what, " needs ", n, " bytes at offset ", pos_, " but the file has ", left(), " left"));
  }
  template <class T> T get(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));  // little-endian hosts only (x86-64, arm64)
    pos_ += sizeof(T);
    return v;
  }
  std::string string(const std::string& what) {
    const uint64_t n = get<uint64_t>(what + "'s length");
    if (n > left())
      fail(str(what, ": a string of ", n, " bytes at offset ", pos_, " runs past the end of the file (", left(),
               " bytes left)"));
    std::string s(b_.substr(pos_, n));
    pos_ += n;
    return s;
  }

 private:
  std::string_view b_;
  uint64_t pos_ = 0;
  const std::string& where_;
};

uint64_t scalar_size(GgufKind k) {
  switch (k) {
    case GgufKind::UInt8:
    case GgufKind::Int8:
    case GgufKind::Bool: return 1;
    case GgufKind::UInt16:
    case GgufKind::Int16: return 2;
    case GgufKind::UInt32:
    case GgufKind::Int32:
    case GgufKind::Float32: return 4;
    case GgufKind::UInt64:
    case GgufKind::Int64:
    case GgufKind::Float64: return 8;
    case GgufKind::String: return 8;  // at least its length
    case GgufKind::Array: return 12;  // at least its type and count
  }
  return 0;
}

bool is_float(GgufKind k) { return k == GgufKind::Float32 || k == GgufKind::Float64; }

// One scalar of kind k into v (ints or f or s); `what` names the key.
void read_scalar(Reader& r, GgufKind k, GgufValue& v, const std::string& what) {
  switch (k) {
    case GgufKind::UInt8: v.i = r.get<uint8_t>(what); break;
    case GgufKind::Int8: v.i = r.get<int8_t>(what); break;
    case GgufKind::UInt16: v.i = r.get<uint16_t>(what); break;
    case GgufKind::Int16: v.i = r.get<int16_t>(what); break;
    case GgufKind::UInt32: v.i = r.get<uint32_t>(what); break;
    case GgufKind::Int32: v.i = r.get<int32_t>(what); break;
    case GgufKind::UInt64: v.i = int64_t(r.get<uint64_t>(what)); break;
    case GgufKind::Int64: v.i = r.get<int64_t>(what); break;
    case GgufKind::Float32: v.f = r.get<float>(what); break;
    case GgufKind::Float64: v.f = r.get<double>(what); break;
    case GgufKind::Bool: {
      const uint8_t b = r.get<uint8_t>(what);
      if (b > 1) r.fail(str(what, ": a bool must be 0 or 1, got ", int(b)));
      v.i = b;
      break;
    }
    case GgufKind::String: v.s = r.string(what); break;
    case GgufKind::Array: r.fail(str(what, ": an array inside an array is not supported"));
  }
}

GgufKind read_kind(Reader& r, const std::string& what) {
  const uint32_t k = r.get<uint32_t>(what + "'s type");
  if (k > uint32_t(GgufKind::Float64)) r.fail(str(what, ": unknown value type ", k, " (GGUF's are 0 to 12)"));
  return GgufKind(k);
}

GgufValue read_value(Reader& r, GgufKind kind, const std::string& what) {
  GgufValue v;
  v.kind = kind;
  if (kind != GgufKind::Array) {
    read_scalar(r, kind, v, what);
    return v;
  }
  v.elem = read_kind(r, what + "'s elements");
  const uint64_t n = r.get<uint64_t>(what + "'s length");
  // Bounded by the bytes left before anything is allocated for it.
  if (v.elem != GgufKind::Array && n > r.left() / scalar_size(v.elem))
    r.fail(str(what, ": an array of ", n, " ", gguf_kind_name(v.elem), " values at offset ", r.pos(),
               " runs past the end of the file (", r.left(), " bytes left)"));
  if (v.elem == GgufKind::Array) r.fail(str(what, ": an array of arrays is not supported"));
  GgufValue e;
  for (uint64_t j = 0; j < n; ++j) {
    read_scalar(r, v.elem, e, what);
    if (v.elem == GgufKind::String)
      v.strings.push_back(std::move(e.s));
    else if (is_float(v.elem))
      v.floats.push_back(e.f);
    else
      v.ints.push_back(e.i);
  }
  return v;
}

// x rounded up to a multiple of a (a power of two).
uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

void write_raw(std::string& out, const void* p, size_t n) { out.append(static_cast<const char*>(p), n); }
template <class T> void write(std::string& out, T v) { write_raw(out, &v, sizeof(T)); }
void write_string(std::string& out, const std::string& s) {
  write<uint64_t>(out, s.size());
  out += s;
}

void write_scalar(std::string& out, GgufKind k, int64_t i, double f, const std::string& s) {
  switch (k) {
    case GgufKind::UInt8:
    case GgufKind::Int8:
    case GgufKind::Bool: write<uint8_t>(out, uint8_t(i)); break;
    case GgufKind::UInt16:
    case GgufKind::Int16: write<uint16_t>(out, uint16_t(i)); break;
    case GgufKind::UInt32:
    case GgufKind::Int32: write<uint32_t>(out, uint32_t(i)); break;
    case GgufKind::UInt64:
    case GgufKind::Int64: write<uint64_t>(out, uint64_t(i)); break;
    case GgufKind::Float32: write<float>(out, float(f)); break;
    case GgufKind::Float64: write<double>(out, f); break;
    case GgufKind::String: write_string(out, s); break;
    case GgufKind::Array: throw Error("gguf: an array inside an array is not supported");
  }
}

}  // namespace

const char* gguf_kind_name(GgufKind k) {
  static const char* names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                "bool", "string", "array", "u64", "i64", "f64"};
  return uint32_t(k) <= 12 ? names[uint32_t(k)] : "?";
}

std::string ggml_type_name(uint32_t type) {
  const TypeTraits t = traits(type);
  return t.name ? t.name : str("type ", type);
}

GgufValue GgufValue::scalar(GgufKind k, int64_t v) {
  GgufValue g;
  g.kind = k;
  g.i = v;
  return g;
}
GgufValue GgufValue::f32(float v) {
  GgufValue g;
  g.kind = GgufKind::Float32;
  g.f = v;
  return g;
}
GgufValue GgufValue::str(std::string v) {
  GgufValue g;
  g.kind = GgufKind::String;
  g.s = std::move(v);
  return g;
}
namespace {
GgufValue array_of(GgufKind elem) {
  GgufValue g;
  g.kind = GgufKind::Array;
  g.elem = elem;
  return g;
}
}  // namespace
GgufValue GgufValue::string_array(std::vector<std::string> v) {
  GgufValue g = array_of(GgufKind::String);
  g.strings = std::move(v);
  return g;
}
GgufValue GgufValue::i32_array(std::vector<int64_t> v) {
  GgufValue g = array_of(GgufKind::Int32);
  g.ints = std::move(v);
  return g;
}
GgufValue GgufValue::f32_array(std::vector<double> v) {
  GgufValue g = array_of(GgufKind::Float32);
  g.floats = std::move(v);
  return g;
}

Shape GgufTensorInfo::shape() const { return Shape(dims.rbegin(), dims.rend()); }

int64_t GgufTensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

const GgufValue* GgufFile::find(const std::string& key) const {
  for (const auto& [k, v] : metadata)
    if (k == key) return &v;
  return nullptr;
}

const GgufTensorInfo* GgufFile::tensor(const std::string& name) const {
  for (const GgufTensorInfo& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

GgufFile gguf_from_bytes(std::string bytes, const std::string& where) {
  GgufFile f;
  f.where = where;
  f.bytes = std::move(bytes);
  Reader r(f.bytes, f.where);
  r.need(4, "the magic");
  if (f.bytes.compare(0, 4, "GGUF") != 0) {
    std::string seen;
    for (int i = 0; i < 4; ++i)
      seen += str(i ? " " : "", "0x", "0123456789abcdef"[uint8_t(f.bytes[i]) >> 4],
                  "0123456789abcdef"[uint8_t(f.bytes[i]) & 15]);
    r.fail(str("not a GGUF file: it starts with ", seen, ", not \"GGUF\""));
  }
  r.get<uint32_t>("the magic");
  f.version = r.get<uint32_t>("the version");
  if (f.version != 3)
    r.fail(str("GGUF version ", f.version, " is not supported (only version 3",
               f.version == 1 || f.version == 2 ? "; convert older files with llama.cpp's tools" : "", ")"));
  const uint64_t n_tensors = r.get<uint64_t>("the tensor count");
  const uint64_t n_kv = r.get<uint64_t>("the metadata count");
  // A key takes at least 12 bytes (length, type), a tensor info at least 24.
  if (n_kv > r.left() / 12)
    r.fail(str("the header announces ", n_kv, " metadata keys, more than the file's ", r.left(), " bytes can hold"));
  if (n_tensors > r.left() / 24)
    r.fail(str("the header announces ", n_tensors, " tensors, more than the file's ", r.left(), " bytes can hold"));

  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key = r.string(str("metadata key ", k));
    const std::string what = str("metadata '", key, "'");
    if (f.find(key)) r.fail(str(what, " appears twice"));
    const GgufKind kind = read_kind(r, what);
    f.metadata.emplace_back(std::move(key), read_value(r, kind, what));
  }
  if (const GgufValue* a = f.find("general.alignment")) {
    const bool integer =
        !is_float(a->kind) && a->kind != GgufKind::String && a->kind != GgufKind::Array && a->kind != GgufKind::Bool;
    if (!integer || a->i <= 0 || uint64_t(a->i) > kMaxAlignment || (a->i & (a->i - 1)) != 0)
      r.fail(str("metadata 'general.alignment' must be a power of two up to ", kMaxAlignment, ", got ",
                 integer ? std::to_string(a->i) : std::string(gguf_kind_name(a->kind))));
    f.alignment = uint64_t(a->i);
  }

  for (uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensorInfo t;
    t.name = r.string(str("tensor ", k, "'s name"));
    const std::string what = str("tensor '", t.name, "'");
    if (t.name.size() > kMaxTensorName)
      r.fail(str("tensor ", k, "'s name is ", t.name.size(), " bytes, over ggml's ", kMaxTensorName));
    if (f.tensor(t.name)) r.fail(str(what, " appears twice"));
    const uint32_t n_dims = r.get<uint32_t>(what + "'s dimension count");
    if (n_dims == 0 || n_dims > kMaxDims) r.fail(str(what, " has ", n_dims, " dimensions (1 to ", kMaxDims, ")"));
    uint64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t n = r.get<uint64_t>(what + "'s dimensions");
      if (n > uint64_t(INT64_MAX) || (n != 0 && numel > uint64_t(INT64_MAX) / n))
        r.fail(str(what, ": its dimensions' product overflows 63 bits"));
      numel *= n;
      t.dims.push_back(int64_t(n));
    }
    t.type = r.get<uint32_t>(what + "'s type");
    const TypeTraits tt = traits(t.type);
    if (!tt.name) r.fail(str(what, " has ggml type id ", t.type, ", which GGUF's spec does not list"));
    if (uint64_t(t.dims[0]) % tt.block != 0)
      r.fail(str(what, ": its rows of ", t.dims[0], " values are not whole ", tt.name, " blocks of ", tt.block));
    if (numel / tt.block > UINT64_MAX / tt.size) r.fail(str(what, ": its size overflows 64 bits"));
    t.bytes = numel / tt.block * tt.size;
    t.offset = r.get<uint64_t>(what + "'s offset");
    if (t.offset % f.alignment != 0)
      r.fail(str(what, ": its data offset ", t.offset, " is not a multiple of the alignment ", f.alignment));
    f.tensors.push_back(std::move(t));
  }

  f.data_start = align_up(r.pos(), f.alignment);
  const uint64_t data_size = f.bytes.size() >= f.data_start ? f.bytes.size() - f.data_start : 0;
  if (n_tensors > 0 && f.bytes.size() < f.data_start)
    r.fail(str("truncated: the data section should start at offset ", f.data_start, " but the file has ",
               f.bytes.size(), " bytes"));
  std::vector<const GgufTensorInfo*> by_offset;
  for (const GgufTensorInfo& t : f.tensors) {
    if (t.offset > data_size || t.bytes > data_size - t.offset)
      r.fail(str("tensor '", t.name, "': its data (", t.bytes, " bytes at offset ", t.offset,
                 " of the data section) runs past the end of the file (the data section has ", data_size,
                 " bytes): truncated or damaged"));
    by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
  for (size_t k = 1; k < by_offset.size(); ++k)
    if (by_offset[k - 1]->bytes > 0 && by_offset[k]->offset < by_offset[k - 1]->offset + by_offset[k - 1]->bytes)
      r.fail(str("tensors '", by_offset[k - 1]->name, "' and '", by_offset[k]->name, "' overlap in the data section"));
  return f;
}

GgufFile load_gguf(const std::string& path) {
  return gguf_from_bytes(read_regular_file(path, kMaxGgufBytes, "gguf"), path);
}

Tensor gguf_tensor_float32(const GgufFile& f, const GgufTensorInfo& info) {
  const std::string_view d = f.data(info);
  Tensor t = Tensor::empty(info.shape(), kFloat32, Device::cpu());
  float* out = static_cast<float*>(t.data_ptr());
  const int64_t n = info.numel();
  switch (info.type) {
    case uint32_t(GgmlType::F32): std::memcpy(out, d.data(), size_t(n) * 4); break;
    case uint32_t(GgmlType::F16):
    case uint32_t(GgmlType::BF16):
      for (int64_t k = 0; k < n; ++k) {
        uint16_t b;
        std::memcpy(&b, d.data() + 2 * k, 2);
        out[k] = info.type == uint32_t(GgmlType::F16) ? float16_value_of(b) : float_from_bits(uint32_t(b) << 16);
      }
      break;
    case uint32_t(GgmlType::Q8_0):
      for (int64_t b = 0; b < n / 32; ++b) {
        const char* block = d.data() + 34 * b;
        uint16_t scale;
        std::memcpy(&scale, block, 2);
        const float s = float16_value_of(scale);
        for (int j = 0; j < 32; ++j) out[32 * b + j] = s * float(int8_t(block[2 + j]));  // as dequantize_row_q8_0
      }
      break;
    default:
      throw Error(str("gguf: ", f.where, ": tensor '", info.name, "' is ", ggml_type_name(info.type),
                      ", which Keystone does not read (it reads F32, F16, BF16 and Q8_0)"));
  }
  int64_t bad = 0;
  for (int64_t k = 0; k < n; ++k) bad += !std::isfinite(out[k]);
  KS_CHECK(bad == 0, "gguf: ", f.where, ": tensor '", info.name, "' holds ", bad, " NaN or infinite values of ", n);
  return t;
}

std::string quantize_q8_0(const float* x, int64_t n) {
  KS_CHECK(n % 32 == 0, "gguf: Q8_0 needs a multiple of 32 values, got ", n);
  // ops/q8_0.h's quantization (ggml's quantize_row_q8_0_ref), interleaved as GGUF stores it: d, then 32 q.
  std::vector<int8_t> q(static_cast<size_t>(n));
  std::vector<uint16_t> d(static_cast<size_t>(n / 32));
  quantize_q8_0_row(x, n, q.data(), d.data());
  std::string out;
  out.reserve(size_t(n / 32) * 34);
  for (int64_t b = 0; b < n / 32; ++b) {
    write<uint16_t>(out, d[size_t(b)]);
    for (int j = 0; j < 32; ++j) write<int8_t>(out, q[size_t(32 * b + j)]);
  }
  return out;
}

std::string gguf_encode(const Tensor& t, GgmlType type) {
  const Tensor c = contiguous_raw(t);
  KS_CHECK(c.dtype() == kFloat32, "gguf: encode takes float32 tensors, got ", c.dtype());
  const float* x = static_cast<const float*>(c.data_ptr());
  const int64_t n = c.numel();
  std::string out;
  switch (type) {
    case GgmlType::F32: write_raw(out, x, size_t(n) * 4); break;
    case GgmlType::F16:
      for (int64_t k = 0; k < n; ++k) write<uint16_t>(out, float16_bits_of(x[k]));
      break;
    case GgmlType::BF16:
      for (int64_t k = 0; k < n; ++k) write<uint16_t>(out, BFloat16(x[k]).bits);
      break;
    case GgmlType::Q8_0:
      KS_CHECK(c.dim() > 0 && c.size(c.dim() - 1) % 32 == 0, "gguf: Q8_0 needs rows of a multiple of 32, got shape ",
               c.sizes());
      out = quantize_q8_0(x, n);
      break;
  }
  return out;
}

std::string gguf_to_bytes(const std::vector<std::pair<std::string, GgufValue>>& metadata,
                          const std::vector<GgufTensorOut>& tensors) {
  constexpr uint64_t kAlign = 32;
  std::string out = "GGUF";
  write<uint32_t>(out, 3);
  write<uint64_t>(out, tensors.size());
  write<uint64_t>(out, metadata.size() + 1);
  write_string(out, "general.alignment");
  write<uint32_t>(out, uint32_t(GgufKind::UInt32));
  write<uint32_t>(out, uint32_t(kAlign));
  for (const auto& [key, v] : metadata) {
    KS_CHECK(key != "general.alignment", "gguf: the writer sets general.alignment itself");
    write_string(out, key);
    write<uint32_t>(out, uint32_t(v.kind));
    if (v.kind != GgufKind::Array) {
      write_scalar(out, v.kind, v.i, v.f, v.s);
      continue;
    }
    write<uint32_t>(out, uint32_t(v.elem));
    write<uint64_t>(out, v.count());
    for (const std::string& s : v.strings) write_scalar(out, v.elem, 0, 0, s);
    for (double x : v.floats) write_scalar(out, v.elem, 0, x, "");
    for (int64_t x : v.ints) write_scalar(out, v.elem, x, 0, "");
  }
  uint64_t offset = 0;
  for (const GgufTensorOut& t : tensors) {
    KS_CHECK(!t.shape.empty() && t.shape.size() <= kMaxDims && t.name.size() <= kMaxTensorName, "gguf: tensor '",
             t.name, "' cannot be written (shape ", t.shape, ")");
    write_string(out, t.name);
    write<uint32_t>(out, uint32_t(t.shape.size()));
    for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) write<uint64_t>(out, uint64_t(*d));
    write<uint32_t>(out, uint32_t(t.type));
    write<uint64_t>(out, offset);
    offset = align_up(offset + t.data.size(), kAlign);
  }
  out.resize(align_up(out.size(), kAlign), '\0');
  for (const GgufTensorOut& t : tensors) {
    out += t.data;
    out.resize(align_up(out.size(), kAlign), '\0');
  }
  return out;
}

}  // namespace ks::nn
