// tests/fuzz/fuzz_token_shard.cpp — libFuzzer harness: any bytes as an llm.c
// .bin token shard, through the reader's in-memory entry
// (data::TokenShardView::from_bytes, the checks TokenShard::open runs on a
// mapped file). The first byte picks the vocabulary the ids are checked
// against (0 mod 4: none, then 260, 50257, 128256); the rest is the shard.
// A ks::Error is the reader refusing the input (fine); any other exception, a
// crash or a sanitizer report is a bug. What loads must be exactly its header
// plus its tokens, every token readable (and below the vocabulary when one is
// given), and written again by shard_bytes it must give the same bytes but
// for header[3..255], which llm.c writes as zeros and never reads.
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "core/error.h"
#include "datasets/token_shards.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const int64_t kVocabs[4] = {0, 260, 50257, 128256};
  const int64_t vocab = kVocabs[data[0] % 4];
  std::span<const uint8_t> bytes(data + 1, size - 1);
  try {
    const ks::data::TokenShardView v = ks::data::TokenShardView::from_bytes(bytes, "fuzz", vocab);
    const int64_t n = v.size();
    if (n <= 0 ||
        uint64_t(ks::data::kShardHeaderBytes) + uint64_t(n) * ks::data::shard_token_bytes(v.header().format) !=
            bytes.size())
      __builtin_trap();
    std::vector<int64_t> all(static_cast<size_t>(n));
    std::vector<int32_t> window(static_cast<size_t>(n));
    bool readable = true;
    try {
      v.read(0, window);  // refuses only a uint32 id past int32
    } catch (const ks::Error&) {
      readable = false;
    }
    for (int64_t i = 0; i < n; ++i) {
      all[size_t(i)] = v.at(i);
      if (vocab > 0 && all[size_t(i)] >= vocab) __builtin_trap();
      if (readable && window[size_t(i)] != all[size_t(i)]) __builtin_trap();
    }
    const std::vector<uint8_t> again = ks::data::shard_bytes(all, v.header().format);
    if (again.size() != bytes.size() || std::memcmp(again.data(), bytes.data(), 12) != 0 ||
        std::memcmp(again.data() + 1024, bytes.data() + 1024, bytes.size() - 1024) != 0)
      __builtin_trap();
  } catch (const ks::Error&) {
  }
  return 0;
}
