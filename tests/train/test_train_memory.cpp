// tests/train/test_train_memory.cpp — measure_train_memory
// (tools/train/train_memory.h), what `keystone info` reports as a config's
// training memory: its peak holds at least the weights, their gradients and
// AdamW's two moments (16 bytes a parameter) and the activations on top of
// the state, and not what was held or freed before it; two measurements give
// the same bytes; train.checkpoint_layers holds fewer activations; bf16 on a
// CPU with a bf16 kernel holds fewer activation bytes than float32, and on
// the float32 path (forced, as KS_CPU_GEMM=float32 does) exactly float32's;
// each bf16 kernel the CPU has is forced in turn, and the others are named as skipped;
// accumulate_steps 2 holds the gradients through a second forward, and 65536
// measures the same in about the time of 2 (it once ran past 300 s).
// Not here: the JSON `info` prints (tests/tools/test_cli.sh).
#include <doctest/doctest.h>

#include <chrono>

#include "core/factory.h"
#include "models/model.h"
#include "ops/gemm_paths.h"  // tests/ops/
#include "tools/tiny_run.h"  // tests/tools/
#include "tools/train/data_setup.h"
#include "tools/train/train_memory.h"

using namespace ks;
using namespace ks::tools;
using ks::testing::TempDir;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// The tiny LM's config (two layers, so checkpointing has layers to drop), its model section and first batch.
struct TinyRun {
  TrainConfig config;
  models::ModelConfig model;
  data::Batch batch;
  int64_t params = 0;
};

TinyRun tiny_run(const TempDir& tmp) {
  nlohmann::json j = testing::tiny_lm_config(testing::write_corpus(tmp.path() / "corpus.txt"), 4, "memory");
  j["model"]["layers"] = 2;
  TinyRun r;
  r.config = parse_train_config(j);
  data::Splits splits = build_data(r.config.data, r.config.seed).splits;
  r.model = models::parse_model_config(complete_model_section(r.config.model, splits));
  data::LoaderOptions lo{.batch_size = r.config.train.batch_size, .shuffle = true, .seed = r.config.seed};
  r.batch = *data::DataLoader(std::make_shared<const data::Dataset>(std::move(splits.train)), lo).next();
  r.params = models::build_model(r.model)->cost(1).params;
  return r;
}

}  // namespace

TEST_CASE("a training step's peak holds the state and the activations, and nothing from before") {
  TempDir tmp;
  const TinyRun r = tiny_run(tmp);
  { Tensor freed_before = empty({16 << 20}); }  // 64 MiB, freed: an unreset peak would report it
  Tensor held = empty({16 << 20});              // 64 MiB held throughout: not the run's
  const TrainMemory m = measure_train_memory(r.config, r.model, r.batch, MatmulPrecision::Float32, false);
  const double state_mib = 16.0 * double(r.params) / kMiB;  // weights, gradients, two AdamW moments
  CHECK(m.activation_mib > 0);
  CHECK(m.peak_mib >= state_mib);
  CHECK(m.peak_mib >= 12.0 * double(r.params) / kMiB + m.activation_mib);  // the forward's end: no gradients yet
  CHECK(m.peak_mib < state_mib + 4 * m.activation_mib);                    // far below the 64 MiB
  held = Tensor();
  const TrainMemory again = measure_train_memory(r.config, r.model, r.batch, MatmulPrecision::Float32, false);
  CHECK(again.activation_mib == m.activation_mib);
  CHECK(again.peak_mib == m.peak_mib);
}

TEST_CASE("accumulate_steps: the second micro-batch holds the gradients, and 65536 measures as 2, as fast") {
  TempDir tmp;
  TinyRun r = tiny_run(tmp);
  r.config.train.accumulate_steps = 1;
  const TrainMemory one = measure_train_memory(r.config, r.model, r.batch, MatmulPrecision::Float32, false);
  r.config.train.accumulate_steps = 2;
  const auto start = std::chrono::steady_clock::now();
  const TrainMemory two = measure_train_memory(r.config, r.model, r.batch, MatmulPrecision::Float32, false);
  const double two_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(two.activation_mib == one.activation_mib);
  CHECK(two.peak_mib > one.peak_mib);  // the second forward runs with the first's gradients held
  r.config.train.accumulate_steps = 65536;
  const auto start_many = std::chrono::steady_clock::now();
  const TrainMemory many = measure_train_memory(r.config, r.model, r.batch, MatmulPrecision::Float32, false);
  const double many_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_many).count();
  CHECK(many.activation_mib == two.activation_mib);
  CHECK(many.peak_mib == two.peak_mib);
  CHECK(many_s < 10 * two_s + 1.0);  // all 65536 micro-batches would take minutes
}

TEST_CASE("train.checkpoint_layers holds fewer activations and a lower peak") {
  TempDir tmp;
  const TinyRun r = tiny_run(tmp);
  const TrainMemory plain = measure_train_memory(r.config, r.model, r.batch, MatmulPrecision::Float32, false);
  const TrainMemory checkpointed = measure_train_memory(r.config, r.model, r.batch, MatmulPrecision::Float32, true);
  CHECK(checkpointed.activation_mib < plain.activation_mib);
  CHECK(checkpointed.peak_mib < plain.peak_mib);
}

TEST_CASE("bf16 holds fewer activation bytes on a bf16 kernel, and float32's on the float32 path") {
  TempDir tmp;
  const TinyRun r = tiny_run(tmp);
  const TrainMemory f32 = measure_train_memory(r.config, r.model, r.batch, MatmulPrecision::Float32, false);
  ks::testing::for_each_gemm_path({CpuGemmPath::Float32}, [&](CpuGemmPath) {
    const TrainMemory bf16 = measure_train_memory(r.config, r.model, r.batch, MatmulPrecision::BFloat16, false);
    CHECK(bf16.activation_mib == f32.activation_mib);
    CHECK(bf16.peak_mib == f32.peak_mib);
  });
  const int kernels = ks::testing::for_each_gemm_path(ks::testing::kPackedPaths, [&](CpuGemmPath) {
    const TrainMemory bf16 = measure_train_memory(r.config, r.model, r.batch, MatmulPrecision::BFloat16, false);
    CHECK(bf16.activation_mib < f32.activation_mib);
    CHECK(bf16.peak_mib < f32.peak_mib);
  });
  if (kernels == 0) MESSAGE("this CPU has no bf16 kernel: only the float32 path was measured");
}
