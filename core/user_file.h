// core/user_file.h — the one guard in front of the files a user names: data
// files, configs, tokenizers, prompts and sources, safetensors and Hugging
// Face folders, run folders' files. Only a regular file of a bounded size is
// read: a FIFO would block the reader forever (or until some writer comes),
// a device such as /dev/zero or /dev/urandom never ends and fills the memory,
// and a directory is a mistake worth naming.
//
// Why in core: it needs nothing above core, and core reads user-named files
// too (the plugin loader, whose private copy of a plugin is opened the same
// way: without blocking, then fstat). Every layer above calls these
// (nn/user_input.h re-exports them beside its JSON limits; datasets/io.h's
// read_file is this with a data set's size limit), so every reader refuses
// the same files with the same words. Not here: what a file means (its own
// reader checks that).
#pragma once

#include <cstdint>
#include <string>

namespace ks {

// The bytes of the regular file `path`, which must hold at most max_bytes.
// Errors start with `who` and name the path: "who: file not found: p",
// "who: p is a directory, expected a file", "who: p is not a regular file
// (it is a FIFO)" (a character device such as /dev/zero, a block device, a
// socket), "who: p is N bytes, over the M-byte limit for this file", and out
// of memory. A FIFO is opened without waiting for a writer, so it is refused
// at once instead of blocking.
std::string read_regular_file(const std::string& path, uint64_t max_bytes, const std::string& who);

// The same checks without reading, for a file another program or library
// reads (gzip, dlopen): the same messages as read_regular_file's.
void check_regular_file(const std::string& path, const std::string& who);

}  // namespace ks
