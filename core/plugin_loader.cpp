// core/plugin_loader.cpp — load_plugin: the file copied into an anonymous
// in-memory file and hashed, the declaration read from the copy and checked,
// then dlopen of the copy with the registries' names recorded
// (core/plugin_loader.h).
#include "core/plugin_loader.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>

#include "core/device.h"
#include "core/dispatch.h"
#include "core/error.h"
#include "core/fingerprint.h"
#include "core/plugin.h"

namespace ks {

namespace fs = std::filesystem;

namespace {

struct State {
  std::recursive_mutex mutex;  // recursive: the registries call back while dlopen runs under it
  std::vector<LoadedPlugin> plugins;
  std::vector<fs::path> files;               // plugins[i]'s file, symbolic links resolved
  std::map<std::string, std::string> owner;  // "attention family 'x'" -> "plugin 'p' (path)"
  LoadedPlugin* loading = nullptr;           // the plugin whose initialisers run now
  std::vector<std::string> clashes;          // what it tried to register twice
  // The private copies' descriptors, never closed: each copy is mapped for
  // good, and dlopen knows a library by its name, /proc/self/fd/N, which
  // must not name another copy later.
  std::vector<int> copies;
};

State& state() {
  static State s;
  return s;
}

struct Declaration {
  int format = 2;  // 1: built before the plugin ABI was recorded (no revision, no layout hash)
  std::string name, version, abi;
  PluginAbi plugin_abi;
};

std::string hex16(uint64_t v) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)v);
  return hex;
}

// The plugin's bytes in an anonymous in-memory file (memfd; an unlinked file
// in the temporary folder where memfd is refused), sealed against writes, and
// their fingerprint: what is checked and what dlopen maps, so that a file
// copied over the plugin's own later changes nothing in this process. Returns
// the copy's descriptor.
int private_copy(const std::string& path, std::string& fingerprint) {
  // O_NONBLOCK: a FIFO swapped in after the caller's check must not block the open.
  const int in = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  KS_CHECK(in >= 0, "plugin ", path, ": cannot open it: ", std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } in_closer{in};
  struct stat st {};
  KS_CHECK(::fstat(in, &st) == 0 && S_ISREG(st.st_mode), "plugin ", path, ": not a regular file");
  int out = -1;
#if defined(MFD_CLOEXEC) && defined(MFD_ALLOW_SEALING)
  out = ::memfd_create("keystone-plugin", MFD_CLOEXEC | MFD_ALLOW_SEALING);
#endif
  if (out < 0) {
    const char* tmp = std::getenv("TMPDIR");
    out = ::open(tmp && *tmp ? tmp : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0700);
  }
  KS_CHECK(out >= 0, "plugin ", path,
           ": cannot make a private copy to load (memfd_create and O_TMPFILE failed: ", std::strerror(errno), ")");
  Fnv1a hash;
  std::vector<char> buf(size_t(1) << 20);
  for (;;) {
    const ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(out);
      throw Error(str("plugin ", path, ": cannot read it: ", std::strerror(err)));
    }
    if (n == 0) break;
    hash.add(buf.data(), size_t(n));
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out, buf.data() + done, size_t(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int err = errno;
        ::close(out);
        throw Error(str("plugin ", path, ": cannot copy it into memory: ", std::strerror(err)));
      }
      done += w;
    }
  }
#if defined(F_ADD_SEALS)
  (void)::fcntl(out, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);  // memfd only
#endif
  fingerprint = hash.text();
  return out;
}

// Reads `size` bytes at `offset`, or fails naming the file as truncated.
std::string read_at(std::ifstream& in, uint64_t offset, uint64_t size, const std::string& path) {
  std::string out(size, '\0');
  in.seekg(std::streamoff(offset));
  in.read(out.data(), std::streamsize(size));
  KS_CHECK(in.good(), "plugin ", path, ": truncated ELF file (", size, " bytes at offset ", offset, " are missing)");
  return out;
}

