// datasets/io.h — the file and process plumbing that every data set shares:
// reading whole files, refusing text in UTF-16/32, writing files atomically,
// running an external command (npm, tar, gzip) without a shell, gunzipping
// through `gzip -dc`, and the data cache directory.
//
// Every failure throws ks::Error naming the file or the command, because the
// usual causes (a missing package, a truncated download, no network) are
// things the user must fix by hand. This is not a general filesystem library.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ks::data {

// The largest file (or decompressed .gz) a data set reads into memory:
// above any corpus Keystone trains on, below what would exhaust the machine.
inline constexpr uint64_t kMaxDataFileBytes = uint64_t(8) << 30;

// The whole regular file as bytes, through the one guard of user-named files
// (core/user_file.h: no FIFOs, devices or directories, at most max_bytes);
// `who` starts the error message ("brown: ...").
std::string read_file(const std::filesystem::path& path, const std::string& who,
                      uint64_t max_bytes = kMaxDataFileBytes);
// Throws when `bytes`, the content of the file `path`, look like text in
// UTF-16 or UTF-32 rather than UTF-8: a byte-order mark (FF FE, FE FF,
// FF FE 00 00, 00 00 FE FF), or NUL bytes in at least a tenth of the first
// kEncodingSampleBytes, nearly all at the places UTF-16/32 put them (ASCII
// text in UTF-16 is half NULs). Read as UTF-8, such a file is its characters
// with NULs between them, and a model would train on that. The error names
// the file and the encoding and says how to convert it: "who: p looks like
// UTF-16 LE (byte-order mark FF FE), not UTF-8: convert it first, e.g. iconv
// -f UTF-16 -t UTF-8 p > p.utf8". NUL-heavy bytes of no such pattern are
// refused as not text ("... are NUL: a binary file?"). A UTF-8 byte-order
// mark and a few NULs pass.
void check_text_encoding(std::string_view bytes, const std::filesystem::path& path, const std::string& who);
inline constexpr size_t kEncodingSampleBytes = 4096;
// A user's text file (data, prompts, sources): read_file, then
// check_text_encoding.
std::string read_text_file(const std::filesystem::path& path, const std::string& who,
                           uint64_t max_bytes = kMaxDataFileBytes);

// Writes through a temporary file renamed into place, so a killed process
// never leaves a half-written cache behind.
void write_file_atomic(const std::filesystem::path& path, const std::string& bytes, const std::string& who);

// The file's lines without their '\n' (and without a trailing '\r').
std::vector<std::string> split_lines(const std::string& text);

struct CommandResult {
  int status = 0;             // the exit status; 127 when the program could not be started
  std::string out;            // everything it wrote to stdout
  std::string err;            // everything it wrote to stderr
  bool out_overflow = false;  // stdout passed max_out: the child was killed, `out` is partial
};
// Runs argv[0] (looked up on PATH) with the arguments, in directory `cwd`
// when given, capturing both streams. Never goes through a shell, so paths
// need no quoting. Output past max_out bytes on stdout kills the child.
CommandResult run_command(const std::vector<std::string>& argv, const std::filesystem::path& cwd = {},
                          size_t max_out = SIZE_MAX);
// "gzip -dc /a/b.gz", for error messages.
std::string command_text(const std::vector<std::string>& argv);

// The decompressed content of a .gz file, via `gzip -dc` (zlib is not a
// Keystone dependency, and the gzip program is on every Debian system).
// Errors name the file: missing or not a regular file, not gzip (bad magic
// bytes), corrupt / truncated (gzip's own message is included), or
// decompressing to more than max_bytes (a few KB of gzip can expand to
// terabytes; gzip is stopped at the cap).
std::string gunzip_file(const std::filesystem::path& path, const std::string& who,
                        size_t max_bytes = kMaxDataFileBytes);

// Where downloaded data lives: $KEYSTONE_DATA if set, else ~/.cache/keystone.
std::filesystem::path data_cache_dir();

}  // namespace ks::data
