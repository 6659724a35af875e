// datasets/io.cpp — whole-file reads, the UTF-16/32 check of text files,
// atomic writes, external commands (posix_spawn with both streams captured
// through poll), gunzip, cache dir.
#include "datasets/io.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "core/user_file.h"

extern char** environ;

namespace ks::data {
namespace fs = std::filesystem;

std::string read_file(const fs::path& path, const std::string& who, uint64_t max_bytes) {
  return read_regular_file(path.string(), max_bytes, who);
}

namespace {

// "FF FE": the bytes of a byte-order mark as hex.
std::string hex_bytes(std::string_view b) {
  static const char digits[] = "0123456789ABCDEF";
  std::string s;
  for (unsigned char c : b) s += str(s.empty() ? "" : " ", digits[c >> 4], digits[c & 15]);
  return s;
}

}  // namespace

void check_text_encoding(std::string_view bytes, const fs::path& path, const std::string& who) {
  // The name iconv knows and ours, by byte-order mark; UTF-32's first (its LE mark starts as UTF-16's).
  struct Mark {
    std::string_view bytes;
    const char* iconv;
    const char* name;
  };
  static const Mark kMarks[] = {{std::string_view("\xFF\xFE\0\0", 4), "UTF-32", "UTF-32 LE"},
                                {std::string_view("\0\0\xFE\xFF", 4), "UTF-32", "UTF-32 BE"},
                                {std::string_view("\xFF\xFE", 2), "UTF-16", "UTF-16 LE"},
                                {std::string_view("\xFE\xFF", 2), "UTF-16", "UTF-16 BE"}};
  auto refuse = [&](const char* name, const std::string& why, const char* iconv) {
    throw Error(str(who, ": ", path.string(), " looks like ", name, " (", why,
                    "), not UTF-8: convert it first, e.g. iconv -f ", iconv, " -t UTF-8 ", path.string(), " > ",
                    path.string(), ".utf8"));
  };
  for (const Mark& m : kMarks)
    if (bytes.substr(0, m.bytes.size()) == m.bytes) refuse(m.name, "byte-order mark " + hex_bytes(m.bytes), m.iconv);
  // No mark: where the NULs of the first bytes fall, by offset mod 4.
  const std::string_view head = bytes.substr(0, kEncodingSampleBytes);
  size_t nul[4] = {0, 0, 0, 0}, at[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < head.size(); ++i) {
    ++at[i % 4];
    nul[i % 4] += head[i] == '\0';
  }
  const size_t total = nul[0] + nul[1] + nul[2] + nul[3];
  if (total * 10 < head.size() || total == 0) return;
  const std::string why = str(total, " of its first ", head.size(), " bytes are NUL");
  auto all = [&](int r) { return at[r] > 0 && double(nul[r]) >= 0.9 * double(at[r]); };
  auto few = [&](int r) { return double(nul[r]) <= 0.5 * double(at[r]); };
  // UTF-32: every character's two high bytes are NUL (below U+10000), LE at offsets 2 and 3 mod 4, BE at 0 and 1.
  if (head.size() >= 4 && all(2) && all(3) && few(0)) refuse("UTF-32 LE", why + ", as in UTF-32 LE", "UTF-32LE");
  if (head.size() >= 4 && all(0) && all(1) && few(3)) refuse("UTF-32 BE", why + ", as in UTF-32 BE", "UTF-32BE");
  // UTF-16: an ASCII or Latin-1 character's high byte is NUL, LE at odd offsets, BE at even.
  const size_t odd = nul[1] + nul[3], even = nul[0] + nul[2];
  if (double(odd) >= 0.9 * double(total)) refuse("UTF-16 LE", why + ", nearly all at odd offsets", "UTF-16LE");
  if (double(even) >= 0.9 * double(total)) refuse("UTF-16 BE", why + ", nearly all at even offsets", "UTF-16BE");
  throw Error(str(who, ": ", path.string(), " is not UTF-8 text: ", why, " (a binary file?)"));
}

std::string read_text_file(const fs::path& path, const std::string& who, uint64_t max_bytes) {
  std::string bytes = read_file(path, who, max_bytes);
  check_text_encoding(bytes, path, who);
  return bytes;
}

void write_file_atomic(const fs::path& path, const std::string& bytes, const std::string& who) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  fs::path tmp = path;
  tmp += ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    KS_CHECK(out, who, ": cannot write ", tmp.string(), ": ", std::strerror(errno));
    out.write(bytes.data(), std::streamsize(bytes.size()));
    out.close();
    KS_CHECK(out, who, ": error writing ", tmp.string());
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error(str(who, ": cannot move ", tmp.string(), " to ", path.string()));
  }
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    size_t stop = end;
    if (stop > start && text[stop - 1] == '\r') --stop;
    lines.emplace_back(text, start, stop - start);
    start = end + 1;
  }
  return lines;
}

