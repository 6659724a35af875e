// datasets/data_set_kind.cpp — the data set registry (datasets/data_set_kind.h).
#include "datasets/data_set_kind.h"

#include <fstream>

#include "core/fingerprint.h"

namespace ks::data {
namespace {

Registry<DataSetKind>& registry() {
  static Registry<DataSetKind> r("data set");
  return r;
}

}  // namespace

bool register_data_set(const std::string& name, DataSetKind kind, int order) {
  KS_CHECK(kind.build && kind.keys, "register_data_set: data set '", name, "' needs build and keys");
  return registry().add(name, kind, order);
}

const DataSetKind* find_data_set_kind(const std::string& name) { return registry().find(name); }

std::vector<std::string> data_set_names() { return registry().names(); }

// The file's fingerprint (core/fingerprint.h); empty when it cannot be read (its builder then names the problem).
std::string file_fingerprint(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return "";
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  Fnv1a f;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    f.add(buf.data(), size_t(in.gcount()));
  }
  if (in.bad()) return "";
  return f.text();
}

std::string recorded_text(const nlohmann::json& recorded, const std::string& key) {
  return recorded.contains(key) && recorded[key].is_string() ? recorded[key].get<std::string>() : std::string("?");
}

std::vector<std::string> data_set_names_sorted() {
  std::vector<std::string> out;
  for (const auto& [name, _] : registry()) out.push_back(name);
  return out;
}

}  // namespace ks::data
