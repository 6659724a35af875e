// tools/train/train_memory.h — what training a config holds at its peak,
// measured by running it: the model's weights, their gradients, the
// optimizer's state, the weight average where the config keeps one, and the
// activations of a micro-batch, over two optimizer steps of the trainer's
// kind (Trainer::train_step: forwards and backwards, gradient clipping, the
// optimizer's step, zero_grad). The optimizer makes its state at the first
// step, so the second shows the peak every later step repeats. Of a step's
// train.accumulate_steps micro-batches at most two run: the first starts
// without gradients, the second with them held, and every later one holds and
// frees exactly what the second does; so any accumulate_steps is measured in
// the time of two (65536 once took over 300 s). `keystone info` reports it
// for the config's train.precision and, beside it, for float32.
//
// It is not a model of memory, and not of the GPU's: it runs on the CPU
// (whatever train.device says) and reads the CPU allocator's tensor counters
// (core/allocator.h). Kernel scratch, the allocator's cached blocks and the
// libraries are not tensors; the process's RSS adds them. Under bf16 the
// bytes are those of the bf16 GEMM path this CPU takes (core/cpu_features.h):
// on the float32 path, activations stay float32. It is one process's: under
// mpirun with train.zero each rank holds 1/N of the optimizer's state, less
// than this reports.
#pragma once

#include "core/matmul_precision.h"
#include "datasets/loader.h"
#include "models/config.h"
#include "tools/train/run_config.h"

namespace ks::tools {

struct TrainMemory {
  double activation_mib = 0;  // held from the first forward's start to its end (one micro-batch)
  double peak_mib = 0;        // the most held at once over both steps, the weights included
};

// Builds config.model fresh from config.seed (the trainer's start) and trains
// it for two steps on `batch` at `precision`, with or without
// train.checkpoint_layers. Tensors the caller holds are not counted.
TrainMemory measure_train_memory(const TrainConfig& config, const models::ModelConfig& model, const data::Batch& batch,
                                 MatmulPrecision precision, bool checkpoint_layers);

// The most tensor memory held at once on `device` since the process started
// (the allocator's counter: data, weights, gradients, optimizer state and
// activations; not kernel scratch or cached blocks), in MiB: what a run's
// train records and its summary report.
double peak_tensor_mib(Device device);

}  // namespace ks::tools
