// tests/datasets/test_token_shards.cpp — llm.c's .bin token shards
// (datasets/token_shards.h): round trips in both formats, the header fields
// byte by byte, every refusal of the reader and the writer, shard sets read
// across boundaries, and shards written by a Python reimplementation of
// llm.c's write_datafile (dev/data/data_common.py) read here and compared
// byte for byte with ours. Not here: `keystone tokenize` (tests/tools/test_cli_tokenize.sh).
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <tuple>
#include <vector>

#include "datasets/data_testing.h"
#include "datasets/token_shards.h"

namespace fs = std::filesystem;
using namespace ks::data;
using ks::testing::error_of;
using ks::testing::read_text;
using ks::testing::TempDir;
using ks::testing::write_text;

namespace {

std::vector<int64_t> some_tokens(int64_t n, int64_t vocab) {
  std::vector<int64_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[size_t(i)] = (i * 7919 + 13) % vocab;
  return t;
}

void write_bytes(const fs::path& p, const std::vector<uint8_t>& b) { write_text(p, std::string(b.begin(), b.end())); }

int32_t header_field(const std::string& bytes, int i) {
  int32_t v;
  std::memcpy(&v, bytes.data() + 4 * i, 4);
  return v;
}

void set_field(std::vector<uint8_t>& b, int i, int32_t v) { std::memcpy(b.data() + 4 * i, &v, 4); }

// Debian's python3 (python3-numpy), ahead of any other on PATH, as the other Python-backed tests do.
const char* kPython = "/usr/bin/python3";
bool has_python_numpy() { return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

}  // namespace

TEST_CASE("token shards: writer -> reader round trip, uint16 and uint32, header fields as llm.c writes them") {
  TempDir dir;
  for (ShardFormat f : {ShardFormat::U16, ShardFormat::U32}) {
    CAPTURE(shard_format_name(f));
    const int64_t vocab = f == ShardFormat::U16 ? 50257 : 128256;
    const std::vector<int64_t> toks = some_tokens(3000, vocab);
    const fs::path p = dir / (f == ShardFormat::U16 ? "a_train_000000.bin" : "b_train_000000.bin");
    {
      TokenShardWriter w(p, f);
      // In pieces, through both spans, as the tokenizer command streams them.
      w.write(std::span<const int64_t>(toks).first(1000));
      std::vector<int32_t> rest(toks.begin() + 1000, toks.end());
      w.write(std::span<const int32_t>(rest));
      CHECK(w.tokens() == 3000);
      CHECK_FALSE(fs::exists(p));  // nothing under the final name before finish
      w.finish();
    }
    const std::string bytes = read_text(p);
    const int w = shard_token_bytes(f);
    REQUIRE(bytes.size() == size_t(1024 + 3000 * w));
    CHECK(header_field(bytes, 0) == (f == ShardFormat::U16 ? 20240520 : 20240801));
    CHECK(header_field(bytes, 1) == (f == ShardFormat::U16 ? 1 : 7));
    CHECK(header_field(bytes, 2) == 3000);
    for (int i = 3; i < 256; ++i) CHECK(header_field(bytes, i) == 0);
    // Little-endian tokens right after the header.
    CHECK(uint8_t(bytes[1024]) == uint8_t(toks[0]));
    CHECK(uint8_t(bytes[1025]) == uint8_t(toks[0] >> 8));
    CHECK(std::vector<uint8_t>(bytes.begin(), bytes.end()) == shard_bytes(toks, f));

    TokenShard s = TokenShard::open(p, vocab, /*check_all_ids=*/true);
    CHECK(s.size() == 3000);
    CHECK(s.view().header().format == f);
    std::vector<int32_t> got(3000);
    s.read(0, got);
    CHECK(std::equal(got.begin(), got.end(), toks.begin()));
    std::vector<int32_t> window(17);
    s.read(1234, window);
    for (int i = 0; i < 17; ++i) CHECK(window[size_t(i)] == toks[size_t(1234 + i)]);
    CHECK(error_of([&] { s.read(2990, window); }).find("tokens [2990, 3007) are outside its 3000 tokens") !=
          std::string::npos);
    // Movable: the mapping follows.
    TokenShard moved = std::move(s);
    moved.read(0, window);
    CHECK(window[0] == toks[0]);
  }
  CHECK(shard_format_for_vocab(65536) == ShardFormat::U16);
  CHECK(shard_format_for_vocab(65537) == ShardFormat::U32);
}

TEST_CASE("token shards: a corrupt, truncated, foreign or out-of-vocabulary shard is refused naming file and field") {
  TempDir dir;
  const std::vector<uint8_t> good = shard_bytes(some_tokens(10, 260), ShardFormat::U16);
  auto refusal = [&](const std::vector<uint8_t>& bytes, int64_t vocab = 0) {
    const fs::path p = dir / "bad.bin";
    write_bytes(p, bytes);
    const std::string mapped = error_of([&] { TokenShard::open(p, vocab, true); });
    // The from-bytes entry (the fuzz harness's) says the same but for the name.
    const std::string inmem = error_of([&] { TokenShardView::from_bytes(bytes, p.string(), vocab); });
    CHECK(mapped == inmem);
    return mapped;
  };
  const std::string name = (dir / "bad.bin").string();
  auto expect = [&](const std::string& msg, const std::string& want) {
    CAPTURE(msg);
    CHECK(msg.find("token shard " + name) == 0);
    CHECK(msg.find(want) != std::string::npos);
  };

  expect(refusal({}), "truncated header: the file is 0 bytes, a shard's header alone is 1024");
  expect(refusal(std::vector<uint8_t>(good.begin(), good.begin() + 1000)), "truncated header: the file is 1000 bytes");
  std::vector<uint8_t> b = good;
  set_field(b, 0, 12345);
  expect(refusal(b), "bad magic 12345 (header[0]); a token shard has 20240520 (uint16 tokens) or 20240801");
  set_field(b, 0, 20240326);
  expect(refusal(b), "bad magic 20240326 (header[0]: an llm.c model checkpoint");
  set_field(b, 0, 20240522);
  expect(refusal(b), "an llm.c eval file");
  b = good;
  set_field(b, 1, 2);  // the uint32 "version 2" llm.c never wrote
  expect(refusal(b), "unsupported version 2 (header[1]) for magic 20240520: llm.c's uint16 shards are version 1");
  b = shard_bytes(some_tokens(10, 260), ShardFormat::U32);
  set_field(b, 1, 1);
  expect(refusal(b), "unsupported version 1 (header[1]) for magic 20240801: llm.c's uint32 shards are version 7");
  b = good;
  set_field(b, 2, -5);
  expect(refusal(b), "negative token count -5 (header[2])");
  b = shard_bytes({}, ShardFormat::U16);
  expect(refusal(b), "empty: the token count (header[2]) is 0");
  b = good;
  b.pop_back();
  expect(refusal(b),
         "truncated: header[2] says 10 tokens of 2 bytes, so 1044 bytes, but the file is 1043 (1 bytes short)");
  b = good;
  set_field(b, 2, 2000000000);
  expect(refusal(b), "truncated: header[2] says 2000000000 tokens");
  b = good;
  b.push_back(0);
  b.push_back(0);
  expect(refusal(b),
         "token count does not match the file size: header[2] says 10 tokens of 2 bytes, so 1044 bytes, "
         "but the file is 1046 (2 bytes after the last token)");
  // A uint32 shard read as... the other width: its size does not match its count.
  b = shard_bytes(some_tokens(10, 260), ShardFormat::U32);
  set_field(b, 0, 20240520);
  set_field(b, 1, 1);
  expect(refusal(b), "2 bytes, so 1044 bytes, but the file is 1064");
  // Ids at or above the tokenizer's vocabulary.
  std::vector<int64_t> toks = some_tokens(10, 260);
  toks[7] = 300;
  expect(refusal(shard_bytes(toks, ShardFormat::U16), 260),
         "token 7 is id 300, outside the tokenizer's vocabulary of 260 ids");
  CHECK(refusal(shard_bytes(toks, ShardFormat::U16), 301) == "no error");
  // Checked lazily too: opened without the scan, a read of the bad id refuses it.
  write_bytes(dir / "lazy.bin", shard_bytes(toks, ShardFormat::U16));
  TokenShard lazy = TokenShard::open(dir / "lazy.bin", 260);
  std::vector<int32_t> w(3);
  lazy.read(0, w);
  CHECK(error_of([&] { lazy.read(6, w); }).find("token 7 is id 300, outside the tokenizer's vocabulary of 260") !=
        std::string::npos);
  // A uint32 id past int32 is refused even with no vocabulary.
  toks[7] = int64_t(3000000000);
  write_bytes(dir / "huge.bin", shard_bytes(toks, ShardFormat::U32));
  TokenShard huge = TokenShard::open(dir / "huge.bin");
  CHECK(error_of([&] { huge.read(6, w); }).find("token 7 is id 3000000000, past the largest id") != std::string::npos);

  // Not a file at all.
  CHECK(error_of([&] { TokenShard::open(dir / "missing.bin"); }).find("file not found") != std::string::npos);
  CHECK(error_of([&] { TokenShard::open(dir.path()); }).find("is a directory") != std::string::npos);
  ::mkfifo((dir / "fifo.bin").c_str(), 0600);
  CHECK(error_of([&] { TokenShard::open(dir / "fifo.bin"); }).find("FIFO") != std::string::npos);
}

TEST_CASE("token shards: a shard set reads any window by global position, across shard boundaries") {
  TempDir dir;
  const std::vector<int64_t> all = some_tokens(1000, 50000);
  std::vector<fs::path> paths;
  const int64_t cuts[] = {0, 300, 301, 700, 1000};  // one shard of a single token
  for (int i = 0; i < 4; ++i) {
    paths.push_back(dir / ("x_train_00000" + std::to_string(i) + ".bin"));
    TokenShardWriter w(paths.back(), ShardFormat::U16);
    w.write(std::span<const int64_t>(all).subspan(size_t(cuts[i]), size_t(cuts[i + 1] - cuts[i])));
    w.finish();
  }
  TokenShardSet set = TokenShardSet::open(paths, 50000);
  CHECK(set.size() == 1000);
  CHECK(set.shards() == 4);
  CHECK(set.offset(2) == 301);
  for (int64_t start : {0, 250, 299, 300, 301, 650, 990}) {
    std::vector<int32_t> w(size_t(std::min<int64_t>(65, 1000 - start)));
    set.read(start, w);
    for (size_t i = 0; i < w.size(); ++i) CHECK(w[i] == all[size_t(start) + i]);
  }
  std::vector<int32_t> w(10);
  CHECK(error_of([&] { set.read(995, w); }).find("tokens [995, 1005) are outside the 1000 tokens of 4 shards") !=
        std::string::npos);
  CHECK(error_of([&] { TokenShardSet::open({}); }).find("no shard files") != std::string::npos);
}

TEST_CASE("token shards: a shard truncated or rewritten after open is an error naming the file, never a SIGBUS") {
  TempDir dir;
  const std::vector<int64_t> all = some_tokens(100000, 50000);
  const fs::path path = dir / "x_train_000000.bin";
  const std::vector<uint8_t> bytes = shard_bytes(all, ShardFormat::U16);
  write_text(path, std::string(bytes.begin(), bytes.end()));
  TokenShard s = TokenShard::open(path, 50000);
  std::vector<int32_t> w(1025);
  s.read(90000, w);
  CHECK(w[0] == all[90000]);
  // What a job sees when another process cuts the file under it: reads below
  // the new end still work, reads past it fail naming the file.
  REQUIRE(::truncate(path.c_str(), kShardHeaderBytes + 2 * 50000) == 0);
  s.read(1000, w);
  CHECK(w[5] == all[1005]);
  const std::string err = error_of([&] { s.read(90000, w); });
  CHECK(err.find(path.string()) != std::string::npos);
  CHECK(err.find("shorter than the ") != std::string::npos);
  CHECK(err.find("truncated or rewritten while the job ran") != std::string::npos);
  // Through a set, too: the window crossing the new end names the file.
  write_text(path, std::string(bytes.begin(), bytes.end()));
  TokenShardSet set = TokenShardSet::open({path}, 50000);
  REQUIRE(::truncate(path.c_str(), kShardHeaderBytes + 2 * 1000) == 0);
  CHECK(error_of([&] { set.read(990, w); }).find(path.string()) != std::string::npos);
}

TEST_CASE("token shards: the writer refuses ids outside its format and leaves no half shard behind") {
  TempDir dir;
  const fs::path p = dir / "w.bin";
  auto leftovers = [&] {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir.path())) n += e.path().filename().string().find(".w.bin.tmp-") == 0;
    return n;
  };
  {
    TokenShardWriter w(p, ShardFormat::U16);
    const std::vector<int64_t> big = {1, 2, 65536};
    CHECK(error_of([&] {
            w.write(std::span<const int64_t>(big));
          }).find("token 2 is id 65536, outside the uint16 (llm.c gpt-2) format (0..65535)") != std::string::npos);
    CHECK(leftovers() == 1);
  }  // destroyed unfinished: its temporary file goes
  CHECK(leftovers() == 0);
  CHECK_FALSE(fs::exists(p));
  {
    TokenShardWriter w(p, ShardFormat::U32);
    const std::vector<int64_t> neg = {-1};
    CHECK(error_of([&] { w.write(std::span<const int64_t>(neg)); }).find("is id -1") != std::string::npos);
    CHECK(error_of([&] { w.close(); }).find("no tokens written") != std::string::npos);
  }
  CHECK(leftovers() == 0);
  // Closed but not published: still nothing under the final name.
  {
    TokenShardWriter w(p, ShardFormat::U16);
    const std::vector<int64_t> t = {5, 6};
    w.write(std::span<const int64_t>(t));
    w.close();
    CHECK_FALSE(fs::exists(p));
  }
  CHECK_FALSE(fs::exists(p));
  CHECK(leftovers() == 0);
  // A folder that does not exist: the error carries errno's text.
  CHECK(error_of([&] {
          TokenShardWriter w(dir / "no" / "such.bin", ShardFormat::U16);
        }).find("No such file or directory") != std::string::npos);
  // A full disk: /dev/full fails every write with ENOSPC (where the machine has it).
  if (fs::exists("/dev/full") && ::access(dir.path().c_str(), W_OK) == 0) {
    const fs::path full = dir / "full.bin";
    const fs::path tmp = dir / ".full.bin.tmp-" += std::to_string(::getpid());
    std::error_code ec;
    fs::create_symlink("/dev/full", tmp, ec);  // the writer opens its temp name with O_TRUNC: through the link
    if (!ec) {
      std::string msg = error_of([&] {
        TokenShardWriter w(full, ShardFormat::U16);
        std::vector<int64_t> t(1 << 20, 1);
        w.write(std::span<const int64_t>(t));
        w.finish();
      });
      CHECK(msg.find("No space left on device") != std::string::npos);
      CHECK_FALSE(fs::exists(full));
    }
  }
}