// The fields of the library's KS_PLUGIN declaration (section KS_PLUGIN_SECTION),
// read without loading it from `file` (the private copy of the plugin at
// `path`, which errors name); nullopt when it has none.
std::optional<Declaration> read_declaration(const std::string& file, const std::string& path) {
  std::ifstream in(file, std::ios::binary);
  KS_CHECK(in, "plugin ", path, ": cannot open it: ", std::strerror(errno));
  Elf64_Ehdr eh{};
  in.read(reinterpret_cast<char*>(&eh), sizeof eh);
  KS_CHECK(in.gcount() >= SELFMAG && std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0, "plugin ", path,
           ": not a shared library (not an ELF file)");
  KS_CHECK(in.good() && eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_ident[EI_DATA] == ELFDATA2LSB, "plugin ", path,
           ": not a 64-bit little-endian ELF file, as this machine's libraries are");
  KS_CHECK(eh.e_type == ET_DYN, "plugin ", path, ": not a shared library (an ELF ",
           eh.e_type == ET_EXEC  ? "executable"
           : eh.e_type == ET_REL ? "object file"
                                 : "file of another type",
           "; build it with add_library(... MODULE) or -shared)");
  KS_CHECK(eh.e_shentsize == sizeof(Elf64_Shdr) && eh.e_shstrndx < eh.e_shnum, "plugin ", path,
           ": its ELF section table is malformed");
  const std::string table = read_at(in, eh.e_shoff, uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr), path);
  auto section = [&](size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, table.data() + i * sizeof sh, sizeof sh);
    return sh;
  };
  const Elf64_Shdr names_header = section(eh.e_shstrndx);
  KS_CHECK(names_header.sh_size <= (uint64_t(1) << 24), "plugin ", path, ": its ELF section names are malformed");
  const std::string names = read_at(in, names_header.sh_offset, names_header.sh_size, path);
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sh = section(i);
    if (sh.sh_name >= names.size() || std::strcmp(names.c_str() + sh.sh_name, KS_PLUGIN_SECTION) != 0) continue;
    KS_CHECK(sh.sh_type == SHT_PROGBITS && sh.sh_size <= 4096, "plugin ", path, ": its ", KS_PLUGIN_SECTION,
             " section is malformed");
    const std::string text = read_at(in, sh.sh_offset, sh.sh_size, path);
    std::vector<std::string> fields;
    for (size_t start = 0, end; start < text.size(); start = end + 1) {
      end = text.find('\0', start);
      if (end == std::string::npos) end = text.size();
      fields.push_back(text.substr(start, end - start));
    }
    if (fields.size() >= 4 && fields[0] == KS_PLUGIN_MAGIC_V1)
      return Declaration{1, fields[1], fields[2], fields[3], {}};
    KS_CHECK(fields.size() >= 6 && fields[0] == KS_PLUGIN_MAGIC, "plugin ", path, ": its KS_PLUGIN declaration is ",
             fields.empty() ? std::string("empty") : str("of another format ('", fields[0].substr(0, 40), "')"),
             ": rebuild the plugin against these headers (Keystone ", KS_VERSION_STRING, ")");
    Declaration d{2, fields[1], fields[2], fields[3], {}};
    char* end = nullptr;
    d.plugin_abi.revision = std::strtoull(fields[4].c_str(), &end, 10);
    const bool revision_ok = !fields[4].empty() && *end == '\0';
    d.plugin_abi.layout_hash = std::strtoull(fields[5].c_str(), &end, 16);
    KS_CHECK(revision_ok && fields[5].size() == 16 && *end == '\0', "plugin ", path,
             ": its KS_PLUGIN declaration is malformed (revision '", fields[4].substr(0, 20), "', layout hash '",
             fields[5].substr(0, 20), "'): rebuild the plugin against these headers");
    return d;
  }
  return std::nullopt;
}

std::string describe(const LoadedPlugin& p) { return str("plugin '", p.name, "' (", p.path, ")"); }

std::string describe(const PluginAbi& a) {
  return str("plugin ABI revision ", a.revision, ", layout hash ", hex16(a.layout_hash));
}

