// core/denormals.h — flush-to-zero for float math on the CPU threads
// Keystone computes on.
//
// A float below 2^-126 (a float64 below 2^-1022) is "denormal", and x86
// cores take a microcode assist of about a hundred cycles for arithmetic
// that reads or makes one. Training makes them on its own: elu feature maps
// (exp of strongly negative inputs), squares of tiny gradients. Measured here:
// a sequential Fashion-MNIST encoder with linear attention slowed from 106k
// to 54k tokens/s over its first 5000 steps, the extra time inside sgemm; with
// denormals flushed it ran at 106k again.
//
// So by default Keystone sets FTZ (denormal results become 0) and DAZ
// (denormal inputs read as 0), as TensorFlow does on its CPU threads
// (PyTorch offers it as torch.set_flush_denormal(True)). The price: values
// below about 1.2e-38 (float32) or 2.2e-308 (float64) count as 0, which
// deep-learning math does not notice. KS_FLUSH_DENORMALS=0 in the
// environment, or set_flush_denormals(false), turns it off.
//
// Where the setting reaches: the thread that loads Keystone (at start-up),
// the thread that calls set_flush_denormals, and every parallel_for task (each
// applies it on entry; OpenBLAS runs single-threaded inside them, so it has
// no threads of its own to reach, ops/cpu/gemm/gemm.h). Threads you create
// inherit their creator's mode. Only
// x86 has the switch; elsewhere these functions do nothing. Not here: the GPU
// (CUDA kernels follow their compile flags).
#pragma once

#include "core/scoped_setting.h"

namespace ks {

bool flush_denormals();
void set_flush_denormals(bool on);

// Makes the calling thread follow the setting (cheap when it already does).
void apply_denormal_mode();

// Sets the mode for a scope and restores the previous one after.
using DenormalModeGuard = ScopedSetting<bool, flush_denormals, set_flush_denormals>;

}  // namespace ks
