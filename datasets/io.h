// datasets/io.h — the file and process plumbing that every data set shares:
// reading whole files, writing files atomically, running an external command
// (npm, tar, gzip) without a shell, gunzipping through `gzip -dc`, and the
// data cache directory.
//
// Every failure throws ks::Error naming the file or the command, because the
// usual causes (a missing package, a truncated download, no network) are
// things the user must fix by hand. This is not a general filesystem library.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ks::data {

// The whole file as bytes; `who` starts the error message ("brown: ...").
std::string read_file(const std::filesystem::path& path, const std::string& who);
// Writes through a temporary file renamed into place, so a killed process
// never leaves a half-written cache behind.
void write_file_atomic(const std::filesystem::path& path, const std::string& bytes, const std::string& who);

// The file's lines without their '\n' (and without a trailing '\r').
std::vector<std::string> split_lines(const std::string& text);

struct CommandResult {
  int status = 0;       // the exit status; 127 when the program could not be started
  std::string out;      // everything it wrote to stdout
  std::string err;      // everything it wrote to stderr
};
// Runs argv[0] (looked up on PATH) with the arguments, in directory `cwd`
// when given, capturing both streams. Never goes through a shell, so paths
// need no quoting.
CommandResult run_command(const std::vector<std::string>& argv, const std::filesystem::path& cwd = {});
// "gzip -dc /a/b.gz", for error messages.
std::string command_text(const std::vector<std::string>& argv);

// The decompressed content of a .gz file, via `gzip -dc` (zlib is not a
// Keystone dependency, and the gzip program is on every Debian system).
// Errors name the file: missing, not gzip (bad magic bytes), or corrupt /
// truncated (gzip's own message is included).
std::string gunzip_file(const std::filesystem::path& path, const std::string& who);

// Where downloaded data lives: $KEYSTONE_DATA if set, else ~/.cache/keystone.
std::filesystem::path data_cache_dir();

}  // namespace ks::data