// Throws unless the declaration was made from the headers this library was
// built from: the version, the ABI tag, the plugin ABI revision and layout hash.
void check_declaration(const Declaration& d, const std::string& path) {
  const PluginAbi lib = library_plugin_abi();
  const std::string ours = str("this library is Keystone ", KS_VERSION_STRING, " (ABI ", KS_PLUGIN_ABI, ", ",
                               describe(lib), "): rebuild the plugin against these headers");
  KS_CHECK(d.format != 1, "plugin ", path, " ('", d.name, "') was built against Keystone headers from before the ",
           "plugin ABI was recorded (Keystone ", d.version, ", no plugin ABI revision or layout hash), but ", ours);
  KS_CHECK(d.version == KS_VERSION_STRING && d.abi == KS_PLUGIN_ABI, "plugin ", path, " ('", d.name,
           "') was built for Keystone ", d.version, " (ABI ", d.abi, "), but this is Keystone ", KS_VERSION_STRING,
           " (ABI ", KS_PLUGIN_ABI, "): rebuild the plugin against these headers");
  KS_CHECK(d.plugin_abi.revision == lib.revision && d.plugin_abi.layout_hash == lib.layout_hash, "plugin ", path, " ('",
           d.name, "') was built against other Keystone headers (", describe(d.plugin_abi), "), but ", ours);
}

}  // namespace

const LoadedPlugin& load_plugin(const std::string& given, const PluginCheck& check) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  KS_CHECK(!given.empty(), "plugin: the path is empty");
  const fs::path path = fs::absolute(given).lexically_normal();
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  KS_CHECK(fs::exists(status), "plugin ", path.string(), ": no such file");
  KS_CHECK(fs::is_regular_file(status), "plugin ", path.string(), ": not a regular file");
  const fs::path file = fs::canonical(path);
  for (size_t i = 0; i < s.plugins.size(); ++i)
    if (s.files[i] == file) {  // loaded already: nothing to load, but the caller's check holds for it too
      if (check) check(s.plugins[i]);
      return s.plugins[i];
    }

  // Everything below reads the private copy: what is checked is what runs.
  std::string fingerprint;
  const int copy = private_copy(path.string(), fingerprint);
  s.copies.push_back(copy);  // kept open for good, even when the plugin is refused (its name is never reused)
  const std::string copy_path = str("/proc/self/fd/", copy);
  const std::optional<Declaration> d = read_declaration(copy_path, path.string());
  KS_CHECK(d, "plugin ", path.string(),
           " is not a Keystone plugin (it has no KS_PLUGIN declaration; see core/plugin.h)");
  check_declaration(*d, path.string());
  for (const LoadedPlugin& p : s.plugins)
    KS_CHECK(p.name != d->name, "plugin ", path.string(), ": a plugin named '", d->name, "' is loaded already, from ",
             p.path);

  LoadedPlugin plugin{d->name, path.string(), d->version, fingerprint, {}};
  if (check) check(plugin);
  s.loading = &plugin;
  s.clashes.clear();
  void* handle = dlopen(copy_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  s.loading = nullptr;
  if (!handle) {
    const char* error = dlerror();
    std::string why = error ? error : "dlopen failed";
    for (size_t at; (at = why.find(copy_path)) != std::string::npos;) why.replace(at, copy_path.size(), path.string());
    throw Error(str("plugin ", path.string(), ": cannot load it: ", why));
  }
  KS_CHECK(dlsym(handle, KS_PLUGIN_SYMBOL), "plugin ", path.string(), ": it exports no ", KS_PLUGIN_SYMBOL,
           " symbol (its KS_PLUGIN declaration is hidden?)");
  // Loaded, and never unloaded: whatever it registered stays in use.
  s.plugins.push_back(plugin);
  s.files.push_back(file);
  if (!s.clashes.empty()) {
    std::string list;
    for (const std::string& c : s.clashes) list += (list.empty() ? "" : "; ") + c;
    throw Error(str(describe(plugin), ": ", list, ". A plugin adds names; it cannot replace one"));
  }
  return s.plugins.back();
}

std::vector<LoadedPlugin> loaded_plugins() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.plugins;
}

bool plugin_may_register(const char* what, const std::string& name, bool exists) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.loading) return true;
  const std::string key = str(what, " '", name, "'");
  if (exists) {
    auto it = s.owner.find(key);
    s.clashes.push_back(
        str(key, " is registered already (", it == s.owner.end() ? "built in" : "by " + it->second, ")"));
    return false;
  }
  s.loading->registered.push_back(key);
  s.owner[key] = describe(*s.loading);
  return true;
}

bool kernel_may_register(const char* table, DeviceType type, bool filled) {
  return plugin_may_register(type == DeviceType::CPU ? "CPU kernel" : "CUDA kernel", table, filled);
}

}  // namespace ks
