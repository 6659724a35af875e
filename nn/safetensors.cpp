// nn/safetensors.cpp — the safetensors reader and writer.
#include "nn/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <tuple>

#include "core/copy.h"
#include "core/user_file.h"
#include "nn/user_input.h"

namespace ks::nn {
namespace {

const char* code_of(DType t) {
  switch (t) {
    case kFloat32: return "F32";
    case kFloat64: return "F64";
    case kInt64: return "I64";
    case kInt32: return "I32";
    case kBool: return "BOOL";
    case kBFloat16: return "BF16";
    case kFloat16: return "F16";
  }
  return "?";
}

bool dtype_of_code(const std::string& code, DType& out) {
  static const std::map<std::string, DType> codes = {{"F32", kFloat32}, {"F64", kFloat64}, {"I64", kInt64},
                                                     {"I32", kInt32},   {"BOOL", kBool},   {"BF16", kBFloat16},
                                                     {"F16", kFloat16}};
  auto it = codes.find(code);
  if (it == codes.end()) return false;
  out = it->second;
  return true;
}

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw Error(str("safetensors: ", path, ": ", problem));
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& bytes) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  KS_CHECK(fd >= 0, "cannot write ", tmp, ": ", std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(str("cannot write ", tmp, ": ", why));
    }
    done += size_t(n);
  }
  bool ok = ::fsync(fd) == 0;
  ok = (::close(fd) == 0) && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw Error(str("cannot write ", path, ": ", why));
  }
  // The rename lives in the folder's own blocks: until they reach the disk a
  // power cut can bring back the old file (or none).
  const std::string dir = std::filesystem::path(path).parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  const bool synced = dfd >= 0 && ::fsync(dfd) == 0;
  const std::string why = std::strerror(errno);
  if (dfd >= 0) ::close(dfd);
  KS_CHECK(synced, "cannot sync the folder of ", path, ": ", why);
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<Tensor> cpu;
  size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    KS_CHECK(name != "__metadata__" && !header.contains(name), "save_safetensors: ", path,
             ": duplicate or reserved tensor name '", name, "'");
    Tensor c = to_raw(t, Device::cpu(), t.dtype());
    size_t nbytes = size_t(c.numel()) * c.element_size();
    header[name] = {{"dtype", code_of(c.dtype())}, {"shape", c.sizes()}, {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
    cpu.push_back(c);
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // keep the data 8-byte aligned
  std::string bytes(8, '\0');
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) bytes[size_t(i)] = char((n >> (8 * i)) & 0xff);
  bytes += json;
  bytes.reserve(bytes.size() + offset);
  for (const Tensor& c : cpu)
    bytes.append(static_cast<const char*>(c.data_ptr()), size_t(c.numel()) * c.element_size());
  write_file_atomically(path, bytes);
}

