// tools/train/distributed_run.h — what `keystone train` does differently when
// mpirun starts it N times: the checks that every rank agrees, files that
// only rank 0 reads handed to the others, per-rank dropout streams, and the
// threads each rank takes.
//
// The rules (the trainer's, tools/train/trainer.h): rank 0 alone touches the run
// folder (lock, config.json, metrics, checkpoints, plot) and prints; every
// rank reads the data files itself, so they must exist at the same paths on
// every machine (their content fingerprints are part of the config compared
// across ranks, so a differing copy is an error, not a silent mix).
// Not here: the process group (core/distributed.h), gradient reduction
// (nn/data_parallel.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "core/distributed.h"

namespace ks::tools {

// Throws (on every rank alike) when any rank's `config` differs from rank
// 0's, naming the ranks and the keys: ranks with other models, data or
// settings would all-reduce gradients that do not belong together.
void check_same_config_on_every_rank(dist::ProcessGroup& group, const nlohmann::json& config);

// Rank 0's copy of a file (nullopt where it does not exist) on every rank,
// read with the same checks and byte bound as the file's own reader applies
// (max_bytes: kMaxConfigBytes, data::kMaxTokenizerFileBytes, ...).
std::optional<std::string> file_from_rank0(dist::ProcessGroup& group, const std::filesystem::path& path,
                                           uint64_t max_bytes);

// The dropout stream of rank r > 0: another Philox seed derived from the
// run's (rank 0 keeps the run's own stream, so one rank trains as before).
uint64_t rank_seed(uint64_t seed, int rank);

// Rank `rank`'s dropout stream (seed, offset) from a checkpoint's
// "keystone.rank_rng" text: a JSON array of one [seed, offset] pair of
// unsigned 64-bit integers per rank, `ranks` of them. A damaged one throws,
// naming `file`, the key and what is wrong.
std::pair<uint64_t, uint64_t> rank_stream(const std::string& text, int rank, int ranks, const std::string& file);

// Threads per rank when train.threads is 0: the machine's cores shared by
// the ranks launched on it (LaunchInfo::local_size), at least 1.
int threads_per_rank();

}  // namespace ks::tools
