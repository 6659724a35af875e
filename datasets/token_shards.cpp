// datasets/token_shards.cpp — llm.c's .bin token shards: header checks, the
// pread reader (a mapping only for the whole-file id check), shard sets, and the temp-file writer (see token_shards.h).
#include "datasets/token_shards.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/user_file.h"

namespace ks::data {

// The shard's integers are little-endian on disk and read with memcpy.
static_assert(std::endian::native == std::endian::little, "token shards are read on little-endian hosts only");

namespace {

int32_t load_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// What an llm.c file with this magic is, when it is not a token shard.
const char* llmc_other_file(int32_t magic) {
  switch (magic) {
    case 20240326: return "an llm.c model checkpoint (gpt2_*.bin)";
    case 20240327: return "an llm.c debug state file (gpt2_*_debug_state.bin)";
    case 20240328: return "an llm.c tokenizer file (gpt2_tokenizer.bin)";
    case 20240522: return "an llm.c eval file (HellaSwag/MMLU examples)";
    default: return nullptr;
  }
}

std::string errno_text(int e) { return std::strerror(e); }

}  // namespace

ShardFormat shard_format_for_vocab(int64_t vocab_size) {
  return vocab_size <= 65536 ? ShardFormat::U16 : ShardFormat::U32;
}
int shard_token_bytes(ShardFormat f) { return f == ShardFormat::U16 ? 2 : 4; }
const char* shard_format_name(ShardFormat f) {
  return f == ShardFormat::U16 ? "uint16 (llm.c gpt-2)" : "uint32 (llm.c llama-3)";
}

ShardHeader parse_shard_header(std::span<const uint8_t> bytes, uint64_t file_bytes, const std::string& where) {
  KS_CHECK(file_bytes >= uint64_t(kShardHeaderBytes) && bytes.size() >= size_t(kShardHeaderBytes), "token shard ",
           where, ": truncated header: the file is ", file_bytes, " bytes, a shard's header alone is ",
           kShardHeaderBytes, " (256 int32)");
  ShardHeader h;
  h.magic = load_i32(bytes.data());
  h.version = load_i32(bytes.data() + 4);
  const int32_t count = load_i32(bytes.data() + 8);
  if (h.magic == kShardMagicU16) {
    h.format = ShardFormat::U16;
    KS_CHECK(h.version == kShardVersionU16, "token shard ", where, ": unsupported version ", h.version,
             " (header[1]) for magic ", h.magic, ": llm.c's uint16 shards are version ", kShardVersionU16);
  } else if (h.magic == kShardMagicU32) {
    h.format = ShardFormat::U32;
    KS_CHECK(h.version == kShardVersionU32, "token shard ", where, ": unsupported version ", h.version,
             " (header[1]) for magic ", h.magic, ": llm.c's uint32 shards are version ", kShardVersionU32);
  } else {
    const char* other = llmc_other_file(h.magic);
    throw Error(str("token shard ", where, ": bad magic ", h.magic, " (header[0]",
                    other ? str(": ", other) : std::string(), "); a token shard has ", kShardMagicU16,
                    " (uint16 tokens) or ", kShardMagicU32, " (uint32 tokens)"));
  }
  KS_CHECK(count >= 0, "token shard ", where, ": negative token count ", count, " (header[2])");
  KS_CHECK(count > 0, "token shard ", where, ": empty: the token count (header[2]) is 0");
  h.tokens = count;
  const uint64_t want = uint64_t(kShardHeaderBytes) + uint64_t(count) * uint64_t(shard_token_bytes(h.format));
  if (file_bytes != want) {
    if (file_bytes < want)
      throw Error(str("token shard ", where, ": truncated: header[2] says ", count, " tokens of ",
                      shard_token_bytes(h.format), " bytes, so ", want, " bytes, but the file is ", file_bytes, " (",
                      want - file_bytes, " bytes short)"));
    throw Error(str("token shard ", where, ": token count does not match the file size: header[2] says ", count,
                    " tokens of ", shard_token_bytes(h.format), " bytes, so ", want, " bytes, but the file is ",
                    file_bytes, " (", file_bytes - want, " bytes after the last token)"));
  }
  return h;
}

TokenShardView TokenShardView::from_bytes(std::span<const uint8_t> bytes, const std::string& where, int64_t vocab_size,
                                          bool check_all_ids) {
  TokenShardView v;
  v.header_ = parse_shard_header(bytes, bytes.size(), where);
  v.tokens_ = bytes.data() + kShardHeaderBytes;
  v.vocab_size_ = vocab_size;
  v.where_ = where;
  if (vocab_size > 0 && check_all_ids) {
    const int64_t bad = v.find_id_at_or_above(vocab_size);
    KS_CHECK(bad < 0, "token shard ", where, ": token ", bad, " is id ", v.at(bad),
             ", outside the tokenizer's vocabulary of ", vocab_size, " ids");
  }
  return v;
}

int64_t TokenShardView::at(int64_t i) const {
  if (header_.format == ShardFormat::U16) {
    uint16_t t;
    std::memcpy(&t, tokens_ + 2 * i, 2);
    return t;
  }
  uint32_t t;
  std::memcpy(&t, tokens_ + 4 * i, 4);
  return t;
}

int64_t TokenShardView::find_id_at_or_above(int64_t vocab_size, int64_t start) const {
  if (header_.format == ShardFormat::U16 && vocab_size > 65535) return -1;
  for (int64_t i = start; i < header_.tokens; ++i)
    if (at(i) >= vocab_size) return i;
  return -1;
}

void TokenShardView::read(int64_t start, std::span<int32_t> out) const {
  const int64_t n = int64_t(out.size());
  KS_CHECK(start >= 0 && n >= 0 && start <= header_.tokens - n, "token shard ", where_, ": tokens [", start, ", ",
           start + n, ") are outside its ", header_.tokens, " tokens");
  decode(tokens_ + int64_t(shard_token_bytes(header_.format)) * start, header_.format, start, out, where_, vocab_size_);
}

void TokenShardView::decode(const uint8_t* p, ShardFormat format, int64_t first, std::span<int32_t> out,
                            const std::string& where, int64_t vocab_size) {
  const int64_t n = int64_t(out.size());
  if (format == ShardFormat::U16) {
    for (int64_t i = 0; i < n; ++i) out[size_t(i)] = int32_t(uint16_t(p[2 * i] | (p[2 * i + 1] << 8)));
  } else {
    for (int64_t i = 0; i < n; ++i) {
      uint32_t t;
      std::memcpy(&t, p + 4 * i, 4);
      // An id past int32 is past any vocabulary; with no vocabulary given it
      // would wrap negative, so it is refused here too.
      KS_CHECK(t <= uint32_t(INT32_MAX), "token shard ", where, ": token ", first + i, " is id ", t,
               ", past the largest id Keystone takes (2^31 - 1)");
      out[size_t(i)] = int32_t(t);
    }
  }
  if (vocab_size > 0)
    for (int64_t i = 0; i < n; ++i)
      KS_CHECK(out[size_t(i)] < vocab_size, "token shard ", where, ": token ", first + i, " is id ", out[size_t(i)],
               ", outside the tokenizer's vocabulary of ", vocab_size, " ids");
}

// ---- TokenShard ---------------------------------------------------------------

TokenShard TokenShard::open(const std::filesystem::path& path, int64_t vocab_size, bool check_all_ids) {
  const std::string where = path.string();
  check_regular_file(where, "token shard");  // missing, a directory, a FIFO or device: named and refused
  TokenShard s;
  s.path_ = path;
  const int fd = ::open(where.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  KS_CHECK(fd >= 0, "token shard ", where, ": cannot open: ", errno_text(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int e = errno;
    ::close(fd);
    throw Error(str("token shard ", where, ": cannot stat: ", errno_text(e)));
  }
  const uint64_t size = uint64_t(st.st_size);
  // The header is checked from a plain read first, so a tiny or foreign file
  // is refused without mapping it (and an empty file cannot be mapped at all).
  uint8_t head[kShardHeaderBytes] = {};
  ssize_t got = size >= uint64_t(kShardHeaderBytes) ? ::pread(fd, head, sizeof head, 0) : 0;
  if (got < 0) {
    const int e = errno;
    ::close(fd);
    throw Error(str("token shard ", where, ": cannot read: ", errno_text(e)));
  }
  try {
    parse_shard_header(std::span<const uint8_t>(head, size_t(got)), size, where);
  } catch (...) {
    ::close(fd);
    throw;
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int e = errno;
  if (map == MAP_FAILED) ::close(fd);
  KS_CHECK(map != MAP_FAILED, "token shard ", where, ": cannot mmap ", size, " bytes: ", errno_text(e));
  s.map_ = map;
  s.map_bytes_ = size;
  s.fd_ = fd;
  s.vocab_size_ = vocab_size;
  s.view_ = TokenShardView::from_bytes(std::span<const uint8_t>(static_cast<const uint8_t*>(map), size), where,
                                       vocab_size, check_all_ids);
  return s;
}

void TokenShard::read(int64_t start, std::span<int32_t> out) const {
  const int64_t n = int64_t(out.size()), size = view_.size();
  KS_CHECK(start >= 0 && n >= 0 && start <= size - n, "token shard ", path_.string(), ": tokens [", start, ", ",
           start + n, ") are outside its ", size, " tokens");
  const int width = shard_token_bytes(view_.header().format);
  // One buffer per thread (the loader's producer and the evaluator read
  // concurrently), grown to the largest window read so far.
  thread_local std::vector<uint8_t> bytes;
  const size_t want = size_t(n) * size_t(width);
  if (bytes.size() < want) bytes.resize(want);
  const off_t at = off_t(kShardHeaderBytes + start * width);
  size_t got = 0;
  while (got < want) {
    const ssize_t r = ::pread(fd_, bytes.data() + got, want - got, at + off_t(got));
    if (r < 0 && errno == EINTR) continue;
    KS_CHECK(r >= 0, "token shard ", path_.string(), ": cannot read ", want, " bytes at offset ", at, ": ",
             errno_text(errno));
    KS_CHECK(r > 0, "token shard ", path_.string(), ": read ", got, " of ", want, " bytes at offset ", at,
             ": the file is shorter than the ", map_bytes_,
             " bytes it had when this job opened it (truncated or rewritten while the job ran)");
    got += size_t(r);
  }
  TokenShardView::decode(bytes.data(), view_.header().format, start, out, path_.string(), vocab_size_);
}

void TokenShard::release() {
  if (map_) ::munmap(map_, map_bytes_);
  if (fd_ >= 0) ::close(fd_);
  map_ = nullptr;
  map_bytes_ = 0;
  fd_ = -1;
}

TokenShard::TokenShard(TokenShard&& o) noexcept
    : map_(o.map_),
      map_bytes_(o.map_bytes_),
      fd_(o.fd_),
      vocab_size_(o.vocab_size_),
      path_(std::move(o.path_)),
      view_(std::move(o.view_)) {
  o.map_ = nullptr;
  o.map_bytes_ = 0;
  o.fd_ = -1;
}

TokenShard& TokenShard::operator=(TokenShard&& o) noexcept {
  if (this != &o) {
    release();
    map_ = o.map_;
    map_bytes_ = o.map_bytes_;
    fd_ = o.fd_;
    vocab_size_ = o.vocab_size_;
    path_ = std::move(o.path_);
    view_ = std::move(o.view_);
    o.map_ = nullptr;
    o.map_bytes_ = 0;
    o.fd_ = -1;
  }
  return *this;
}

TokenShard::~TokenShard() { release(); }

// ---- TokenShardSet ------------------------------------------------------------

TokenShardSet TokenShardSet::open(const std::vector<std::filesystem::path>& paths, int64_t vocab_size) {
  KS_CHECK(!paths.empty(), "token shards: no shard files given");
  TokenShardSet set;
  set.offsets_.push_back(0);
  for (const auto& p : paths) {
    set.shards_.push_back(TokenShard::open(p, vocab_size));
    set.total_ += set.shards_.back().size();
    set.offsets_.push_back(set.total_);
  }
  return set;
}

void TokenShardSet::read(int64_t start, std::span<int32_t> out) const {
  const int64_t n = int64_t(out.size());
  KS_CHECK(start >= 0 && n >= 0 && start <= total_ - n, "token shards: tokens [", start, ", ", start + n,
           ") are outside the ", total_, " tokens of ", shards_.size(), " shards");
  // The shard holding `start`: the last offset at or below it.
  size_t i = size_t(std::upper_bound(offsets_.begin(), offsets_.end(), start) - offsets_.begin()) - 1;
  int64_t done = 0;
  while (done < n) {
    const int64_t local = start + done - offsets_[i];
    const int64_t take = std::min(n - done, shards_[i].size() - local);
    shards_[i].read(local, out.subspan(size_t(done), size_t(take)));
    done += take;
    ++i;
  }
}

// ---- TokenShardWriter ---------------------------------------------------------

namespace {
constexpr size_t kWriteBuffer = size_t(1) << 20;

void write_all(int fd, const uint8_t* p, size_t n, const std::filesystem::path& tmp, const std::string& what) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    KS_CHECK(w > 0, "token shard ", tmp.string(), ": cannot write ", what, ": ", errno_text(w < 0 ? errno : EIO));
    p += w;
    n -= size_t(w);
  }
}

std::vector<uint8_t> header_bytes(ShardFormat format, int64_t tokens) {
  std::vector<uint8_t> h(size_t(kShardHeaderBytes), 0);
  const int32_t fields[3] = {format == ShardFormat::U16 ? kShardMagicU16 : kShardMagicU32,
                             format == ShardFormat::U16 ? kShardVersionU16 : kShardVersionU32, int32_t(tokens)};
  std::memcpy(h.data(), fields, sizeof fields);
  return h;
}
}  // namespace

TokenShardWriter::TokenShardWriter(std::filesystem::path path, ShardFormat format)
    : path_(std::move(path)), format_(format) {
  tmp_ = path_.parent_path() / str(".", path_.filename().string(), ".tmp-", ::getpid());
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  KS_CHECK(fd_ >= 0, "token shard ", path_.string(), ": cannot create ", tmp_.string(), ": ", errno_text(errno));
  buf_.reserve(kWriteBuffer);
  // The header's place, rewritten with the count by close().
  try {
    const std::vector<uint8_t> h = header_bytes(format_, 0);
    write_all(fd_, h.data(), h.size(), tmp_, "the header");
  } catch (...) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
    throw;
  }
}

TokenShardWriter::~TokenShardWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!published_) ::unlink(tmp_.c_str());
}

