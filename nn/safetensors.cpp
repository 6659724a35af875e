// nn/safetensors.cpp — the safetensors reader and writer.
#include "nn/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/copy.h"

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

SafetensorsContent load_safetensors(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path, std::string("cannot open (") + std::strerror(errno) + ")");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 8) fail(path, str("truncated: ", bytes.size(), " bytes, too short for the 8-byte header length"));
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(bytes[size_t(i)])) << (8 * i);
  if (n > bytes.size() - 8)
    fail(path, str("truncated: header length ", n, " exceeds the ", bytes.size() - 8, " bytes after it"));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.substr(8, size_t(n)));
  } catch (const nlohmann::json::exception& e) {
    fail(path, str("header is not valid JSON (", e.what(), ")"));
  }
  if (!header.is_object()) fail(path, "header is not a JSON object");
  const size_t data_begin = 8 + size_t(n), data_size = bytes.size() - data_begin;

  SafetensorsContent out;
  struct Entry {
    size_t begin, end;
    std::string name;
    Tensor tensor;
  };
  std::vector<Entry> entries;
  for (auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail(path, "__metadata__ is not an object");
      for (auto& [k, v] : entry.items()) {
        if (!v.is_string()) fail(path, str("__metadata__ value of '", k, "' is not a string"));
        out.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    try {
      DType dtype;
      std::string code = entry.at("dtype").get<std::string>();
      if (!dtype_of_code(code, dtype)) fail(path, str("tensor '", name, "' has unsupported dtype '", code, "'"));
      Shape shape = entry.at("shape").get<Shape>();
      auto offs = entry.at("data_offsets").get<std::vector<uint64_t>>();
      if (offs.size() != 2 || offs[0] > offs[1]) fail(path, str("tensor '", name, "' has bad data_offsets"));
      for (int64_t s : shape)
        if (s < 0) fail(path, str("tensor '", name, "' has a negative size in shape ", shape));
      size_t expect = size_t(numel_of(shape)) * itemsize(dtype);
      if (offs[1] - offs[0] != expect)
        fail(path, str("tensor '", name, "' (", code, " ", shape, ") needs ", expect, " bytes but data_offsets span ",
                       offs[1] - offs[0]));
      if (offs[1] > data_size)
        fail(path, str("truncated: tensor '", name, "' ends at byte ", offs[1], " of a ", data_size,
                       "-byte data section"));
      Tensor t = Tensor::empty(shape, dtype, Device::cpu());
      std::memcpy(t.data_ptr(), bytes.data() + data_begin + offs[0], expect);
      entries.push_back({size_t(offs[0]), size_t(offs[1]), name, t});
    } catch (const nlohmann::json::exception& e) {
      fail(path, str("tensor '", name, "' has a malformed entry (", e.what(), ")"));
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0 && entries[i].begin < entries[i - 1].end)
      fail(path, str("tensors '", entries[i - 1].name, "' and '", entries[i].name, "' overlap"));
    out.tensors.emplace_back(entries[i].name, entries[i].tensor);
  }
  return out;
}

}  // namespace ks::nn
