// datasets/io.cpp — whole-file reads, atomic writes, external commands
// (posix_spawn with both streams captured through poll), gunzip, cache dir.
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
#include "nn/user_input.h"

extern char** environ;

namespace ks::data {
namespace fs = std::filesystem;

std::string read_file(const fs::path& path, const std::string& who, uint64_t max_bytes) {
  return nn::read_regular_file(path.string(), max_bytes, who);
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
  nn::check_regular_file(path.string(), who);
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