template <class T> void TokenShardWriter::write_any(std::span<const T> tokens) {
  KS_CHECK(!closed_, "token shard ", path_.string(), ": write after close");
  KS_CHECK(int64_t(tokens.size()) <= kMaxShardTokens - count_, "token shard ", path_.string(), ": more than ",
           kMaxShardTokens, " tokens, the most a shard's int32 count holds");
  const int64_t max_id = format_ == ShardFormat::U16 ? 65535 : int64_t(UINT32_MAX);
  const int w = shard_token_bytes(format_);
  // In blocks: check the block's ids, then store them little-endian in one tight loop.
  constexpr size_t kBlock = 1 << 16;
  for (size_t b = 0; b < tokens.size(); b += kBlock) {
    const size_t n = std::min(kBlock, tokens.size() - b);
    const T* t = tokens.data() + b;
    bool ok = true;
    for (size_t i = 0; i < n; ++i) ok &= int64_t(t[i]) >= 0 && int64_t(t[i]) <= max_id;
    if (!ok)
      for (size_t i = 0; i < n; ++i)
        KS_CHECK(int64_t(t[i]) >= 0 && int64_t(t[i]) <= max_id, "token shard ", path_.string(), ": token ",
                 count_ + int64_t(i), " is id ", int64_t(t[i]), ", outside the ", shard_format_name(format_),
                 " format (0..", max_id, ")");
    const size_t at = buf_.size();
    buf_.resize(at + n * size_t(w));
    uint8_t* dst = buf_.data() + at;
    if (w == 2)
      for (size_t i = 0; i < n; ++i) {
        const uint16_t v = uint16_t(t[i]);
        std::memcpy(dst + 2 * i, &v, 2);
      }
    else
      for (size_t i = 0; i < n; ++i) {
        const uint32_t v = uint32_t(t[i]);
        std::memcpy(dst + 4 * i, &v, 4);
      }
    count_ += int64_t(n);
    if (buf_.size() >= kWriteBuffer) flush();
  }
}

