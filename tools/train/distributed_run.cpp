// tools/train/distributed_run.cpp — cross-rank checks and rank-0 files.
#include "tools/train/distributed_run.h"

#include <algorithm>
#include <thread>

#include "nn/user_input.h"
#include "tools/train/run_dir.h"

namespace ks::tools {

using json = nlohmann::json;

void check_same_config_on_every_rank(dist::ProcessGroup& group, const json& config) {
  if (group.size() == 1) return;
  const std::vector<std::string> all = group.all_gather_bytes(config.dump());
  const json lead = json::parse(all[0]);
  std::string ranks, keys;
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    ranks += str(ranks.empty() ? "" : ", ", r);
    if (keys.empty())
      for (const std::string& k : differing_keys(lead, json::parse(all[r]))) {
        if (!keys.empty()) keys += ", ";
        keys += k;
      }
  }
  KS_CHECK(ranks.empty(), "distributed: the config of rank(s) ", ranks, " differs from rank 0's (", keys,
           "); every rank must train the same config on the same data files (the fingerprints in data.* "
           "compare their contents)");
}

std::optional<std::string> file_from_rank0(dist::ProcessGroup& group, const std::filesystem::path& path,
                                           uint64_t max_bytes) {
  bool have = group.rank() == 0 && std::filesystem::exists(path);
  std::string bytes = have ? nn::read_regular_file(path.string(), max_bytes, "rank 0") : "";
  if (group.size() > 1) {
    have = group.broadcast_value(have, 0);
    group.broadcast_bytes(bytes, 0);
  }
  if (!have) return std::nullopt;
  return bytes;
}

uint64_t rank_seed(uint64_t seed, int rank) {
  // splitmix64 of (seed, rank): distinct, well-mixed seeds for every rank.
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * uint64_t(rank + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::pair<uint64_t, uint64_t> rank_stream(const std::string& text, int rank, int ranks, const std::string& file) {
  const std::string what = str("checkpoint ", file, ": 'keystone.rank_rng'");
  const json all = nn::parse_json(text, what);
  KS_CHECK(all.is_array(), what, " is not a JSON array of [seed, offset] pairs, one per rank");
  KS_CHECK(all.size() == size_t(ranks), what, " holds ", all.size(), " stream(s), expected one per rank (", ranks,
           "): was the run trained on ", ranks, " ranks?");
  // Non-negative JSON integers parse as unsigned; -1 or 1.5 must not become a state.
  for (size_t r = 0; r < all.size(); ++r) {
    const json& e = all[r];
    KS_CHECK(e.is_array() && e.size() == 2 && e[0].is_number_unsigned() && e[1].is_number_unsigned(), what, " entry ",
             r, " is not a pair [seed, offset] of integers in [0, 2^64 - 1]");
  }
  const json& mine = all[size_t(rank)];
  return {mine[0].get<uint64_t>(), mine[1].get<uint64_t>()};
}

int threads_per_rank() {
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  const int local = std::max(1, dist::launch_info().local_size);
  return std::max(1, cores / local);
}

}  // namespace ks::tools