namespace {

// One tensor of a file's layout: where its bytes lie in the data section.
struct Entry {
  size_t begin, end;
  std::string name;
  DType dtype;
  Shape shape;
};

// A file's layout: its tensors in order of their data (each range checked
// against its dtype and shape, in range, and the ranges tiling the data
// section exactly) and its metadata. `header` is the JSON, data_size the
// bytes after it.
struct Layout {
  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
};

Layout parse_layout(std::string_view header_bytes, size_t data_size, const std::string& path) {
  nlohmann::json header = parse_json(header_bytes, str("safetensors: ", path, ": header"));
  if (!header.is_object()) fail(path, "header is not a JSON object");
  Layout out;
  std::vector<Entry>& entries = out.entries;
  for (auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail(path, "__metadata__ is not an object");
      for (auto& [k, v] : entry.items()) {
        if (!v.is_string()) fail(path, str("__metadata__ value of '", k, "' is not a string"));
        out.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    auto about = [&tensor = name](const std::string& problem) { return str("tensor '", tensor, "': ", problem); };
    if (!entry.is_object()) fail(path, about("expected an object with dtype, shape and data_offsets"));
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!entry.contains(key)) fail(path, about(str("missing \"", key, "\"")));
    const auto& code_json = entry.at("dtype");
    DType dtype;
    if (!code_json.is_string() || !dtype_of_code(code_json.get<std::string>(), dtype))
      fail(path, about(str("unsupported dtype ", json_excerpt(code_json))));
    const std::string code = code_json.get<std::string>();
    const auto& shape_json = entry.at("shape");
    if (!shape_json.is_array()) fail(path, about(str("shape is not a list: ", json_excerpt(shape_json))));
    // The byte count of the shape, each step checked: a product that wraps
    // could otherwise "match" a short data range (a zero size makes any shape empty).
    Shape shape;
    uint64_t expect = itemsize(dtype);
    bool overflow = false, empty = false;
    for (const auto& d : shape_json) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        fail(path, about(str("shape ", json_excerpt(shape_json), " is not a list of sizes >= 0")));
      shape.push_back(d.get<int64_t>());
      overflow |= __builtin_mul_overflow(expect, uint64_t(shape.back()), &expect);
      empty |= shape.back() == 0;
    }
    if (empty) expect = 0;
    if (overflow && !empty) fail(path, about(str("shape ", shape, " of ", code, " needs more than 2^64 bytes")));
    const auto& offs_json = entry.at("data_offsets");
    if (!offs_json.is_array() || offs_json.size() != 2 || !offs_json[0].is_number_unsigned() ||
        !offs_json[1].is_number_unsigned() || offs_json[0].get<uint64_t>() > offs_json[1].get<uint64_t>())
      fail(path, about(str("data_offsets must be [begin, end] with 0 <= begin <= end, got ", json_excerpt(offs_json))));
    const uint64_t begin = offs_json[0].get<uint64_t>(), end = offs_json[1].get<uint64_t>();
    if (end - begin != expect)
      fail(path, about(str("(", code, " ", shape, ") needs ", expect, " bytes but data_offsets span ", end - begin)));
    if (end > data_size)
      fail(path, str("truncated: tensor '", name, "' ends at byte ", end, " of a ", data_size, "-byte data section"));
    entries.push_back({size_t(begin), size_t(end), name, dtype, shape});
  }
  // The tensors must tile the data section exactly, as Python's safetensors
  // requires: bytes of no tensor are a damaged or tampered file, not padding.
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
  auto unowned = [&](size_t from, size_t to, const std::string& where) {
    fail(path, str("bytes ", from, " to ", to, " of the data section", where, " belong to no tensor"));
  };
  size_t covered = 0;  // the data section's bytes [0, covered) belong to the tensors so far
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0 && entries[i].begin < covered)
      fail(path, str("tensors '", entries[i - 1].name, "' and '", entries[i].name, "' overlap"));
    if (entries[i].begin > covered)
      unowned(covered, entries[i].begin,
              i == 0 ? str(", before tensor '", entries[i].name, "',")
                     : str(", between tensors '", entries[i - 1].name, "' and '", entries[i].name, "',"));
    covered = entries[i].end;
  }
  if (covered < data_size)
    unowned(covered, data_size, entries.empty() ? "" : str(", after tensor '", entries.back().name, "',"));
  return out;
}

// The checks on the first 8 bytes: the header's length n, within the file and the limit.
uint64_t header_length(const char* first8, uint64_t size, const std::string& path) {
  if (size < 8) fail(path, str("truncated: ", size, " bytes, too short for the 8-byte header length"));
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(first8[i])) << (8 * i);
  if (n > size - 8) fail(path, str("truncated: header length ", n, " exceeds the ", size - 8, " bytes after it"));
  if (n > kMaxSafetensorsHeaderBytes)
    fail(path, str("header of ", n, " bytes is over the ", kMaxSafetensorsHeaderBytes, "-byte limit"));
  return n;
}