void TokenShardWriter::write(std::span<const int32_t> tokens) { write_any(tokens); }
void TokenShardWriter::write(std::span<const int64_t> tokens) { write_any(tokens); }

void TokenShardWriter::flush() {
  write_all(fd_, buf_.data(), buf_.size(), tmp_, "tokens");
  buf_.clear();
}

void TokenShardWriter::close() {
  if (closed_) return;
  KS_CHECK(count_ > 0, "token shard ", path_.string(), ": no tokens written (llm.c's loader refuses an empty shard)");
  flush();
  const std::vector<uint8_t> h = header_bytes(format_, count_);
  KS_CHECK(::lseek(fd_, 0, SEEK_SET) == 0, "token shard ", tmp_.string(), ": cannot seek: ", errno_text(errno));
  write_all(fd_, h.data(), h.size(), tmp_, "the header");
  KS_CHECK(::fsync(fd_) == 0, "token shard ", tmp_.string(), ": fsync failed: ", errno_text(errno));
  const int rc = ::close(fd_);
  fd_ = -1;
  std::vector<uint8_t>().swap(buf_);  // a closed shard waiting to be published keeps no buffer
  KS_CHECK(rc == 0, "token shard ", tmp_.string(), ": close failed: ", errno_text(errno));
  closed_ = true;
}