TEST_CASE("token shards: llm.c's write_datafile (reimplemented in Python) and ours write the same bytes") {
  if (!has_python_numpy()) {
    MESSAGE("skipped: python3 with numpy is not installed");
    return;
  }
  TempDir dir;
  // dev/data/data_common.py's write_datafile, as llm.c has it (HEADERS_INFO and
  // the header/token layout), minus the print; run on the ids of a fixed rule.
  const std::string py = R"(
import sys, numpy as np
HEADERS_INFO = {"gpt-2": {"magic": 20240520, "version": 1, "token_dtype": np.uint16},
                "llama-3": {"magic": 20240801, "version": 7, "token_dtype": np.uint32}}
def write_datafile(filename, toks, model_desc="gpt-2"):
    assert len(toks) < 2**31, "token count too large"
    info = HEADERS_INFO[model_desc]
    header = np.zeros(256, dtype=np.int32)
    header[0] = info["magic"]; header[1] = info["version"]; header[2] = len(toks)
    toks_np = np.array(toks, dtype=info["token_dtype"])
    with open(filename, "wb") as f:
        f.write(header.tobytes()); f.write(toks_np.tobytes())
out, n, vocab, desc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
write_datafile(out, [(i * 7919 + 13) % vocab for i in range(n)], desc)
)";
  write_text(dir / "write_datafile.py", py);
  // Not a structured binding: doctest's CAPTURE is a lambda, and clang 14
  // (the sanitizer pass's compiler) refuses to capture a binding.
  for (const auto& c :
       {std::tuple{"gpt-2", 50257, ShardFormat::U16}, std::tuple{"llama-3", 128256, ShardFormat::U32}}) {
    const char* desc = std::get<0>(c);
    const int vocab = std::get<1>(c);
    const ShardFormat f = std::get<2>(c);
    CAPTURE(desc);
    const fs::path theirs = dir / (std::string(desc) + "_py.bin"), ours = dir / (std::string(desc) + "_ks.bin");
    ks::testing::shell(std::string(kPython) + " " + (dir / "write_datafile.py").string() + " " + theirs.string() +
                       " 4097 " + std::to_string(vocab) + " " + desc);
    const std::vector<int64_t> toks = some_tokens(4097, vocab);
    // Theirs reads here, every token.
    TokenShard s = TokenShard::open(theirs, vocab, true);
    REQUIRE(s.size() == 4097);
    std::vector<int32_t> got(4097);
    s.read(0, got);
    CHECK(std::equal(got.begin(), got.end(), toks.begin()));
    // Ours is byte-identical to theirs.
    TokenShardWriter w(ours, f);
    w.write(std::span<const int64_t>(toks));
    w.finish();
    CHECK(read_text(ours) == read_text(theirs));
  }
}