// Reads `count` bytes at `offset` of fd into `to`, or fails naming the file.
void read_at(int fd, char* to, size_t count, uint64_t offset, const std::string& path) {
  while (count > 0) {
    const ssize_t n = ::pread(fd, to, count, off_t(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, str("cannot read: ", std::strerror(errno)));
    if (n == 0) fail(path, "truncated while being read (did the file change?)");
    to += n;
    count -= size_t(n);
    offset += uint64_t(n);
  }
}

// t (as read) in `type`; float16's range checked first, naming the tensor.
Tensor cast_as_read(const Tensor& t, DType type, const std::string& name, const std::string& path) {
  if (type == kFloat16 && t.dtype() != kBFloat16) {
    dispatch_storage(t.dtype(), "safetensors", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, bool>) {
        const T* v = static_cast<const T*>(t.data_ptr());
        for (int64_t i = 0; i < t.numel(); ++i) {
          const double x = convert<double>(v[i]);
          if (std::isfinite(x) && std::fabs(x) > 65504.0)
            fail(path, str("tensor '", name, "' holds ", x, " (at index ", i,
                           "), beyond float16's range (65504): it cannot load as float16; bfloat16 can"));
        }
      }
    });
  }
  return to_raw(t, t.device(), type);
}

}  // namespace

struct SafetensorsReader::Impl {
  std::string path;
  int fd = -1;
  uint64_t data_begin = 0;
  Layout layout;
  std::map<std::string, size_t> index;  // name -> entry
  ~Impl() {
    if (fd >= 0) ::close(fd);
  }
  const Entry& entry(const std::string& name) const {
    auto it = index.find(name);
    KS_CHECK(it != index.end(), "safetensors: ", path, ": no tensor '", name, "'");
    return layout.entries[it->second];
  }
};

SafetensorsReader::SafetensorsReader(const std::string& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  check_regular_file(path, "safetensors");
  impl_->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (impl_->fd < 0) fail(path, str("cannot open: ", std::strerror(errno)));
  struct stat st {};
  if (::fstat(impl_->fd, &st) != 0) fail(path, str("cannot stat: ", std::strerror(errno)));
  const uint64_t size = uint64_t(st.st_size);
  if (size > kMaxSafetensorsBytes)
    throw Error(str("safetensors: ", path, " is ", size, " bytes, over the ", kMaxSafetensorsBytes,
                    "-byte limit for this file"));
  char first8[8] = {};
  if (size >= 8) read_at(impl_->fd, first8, 8, 0, path);
  const uint64_t n = header_length(first8, size, path);
  std::string header(size_t(n), '\0');
  read_at(impl_->fd, header.data(), size_t(n), 8, path);
  impl_->layout = parse_layout(header, size_t(size - 8 - n), path);
  impl_->data_begin = 8 + n;
  for (size_t i = 0; i < impl_->layout.entries.size(); ++i) impl_->index[impl_->layout.entries[i].name] = i;
}

SafetensorsReader::~SafetensorsReader() = default;

const std::map<std::string, std::string>& SafetensorsReader::metadata() const { return impl_->layout.metadata; }

std::vector<std::string> SafetensorsReader::names() const {
  std::vector<std::string> out;
  for (const Entry& e : impl_->layout.entries) out.push_back(e.name);
  return out;
}

bool SafetensorsReader::has(const std::string& name) const { return impl_->index.count(name) != 0; }
DType SafetensorsReader::dtype(const std::string& name) const { return impl_->entry(name).dtype; }
Shape SafetensorsReader::shape(const std::string& name) const { return impl_->entry(name).shape; }

namespace {

// `bytes` bytes of the tensor's data from `offset` on, as a new CPU tensor of `shape` (the file's dtype, or
// floating_as as cast_as_read casts).
Tensor read_span(int fd, uint64_t at, const Entry& e, Shape shape, uint64_t offset, uint64_t bytes,
                 std::optional<DType> floating_as, const std::string& path) {
  Tensor t = Tensor::empty(shape, e.dtype, Device::cpu());
  read_at(fd, static_cast<char*>(t.data_ptr()), bytes, at + e.begin + offset, path);
  if (floating_as && is_floating(t.dtype()) && t.dtype() != *floating_as)
    t = cast_as_read(t, *floating_as, e.name, path);
  return t;
}

}  // namespace

