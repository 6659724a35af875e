// tests/tools/tiny_run.h — the tiny run the trainer's tests train: a
// character-level LM (d 16, one layer, one thread) on 200 short lines of
// "abcde " plus a run of one letter, a second or less to train. Shared by the
// resume and run-folder safety tests, so both exercise the same run.
// Not here: the assertions, or a realistic model (tests/models/).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "datasets/data_testing.h"

namespace ks::testing {

// Writes the corpus to `path`, with `common` the most frequent character.
inline std::filesystem::path write_corpus(const std::filesystem::path& path, char common = 'a') {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "abcde " + std::string(size_t(1 + i % 5), common) + "\n";
  write_text(path, text);
  return path;
}

// The run's config on `train_file`, evaluated every 2 steps.
inline nlohmann::json tiny_lm_config(const std::filesystem::path& train_file, int64_t steps, const std::string& name) {
  return {
      {"name", name},
      {"seed", 5},
      {"data",
       {{"dataset", "text"}, {"train", train_file.string()}, {"seq_len", 16}, {"tokenizer", {{"type", "char"}}}}},
      {"model", {{"d_model", 16}, {"layers", 1}, {"dropout", 0.1}, {"attention", {{"type", "softmax"}, {"heads", 2}}}}},
      {"optimizer", {{"lr", 3e-3}}},
      {"schedule", {{"type", "cosine"}, {"warmup_steps", 1}}},
      {"train",
       {{"steps", steps},
        {"batch_size", 8},
        {"eval_every", 2},
        {"log_every", 1},
        {"eval_batches", 2},
        {"prefetch", 2},
        {"threads", 1}}}};
}

}  // namespace ks::testing
