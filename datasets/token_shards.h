// datasets/token_shards.h — llm.c's `.bin` token shards: the format, a
// memory-mapped reader with random access to any window of tokens (one shard,
// or a set of shards by global position), and a writer that streams tokens to
// a shard through a temporary file.
//
// The format, exactly as llm.c writes it (dev/data/data_common.py,
// write_datafile) and reads it (llmc/dataloader.h; train_gpt2.py and
// train_llama3.py's _load_data_shard):
//   bytes [0, 1024)   256 little-endian int32: [0] magic, [1] version,
//                     [2] token count n (0 <= n < 2^31), the rest 0
//   bytes [1024, ...) n tokens, little-endian, nothing after them
//   magic 20240520, version 1: uint16 tokens (llm.c's "gpt-2" descriptor)
//   magic 20240801, version 7: uint32 tokens (its "llama-3" descriptor, for
//                     vocabularies above 65,536)
// llm.c's C loader takes only the uint16 form and asserts n > 0; its Python
// Llama-3 trainer reads the uint32 form. There is no "version 2 with uint32"
// in llm.c, so this reader refuses one like any other unknown version.
//
// Every refusal is a ks::Error naming the file and the field: a file shorter
// than the header, a magic that is not one of the two (the value found; llm.c's
// other files — model, state, tokenizer, eval — are named as such), the wrong
// version for the magic, a negative or zero token count, a size that is not
// exactly header + n tokens (truncated or with bytes after), and, when the
// caller gives its tokenizer's vocabulary size, a token id at or above it.
//
// Not here: the shuffling, windows-per-epoch and resume logic of a training
// data set (that is a data set's job, built on TokenShardSet::read), and
// tokenizing text (tools/tokenize/).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace ks::data {

inline constexpr int64_t kShardHeaderInts = 256;
inline constexpr int64_t kShardHeaderBytes = kShardHeaderInts * 4;
inline constexpr int32_t kShardMagicU16 = 20240520;  // llm.c "gpt-2": version 1, uint16 tokens
inline constexpr int32_t kShardVersionU16 = 1;
inline constexpr int32_t kShardMagicU32 = 20240801;  // llm.c "llama-3": version 7, uint32 tokens
inline constexpr int32_t kShardVersionU32 = 7;
// The header's count is an int32 (and llm.c asserts len(toks) < 2**31).
inline constexpr int64_t kMaxShardTokens = (int64_t(1) << 31) - 1;

// The two token widths, named after llm.c's model descriptors.
enum class ShardFormat { U16, U32 };
// The narrowest format that holds every id below vocab_size (U16 up to 65,536 ids).
ShardFormat shard_format_for_vocab(int64_t vocab_size);
int shard_token_bytes(ShardFormat f);          // 2 or 4
const char* shard_format_name(ShardFormat f);  // "uint16 (llm.c gpt-2)" / "uint32 (llm.c llama-3)"

struct ShardHeader {
  ShardFormat format = ShardFormat::U16;
  int32_t magic = 0, version = 0;
  int64_t tokens = 0;
};
// Checks a shard's first bytes (at least the 1024 of the header, else a
// "truncated header" error) and the total size `file_bytes` against the
// token count. `where` names the file in errors.
ShardHeader parse_shard_header(std::span<const uint8_t> bytes, uint64_t file_bytes, const std::string& where);

// A checked, read-only view of a shard's tokens over bytes someone else owns
// (a mapping, or a fuzzer's buffer: no alignment is assumed).
class TokenShardView {
 public:
  TokenShardView() = default;
  // The whole shard as bytes: header and tokens. vocab_size > 0: every token
  // is checked to be below it now (one pass over the tokens), and read()
  // checks again. vocab_size 0: no id check.
  static TokenShardView from_bytes(std::span<const uint8_t> bytes, const std::string& where, int64_t vocab_size = 0,
                                   bool check_all_ids = true);

  const ShardHeader& header() const { return header_; }
  int64_t size() const { return header_.tokens; }
  const std::string& where() const { return where_; }
  int64_t at(int64_t i) const;  // token i (0 <= i < size()), unchecked against vocab
  // Copies tokens [start, start + out.size()) into out; throws naming the file
  // for a range outside the shard or (vocab_size > 0) an id at or above it.
  void read(int64_t start, std::span<int32_t> out) const;
  // The first token index at or above `start` whose id is >= vocab_size, or -1.
  int64_t find_id_at_or_above(int64_t vocab_size, int64_t start = 0) const;
  // Decodes n little-endian tokens of `format` at `bytes` (tokens first,
  // first + 1, ... of the shard `where`, for errors) into out, with the
  // checks read() makes: ids past int32, and ids >= vocab_size when > 0.
  static void decode(const uint8_t* bytes, ShardFormat format, int64_t first, std::span<int32_t> out,
                     const std::string& where, int64_t vocab_size);