std::string command_text(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

namespace {

// Closes both pipe ends it owns on every path out of run_command.
struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() { KS_CHECK(::pipe2(fd, O_CLOEXEC) == 0, "run_command: pipe failed: ", std::strerror(errno)); }
  ~Pipe() { close_all(); }
  void close_end(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
  void close_all() { close_end(0), close_end(1); }
};

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv, const fs::path& cwd, size_t max_out) {
  KS_CHECK(!argv.empty(), "run_command: empty command");
  Pipe out, err;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out.fd[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err.fd[1], 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  CommandResult result;
  if (rc != 0) {
    result.status = 127;
    result.err = str("cannot start ", argv[0], ": ", std::strerror(rc));
    return result;
  }
  out.close_end(1);
  err.close_end(1);
  // Read both streams until both close, so neither child write can block.
  pollfd fds[2] = {{out.fd[0], POLLIN, 0}, {err.fd[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  char buf[65536];
  int open = 2;
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0 && i == 0 && result.out.size() + size_t(n) > max_out) {
        // Over the cap: stop the child rather than hold its output (a gzip bomb).
        result.out_overflow = true;
        ::kill(pid, SIGKILL);
        fds[0].fd = fds[1].fd = -1;
        open = 0;
      } else if (n > 0) {
        sinks[i]->append(buf, size_t(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open;
      }
    }
  }
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(wstatus))
    result.status = WEXITSTATUS(wstatus);
  else if (WIFSIGNALED(wstatus))
    result.status = 128 + WTERMSIG(wstatus);
  // posix_spawnp reports a missing program only through the child's exit 127.
  if (result.status == 127 && result.err.empty()) result.err = str("cannot start ", argv[0]);
  return result;
}

std::string gunzip_file(const fs::path& path, const std::string& who, size_t max_bytes) {
  check_regular_file(path.string(), who);
  {
    std::ifstream in(path, std::ios::binary);
    KS_CHECK(in, who, ": cannot open ", path.string(), ": ", std::strerror(errno));
    unsigned char magic[2] = {0, 0};
    in.read(reinterpret_cast<char*>(magic), 2);
    KS_CHECK(in.gcount() == 2 && magic[0] == 0x1f && magic[1] == 0x8b, who, ": ", path.string(),
             " is not a gzip file (bad magic bytes)");
  }
  std::vector<std::string> argv = {"gzip", "-dc", path.string()};
  CommandResult r = run_command(argv, {}, max_bytes);
  KS_CHECK(!r.out_overflow, who, ": ", path.string(), " decompresses to more than ", max_bytes,
           " bytes, the limit for this file");
  std::string why = r.err;
  while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
  KS_CHECK(r.status == 0, who, ": ", path.string(), " is corrupt or truncated: `", command_text(argv),
           "` exited with status ", r.status, why.empty() ? "" : ": ", why);
  return std::move(r.out);
}

fs::path data_cache_dir() {
  if (const char* d = std::getenv("KEYSTONE_DATA"); d && *d) return fs::path(d);
  const char* home = std::getenv("HOME");
  KS_CHECK(home && *home, "data cache: neither KEYSTONE_DATA nor HOME is set");
  return fs::path(home) / ".cache" / "keystone";
}

}  // namespace ks::data