void TokenShardWriter::publish() {
  KS_CHECK(closed_, "token shard ", path_.string(), ": publish before close");
  if (published_) return;
  KS_CHECK(::rename(tmp_.c_str(), path_.c_str()) == 0, "token shard ", path_.string(), ": cannot rename ",
           tmp_.string(), " into place: ", errno_text(errno));
  published_ = true;
  // The rename itself reaches the disk with the folder's fsync.
  const std::filesystem::path dir = path_.parent_path().empty() ? "." : path_.parent_path();
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::vector<uint8_t> shard_bytes(std::span<const int64_t> tokens, ShardFormat format) {
  KS_CHECK(int64_t(tokens.size()) <= kMaxShardTokens, "shard_bytes: more than ", kMaxShardTokens, " tokens");
  std::vector<uint8_t> out = header_bytes(format, int64_t(tokens.size()));
  const int w = shard_token_bytes(format);
  for (int64_t t : tokens) {
    KS_CHECK(t >= 0 && (w == 4 ? t <= int64_t(UINT32_MAX) : t <= 65535), "shard_bytes: id ", t, " outside the ",
             shard_format_name(format), " format");
    for (int b = 0; b < w; ++b) out.push_back(uint8_t(t >> (8 * b)));
  }
  return out;
}

}  // namespace ks::data