int64_t rows_per_slab(int64_t row_values) {
  return std::max<int64_t>(1, (int64_t(1) << 20) / std::max<int64_t>(row_values, 1));
}

Tensor SafetensorsReader::read(const std::string& name, std::optional<DType> floating_as) const {
  const Entry& e = impl_->entry(name);
  return read_span(impl_->fd, impl_->data_begin, e, e.shape, 0, e.end - e.begin, floating_as, impl_->path);
}

Tensor SafetensorsReader::read_rows(const std::string& name, int64_t first, int64_t count,
                                    std::optional<DType> floating_as) const {
  const Entry& e = impl_->entry(name);
  KS_CHECK(!e.shape.empty() && first >= 0 && count >= 0 && first + count <= e.shape[0], "safetensors: ", impl_->path,
           ": rows [", first, ", ", first + count, ") of tensor '", name, "' ", e.shape);
  Shape shape = e.shape;
  shape[0] = count;
  const uint64_t row_bytes = e.shape[0] ? (e.end - e.begin) / uint64_t(e.shape[0]) : 0;
  return read_span(impl_->fd, impl_->data_begin, e, shape, row_bytes * uint64_t(first), row_bytes * uint64_t(count),
                   floating_as, impl_->path);
}

void SafetensorsReader::read_into(const std::string& name, const Tensor& dst) const {
  const Entry& e = impl_->entry(name);
  KS_CHECK(dst.device().is_cpu() && dst.is_contiguous() && dst.sizes() == e.shape, "safetensors: ", impl_->path,
           ": tensor '", name, "' ", e.shape, " read into a tensor ", describe(dst));
  if (dst.dtype() == e.dtype) {
    read_at(impl_->fd, static_cast<char*>(dst.data_ptr()), e.end - e.begin, impl_->data_begin + e.begin, impl_->path);
    dst.bump_version();
    return;
  }
  KS_CHECK(is_floating(dst.dtype()) && is_floating(e.dtype), "safetensors: ", impl_->path, ": tensor '", name, "' is ",
           ks::name(e.dtype), ", not castable to ", ks::name(dst.dtype()));
  if (dst.dim() == 0 || dst.numel() == 0) return copy_(dst, read(name, dst.dtype()));
  const int64_t slab = rows_per_slab(dst.numel() / dst.size(0));
  for (int64_t r = 0; r < dst.size(0); r += slab) {  // dst's rows [r, r + n), cast from the file's
    const int64_t n = std::min(slab, dst.size(0) - r);
    Shape rows = dst.sizes();
    rows[0] = n;
    copy_(dst.alias(rows, dst.strides(), dst.storage_offset() + r * dst.stride(0)), read_rows(name, r, n, dst.dtype()));
  }
}

SafetensorsContent load_safetensors(const std::string& path, const std::function<bool(const std::string&)>& wanted,
                                    std::optional<DType> floating_as) {
  // Each tensor read straight into its own storage: never the whole file at
  // once, and nothing of the tensors not wanted.
  const SafetensorsReader file(path);
  SafetensorsContent out;
  out.metadata = file.metadata();
  for (const std::string& name : file.names())
    if (!wanted || wanted(name)) out.tensors.emplace_back(name, file.read(name, floating_as));
  return out;
}

SafetensorsContent safetensors_from_bytes(std::string_view bytes, const std::string& path) {
  const uint64_t n = header_length(bytes.data(), bytes.size(), path);
  const size_t data_begin = 8 + size_t(n);
  const Layout layout = parse_layout(bytes.substr(8, size_t(n)), bytes.size() - data_begin, path);
  SafetensorsContent out;
  out.metadata = layout.metadata;
  for (const Entry& e : layout.entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype, Device::cpu());
    std::memcpy(t.data_ptr(), bytes.data() + data_begin + e.begin, e.end - e.begin);
    out.tensors.emplace_back(e.name, t);
  }
  return out;
}

}  // namespace ks::nn