 private:
  const uint8_t* tokens_ = nullptr;  // the bytes after the header
  ShardHeader header_;
  int64_t vocab_size_ = 0;
  std::string where_;
};

// One shard file, open for reading. read() copies windows with pread(2) into
// the caller's buffer, checking the byte count, so a shard truncated or
// rewritten under a running job is a ks::Error naming the file instead of the
// SIGBUS a read through a mapping would raise; a pread of a ~1K-token window
// costs about what the page-cache copy through a mapping does (docs/data.md
// has the figures). The file is also mapped read-only, lazily, for view() —
// the whole-file id check at open and tests — which nothing touches after
// open. Movable, not copyable; closes and unmaps on destruction.
class TokenShard {
 public:
  // Opens and checks the header against the file size. vocab_size > 0:
  // check_all_ids scans every token now (a pass over the file); without it
  // each read() checks the ids it copies, which keeps opening a large corpus
  // independent of its size.
  static TokenShard open(const std::filesystem::path& path, int64_t vocab_size = 0, bool check_all_ids = false);
  TokenShard() = default;
  TokenShard(TokenShard&& o) noexcept;
  TokenShard& operator=(TokenShard&& o) noexcept;
  TokenShard(const TokenShard&) = delete;
  TokenShard& operator=(const TokenShard&) = delete;
  ~TokenShard();

  const TokenShardView& view() const { return view_; }
  int64_t size() const { return view_.size(); }
  // Copies tokens [start, start + out.size()) by pread; throws naming the
  // file for a range outside the shard, a short read (the file shrank since
  // open) or (vocab_size > 0) an id at or above the vocabulary.
  void read(int64_t start, std::span<int32_t> out) const;
  const std::filesystem::path& path() const { return path_; }
  uint64_t file_bytes() const { return map_bytes_; }

 private:
  void release();
  void* map_ = nullptr;
  uint64_t map_bytes_ = 0;
  int fd_ = -1;  // kept open for read()'s pread
  int64_t vocab_size_ = 0;
  std::filesystem::path path_;
  TokenShardView view_;
};

// Shards read as one sequence of tokens, in the order given (e.g. sorted
// NAME_train_*.bin): position p is in the shard whose [offset, offset + size)
// holds it. A read may cross shard boundaries. Opening costs a header read
// and an mmap per shard, independent of the token count.
class TokenShardSet {
 public:
  static TokenShardSet open(const std::vector<std::filesystem::path>& paths, int64_t vocab_size = 0);
  int64_t size() const { return total_; }  // tokens in all shards
  size_t shards() const { return shards_.size(); }
  const TokenShard& shard(size_t i) const { return shards_[i]; }
  int64_t offset(size_t i) const { return offsets_[i]; }  // global position of shard i's first token
  // Copies tokens [start, start + out.size()) of the whole sequence.
  void read(int64_t start, std::span<int32_t> out) const;

 private:
  std::vector<TokenShard> shards_;
  std::vector<int64_t> offsets_;  // shards() + 1 entries: offsets_[i] = tokens before shard i
  int64_t total_ = 0;
};

// Streams tokens into a shard. The tokens go to a temporary file beside the
// destination (".NAME.tmp-PID"); close() writes the header, fsyncs and closes
// it; publish() renames it into place and fsyncs the folder; finish() does
// both. A writer destroyed before publish() removes its temporary file, so a
// failed or interrupted write never leaves a half shard under the final name
// (a kill -9 can leave the hidden temporary file, never NAME). Errors name the
// file and carry errno's text ("No space left on device").
class TokenShardWriter {
 public:
  TokenShardWriter(std::filesystem::path path, ShardFormat format);
  TokenShardWriter(const TokenShardWriter&) = delete;
  TokenShardWriter& operator=(const TokenShardWriter&) = delete;
  ~TokenShardWriter();

  // Appends tokens; an id outside the format (negative, or > 65,535 for
  // U16) or a count past kMaxShardTokens throws.
  void write(std::span<const int32_t> tokens);
  void write(std::span<const int64_t> tokens);
  int64_t tokens() const { return count_; }
  void close();
  void publish();
  void finish() {
    close();
    publish();
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  template <class T> void write_any(std::span<const T> tokens);
  void flush();
  std::filesystem::path path_, tmp_;
  ShardFormat format_;
  int fd_ = -1;
  bool closed_ = false, published_ = false;
  int64_t count_ = 0;
  std::vector<uint8_t> buf_;  // pending token bytes, flushed at 1 MiB
};

// A whole shard as bytes, as llm.c's write_datafile writes it (tests, fuzz seeds).
std::vector<uint8_t> shard_bytes(std::span<const int64_t> tokens, ShardFormat format);

}  // namespace ks::data
