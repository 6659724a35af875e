// tools/tokenize/text_stream.cpp — input expansion and the streamed,
// decompressing reader of `keystone tokenize` (see text_stream.h).
//
// The compression libraries are optional at build time (CMakeLists.txt finds
// them and sets KS_WITH_ZLIB, KS_WITH_LZMA, KS_WITH_ZSTD on this file alone):
// a build without one still reads plain text and the other formats, and names
// the Debian package a compressed input needs.
#include "tools/tokenize/text_stream.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "core/error.h"
#include "core/fingerprint.h"
#include "core/user_file.h"
#include "datasets/io.h"

#if KS_WITH_ZLIB
#include <zlib.h>
#endif
#if KS_WITH_LZMA
#include <lzma.h>
#endif
#if KS_WITH_ZSTD
#include <zstd.h>
#endif

namespace fs = std::filesystem;

namespace ks::tools {

namespace {

constexpr size_t kRawBuffer = size_t(1) << 18;  // 256 KiB of compressed input at a time

bool has_glob_chars(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

bool hidden(const fs::path& p) {
  const std::string n = p.filename().string();
  return !n.empty() && n[0] == '.';
}

std::string hex_prefix(const unsigned char* b, size_t n) {
  std::string s;
  char h[4];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(h, sizeof h, "%s%02X", i ? " " : "", b[i]);
    s += h;
  }
  return s;
}

}  // namespace

std::vector<fs::path> expand_inputs(const std::vector<std::string>& args, const std::string& who) {
  std::vector<fs::path> out;
  std::set<fs::path> seen;
  auto add = [&](const fs::path& p) {
    if (seen.insert(p.lexically_normal()).second) out.push_back(p);
  };
  for (const std::string& a : args) {
    std::error_code ec;
    std::vector<fs::path> files;
    if (fs::is_directory(a, ec)) {
      for (auto it = fs::recursive_directory_iterator(a, fs::directory_options::none, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (hidden(it->path())) {
          if (it->is_directory()) it.disable_recursion_pending();
          continue;
        }
        if (it->is_regular_file()) files.push_back(it->path());
      }
      KS_CHECK(!ec, who, ": cannot list the folder ", a, ": ", ec.message());
      KS_CHECK(!files.empty(), who, ": the folder ", a, " has no files in it");
    } else if (fs::exists(fs::symlink_status(a, ec)) || !has_glob_chars(a)) {
      // A file (checked as a regular file when opened), or a plain path that does not exist.
      KS_CHECK(fs::exists(a, ec), who, ": file not found: ", a);
      files.push_back(a);
    } else {
      glob_t g{};
      const int rc = ::glob(a.c_str(), 0, nullptr, &g);
      for (size_t i = 0; rc == 0 && i < g.gl_pathc; ++i)
        if (fs::is_regular_file(g.gl_pathv[i], ec)) files.push_back(g.gl_pathv[i]);
      ::globfree(&g);
      KS_CHECK(rc == 0 || rc == GLOB_NOMATCH, who, ": cannot expand the pattern ", a,
               rc == GLOB_NOSPACE ? " (out of memory)" : " (a folder could not be read)");
      KS_CHECK(!files.empty(), who, ": the pattern ", a, " matches no file");
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) add(f);
  }
  return out;
}

const char* compression_name(Compression c) {
  switch (c) {
    case Compression::Gzip: return "gzip";
    case Compression::Xz: return "xz";
    case Compression::Zstd: return "zstd";
    default: return "plain";
  }
}

bool compression_available(Compression c) {
  switch (c) {
    case Compression::Gzip: return KS_WITH_ZLIB;
    case Compression::Xz: return KS_WITH_LZMA;
    case Compression::Zstd: return KS_WITH_ZSTD;
    default: return true;
  }
}

// One compression library's state and the compressed bytes not yet decoded.
struct TextStream::Decoder {
  std::vector<char> in = std::vector<char>(kRawBuffer);
  size_t in_pos = 0, in_len = 0;
  bool in_eof = false, done = false;
#if KS_WITH_ZLIB
  z_stream z{};
  bool z_init = false;
#endif
#if KS_WITH_LZMA
  lzma_stream x = LZMA_STREAM_INIT;
  bool x_init = false;
#endif
#if KS_WITH_ZSTD
  ZSTD_DStream* zs = nullptr;
  size_t zs_hint = 1;  // ZSTD_decompressStream's last return: 0 at a frame's end
#endif
  ~Decoder() {
#if KS_WITH_ZLIB
    if (z_init) inflateEnd(&z);
#endif
#if KS_WITH_LZMA
    if (x_init) lzma_end(&x);
#endif
#if KS_WITH_ZSTD
    if (zs) ZSTD_freeDStream(zs);
#endif
  }
};

TextStream::TextStream(const fs::path& path, const std::string& who) : path_(path), who_(who) {
  const std::string p = path.string();
  check_regular_file(p, who);  // missing, a folder, a FIFO or a device: named and refused
  fd_ = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  KS_CHECK(fd_ >= 0, who, ": cannot open ", p, ": ", std::strerror(errno));
  Fnv1a f;
  hash_ = f.h;
  dec_ = std::make_unique<Decoder>();
  // The first bytes tell the format; they stay in the buffer for the decoder.
  dec_->in_len = read_raw(dec_->in.data(), dec_->in.size());
  dec_->in_eof = dec_->in_len == 0;
  const auto* b = reinterpret_cast<const unsigned char*>(dec_->in.data());
  const size_t n = dec_->in_len;
  auto starts = [&](std::initializer_list<unsigned char> m) {
    return n >= m.size() && std::equal(m.begin(), m.end(), b);
  };
  if (starts({0x1F, 0x8B}))
    compression_ = Compression::Gzip;
  else if (starts({0xFD, '7', 'z', 'X', 'Z', 0x00}))
    compression_ = Compression::Xz;
  else if (starts({0x28, 0xB5, 0x2F, 0xFD}))
    compression_ = Compression::Zstd;
  else {
    const char* other = starts({'B', 'Z', 'h'})                           ? "bzip2 (bunzip2 -k"
                        : starts({'P', 'K', 3, 4})                        ? "zip (unzip"
                        : starts({'7', 'z', 0xBC, 0xAF, 0x27, 0x1C})      ? "7z (7z x"
                        : starts({0x04, 0x22, 0x4D, 0x18})                ? "lz4 (lz4 -d"
                        : starts({0xFF, 0x06, 0x00, 0x00, 's', 'N', 'a'}) ? "snappy framing (a decompressor"
                                                                          : nullptr;
    KS_CHECK(!other, who, ": ", p, " is compressed with ", other,
             " first); keystone tokenize reads plain text, gzip, xz and zstd");
    // A name that promises a compression the bytes lack: probably a damaged or mislabelled file.
    const std::string ext = path.extension().string();
    KS_CHECK(ext != ".gz" && ext != ".xz" && ext != ".zst" && ext != ".zstd", who, ": ", p, " is named ", ext,
             " but is not ",
             ext == ".gz"   ? "gzip"
             : ext == ".xz" ? "xz"
                            : "zstd",
             " data (it starts with ",
             n ? hex_prefix(b, std::min<size_t>(n, 6)) : std::string("nothing: an empty file"), ")");
  }
  KS_CHECK(compression_available(compression_), who, ": ", p, " is ", compression_name(compression_),
           "-compressed, but this keystone was built without ",
           compression_ == Compression::Gzip ? "zlib (apt-get install zlib1g-dev"
           : compression_ == Compression::Xz ? "liblzma (apt-get install liblzma-dev"
                                             : "libzstd (apt-get install libzstd-dev",
           ", then rebuild); or decompress it first");
#if KS_WITH_ZLIB
  if (compression_ == Compression::Gzip) {
    KS_CHECK(inflateInit2(&dec_->z, 15 + 16) == Z_OK, who, ": ", p, ": zlib could not start");  // 16: gzip wrapper
    dec_->z_init = true;
  }
#endif
#if KS_WITH_LZMA
  if (compression_ == Compression::Xz) {
    KS_CHECK(lzma_stream_decoder(&dec_->x, UINT64_MAX, LZMA_CONCATENATED) == LZMA_OK, who, ": ", p,
             ": liblzma could not start");
    dec_->x_init = true;
  }
#endif
#if KS_WITH_ZSTD
  if (compression_ == Compression::Zstd) {
    dec_->zs = ZSTD_createDStream();
    KS_CHECK(dec_->zs && !ZSTD_isError(ZSTD_initDStream(dec_->zs)), who, ": ", p, ": libzstd could not start");
  }
#endif
}

TextStream::~TextStream() {
  if (fd_ >= 0) ::close(fd_);
}

std::string TextStream::fingerprint() const {
  Fnv1a f;
  f.h = hash_;
  return f.text();
}

size_t TextStream::read_raw(char* buf, size_t n) {
  for (;;) {
    const ssize_t r = ::read(fd_, buf, n);
    if (r < 0 && errno == EINTR) continue;
    KS_CHECK(r >= 0, who_, ": cannot read ", path_.string(), ": ", std::strerror(errno));
    Fnv1a f;
    f.h = hash_;
    f.add(buf, size_t(r));
    hash_ = f.h;
    file_bytes_ += uint64_t(r);
    return size_t(r);
  }
}

size_t TextStream::read(std::string& out, size_t max) {
  if (!checked_encoding_) {
    // Decode the first bytes aside for the UTF-16/32 check, then hand them out first.
    checked_encoding_ = true;
    std::string head;
    while (head.size() < data::kEncodingSampleBytes) {
      const size_t before = head.size();
      read(head, data::kEncodingSampleBytes - head.size());
      if (head.size() == before) break;
    }
    data::check_text_encoding(head, path_, who_);
    head_ = std::move(head);
  }
  if (!head_.empty()) {
    const size_t take = std::min(max, head_.size());
    out.append(head_, 0, take);
    head_.erase(0, take);
    return take;  // text_bytes_ counted these when they were decoded
  }
  Decoder& d = *dec_;
  const std::string p = path_.string();
  auto refill = [&] {
    if (d.in_pos < d.in_len || d.in_eof) return;
    d.in_len = read_raw(d.in.data(), d.in.size());
    d.in_pos = 0;
    d.in_eof = d.in_len == 0;
  };
  const size_t start = out.size();
  if (compression_ == Compression::None) {
    while (out.size() - start < max) {
      refill();
      if (d.in_pos == d.in_len) break;
      const size_t take = std::min(max - (out.size() - start), d.in_len - d.in_pos);
      out.append(d.in.data() + d.in_pos, take);
      d.in_pos += take;
    }
  } else {
    out.resize(start + max);
    char* dst = out.data() + start;
    size_t produced = 0;
    while (produced < max && !d.done) {
      refill();
      const size_t avail = d.in_len - d.in_pos;
      const char* src = d.in.data() + d.in_pos;
      size_t used = 0, made = 0;
#if KS_WITH_ZLIB
      if (compression_ == Compression::Gzip) {
        // At the end of the file right after a member's end (inflateReset zeroes total_in): done.
        if (avail == 0 && d.in_eof && d.z.total_in == 0) {
          d.done = true;
          break;
        }
        d.z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(src));
        d.z.avail_in = uInt(avail);
        d.z.next_out = reinterpret_cast<Bytef*>(dst + produced);
        d.z.avail_out = uInt(max - produced);
        const int rc = inflate(&d.z, Z_NO_FLUSH);
        used = avail - d.z.avail_in;
        made = (max - produced) - d.z.avail_out;
        KS_CHECK(rc == Z_OK || rc == Z_STREAM_END || (rc == Z_BUF_ERROR && used == 0 && made == 0), who_, ": ", p,
                 ": corrupt gzip data (zlib: ", d.z.msg ? d.z.msg : zError(rc), ")");
        KS_CHECK(!(avail == 0 && d.in_eof && made == 0 && rc != Z_STREAM_END), who_, ": ", p,
                 ": truncated gzip data (the file ends inside a compressed member)");
        // A member ended: another may follow (gzip files concatenate); reset for it.
        if (rc == Z_STREAM_END) inflateReset(&d.z);
      }
#endif
#if KS_WITH_LZMA
      if (compression_ == Compression::Xz) {
        d.x.next_in = reinterpret_cast<const uint8_t*>(src);
        d.x.avail_in = avail;
        d.x.next_out = reinterpret_cast<uint8_t*>(dst + produced);
        d.x.avail_out = max - produced;
        const lzma_ret rc = lzma_code(&d.x, d.in_eof && avail == 0 ? LZMA_FINISH : LZMA_RUN);
        used = avail - d.x.avail_in;
        made = (max - produced) - d.x.avail_out;
        if (rc == LZMA_STREAM_END)
          d.done = true;
        else if (rc == LZMA_BUF_ERROR && d.in_eof)
          throw Error(str(who_, ": ", p, ": truncated xz data (the file ends inside a stream)"));
        else if (rc != LZMA_OK && rc != LZMA_BUF_ERROR)
          throw Error(str(who_, ": ", p, ": corrupt xz data (liblzma error ", int(rc),
                          rc == LZMA_DATA_ERROR     ? ": data is corrupt"
                          : rc == LZMA_FORMAT_ERROR ? ": not an xz stream"
                          : rc == LZMA_MEM_ERROR    ? ": out of memory"
                                                    : "",
                          ")"));
        if (d.in_eof && avail == 0 && made == 0 && !d.done)
          throw Error(str(who_, ": ", p, ": truncated xz data (the file ends inside a stream)"));
      }
#endif
#if KS_WITH_ZSTD
      if (compression_ == Compression::Zstd) {
        ZSTD_inBuffer ib{src, avail, 0};
        ZSTD_outBuffer ob{dst + produced, max - produced, 0};
        const size_t rc = ZSTD_decompressStream(d.zs, &ob, &ib);
        KS_CHECK(!ZSTD_isError(rc), who_, ": ", p, ": corrupt zstd data (libzstd: ", ZSTD_getErrorName(rc), ")");
        used = ib.pos;
        made = ob.pos;
        // Nothing left to read or flush: done if the last call ended a frame (it returned 0), else cut
        // short. (This call's own return, with no input, is the next frame's header size.)
        if (avail == 0 && d.in_eof && made == 0) {
          KS_CHECK(d.zs_hint == 0, who_, ": ", p, ": truncated zstd data (the file ends inside a frame)");
          d.done = true;
        } else {
          d.zs_hint = rc;
        }
      }
#endif
      d.in_pos += used;
      produced += made;
    }
    out.resize(start + produced);
  }
  text_bytes_ += out.size() - start;
  return out.size() - start;
}

}  // namespace ks::tools
