// tools/tokenize/text_stream.h — the inputs of `keystone tokenize`: files,
// folders and glob patterns expanded to a sorted list of files, and each file
// read as a stream of text in bounded pieces, decompressed on the way when it
// is gzip, xz or zstd (told by its first bytes, not its name), through zlib,
// liblzma and libzstd.
//
// A file is never read whole: read() hands out at most the bytes asked for,
// so a multi-gigabyte input costs a fixed buffer. The first 4 KB of text are
// checked for UTF-16/32 (datasets/io.h check_text_encoding). Errors name the
// file: missing, not a regular file, an unsupported compression (bzip2, zip,
// 7z, lz4: named, with how to convert), a name that promises a compression
// the bytes do not have, corrupt or truncated compressed data (the
// library's own message), or a compression this build was made without.
//
// Not here: splitting text into documents or tokenizing (tokenize.cpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace ks::tools {

// Each argument is a regular file, a folder (every regular file under it,
// recursively, hidden names skipped), or a glob pattern (*, ?, [...]); the
// result is each argument's files sorted by path, in argument order, with
// repeats removed. Errors name the argument: a missing path, a glob matching
// nothing, a folder with no files in it. `who` starts the messages.
std::vector<std::filesystem::path> expand_inputs(const std::vector<std::string>& args, const std::string& who);

enum class Compression { None, Gzip, Xz, Zstd };
const char* compression_name(Compression c);  // "plain", "gzip", "xz", "zstd"
// Whether this build can read it (the library was found at configure time).
bool compression_available(Compression c);

class TextStream {
 public:
  // Opens the file and tells its compression from its first bytes.
  TextStream(const std::filesystem::path& path, const std::string& who);
  ~TextStream();
  TextStream(const TextStream&) = delete;
  TextStream& operator=(const TextStream&) = delete;

  // Appends up to `max` bytes of text to `out`; returns how many (0: the end).
  size_t read(std::string& out, size_t max);
  Compression compression() const { return compression_; }
  uint64_t file_bytes() const { return file_bytes_; }  // on disk (compressed)
  uint64_t text_bytes() const { return text_bytes_; }  // handed out so far
  // The FNV-1a hash (core/fingerprint.h, "fnv1a64:...") of the file's bytes
  // on disk, complete once read() has returned 0: the same as a run's
  // fingerprint of the file.
  std::string fingerprint() const;

  struct Decoder;  // the compression library's state (text_stream.cpp)

 private:
  size_t read_raw(char* buf, size_t n);  // from the file, hashing as it goes
  std::filesystem::path path_;
  std::string who_;
  int fd_ = -1;
  Compression compression_ = Compression::None;
  uint64_t file_bytes_ = 0, text_bytes_ = 0;
  uint64_t hash_ = 0;
  bool checked_encoding_ = false;
  std::string head_;  // the first bytes of text, until the encoding check has enough
  std::unique_ptr<Decoder> dec_;
};

}  // namespace ks::tools
