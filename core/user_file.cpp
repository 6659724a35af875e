// core/user_file.cpp — read_regular_file and check_regular_file: open without
// blocking, fstat, refuse anything but a regular file, read to a size limit.
#include "core/user_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "core/error.h"

namespace ks {
namespace {

// Throws unless `st` describes a regular file.
void require_regular(const struct stat& st, const std::string& path, const std::string& who) {
  if (S_ISREG(st.st_mode)) return;
  KS_CHECK(!S_ISDIR(st.st_mode), who, ": ", path, " is a directory, expected a file");
  const char* kind = S_ISFIFO(st.st_mode)   ? "a FIFO"
                     : S_ISCHR(st.st_mode)  ? "a character device"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "not a plain file";
  throw Error(str(who, ": ", path, " is not a regular file (it is ", kind, ")"));
}

[[noreturn]] void fail_open(int err, const std::string& path, const std::string& who) {
  KS_CHECK(err != ENOENT, who, ": file not found: ", path);
  throw Error(str(who, ": cannot open ", path, ": ", std::strerror(err)));
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

void check_regular_file(const std::string& path, const std::string& who) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) fail_open(errno, path, who);
  require_regular(st, path, who);
}

std::string read_regular_file(const std::string& path, uint64_t max_bytes, const std::string& who) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer before fstat refuses it.
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (f.fd < 0) fail_open(errno, path, who);
  struct stat st;
  KS_CHECK(::fstat(f.fd, &st) == 0, who, ": cannot stat ", path, ": ", std::strerror(errno));
  require_regular(st, path, who);
  auto over = [&](uint64_t n) {
    return Error(str(who, ": ", path, " is ", n, " bytes, over the ", max_bytes, "-byte limit for this file"));
  };
  if (uint64_t(st.st_size) > max_bytes) throw over(uint64_t(st.st_size));
  std::string bytes;
  try {
    // One byte more than the size, so reaching end of file needs no second allocation.
    bytes.resize(size_t(st.st_size) + 1);
    size_t done = 0;
    for (;;) {
      if (done == bytes.size()) {  // the file grew while being read
        if (done > max_bytes) throw over(done);
        bytes.resize(done + done / 2 + 4096);
      }
      ssize_t n = ::read(f.fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      KS_CHECK(n >= 0, who, ": error reading ", path, ": ", std::strerror(errno));
      if (n == 0) break;
      done += size_t(n);
    }
    if (done > max_bytes) throw over(done);
    bytes.resize(done);
  } catch (const std::bad_alloc&) {
    throw Error(str(who, ": out of memory while reading ", path, " (", st.st_size, " bytes)"));
  }
  return bytes;
}

}  // namespace ks
