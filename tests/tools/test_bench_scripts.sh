#!/usr/bin/env bash
# tests/tools/test_bench_scripts.sh — the bench scripts of tools/bench/ (the
# *_vs_torch.sh comparisons, spread_study.sh): a bad count, precision or
# length pair stops each before any run, exit 2, naming the argument; a
# missing build/keystone (or, for first_step_vs_torch.sh, the PyTorch model
# in ../shared/bench) is named too; and the PyTorch BLAS environment
# (torch_blas.sh) says OPENBLAS_NUM_THREADS=N, or nothing under
# TORCH_BLAS_THREADS=default, and refuses any other value. Runs nothing that
# needs PyTorch or a build. Not here: the figures (docs/performance.md).
source "$(dirname "$0")/expect.sh"
bench="$root/tools/bench"

expect 2 "ROUNDS: expected whole numbers from 1 to 99999, got 'x'" -- bash "$bench/bench_vs_torch.sh" x
expect 2 "THREADS: expected whole numbers from 1 to 99999, got 'a'" -- env THREADS="1 a" bash "$bench/bench_vs_torch.sh" 2
expect 2 "STEPS: expected whole numbers from 1 to 99999, got '0'" -- env STEPS=0 bash "$bench/bench_vs_torch.sh"
expect 2 "PRECISIONS: expected float32 and/or bf16, got 'fp16'" -- env PRECISIONS="float32 fp16" bash "$bench/bench_vs_torch.sh"
expect 2 "ISA: expected avx2 or nothing, got 'sse'" -- env ISA=sse bash "$bench/bench_vs_torch.sh"
expect 2 "ISA=avx2 compares float32 only" -- env ISA=avx2 bash "$bench/bench_vs_torch.sh"
expect 2 "ROUNDS: expected whole numbers from 1 to 99999, got '-1'" -- bash "$bench/decode_vs_torch.sh" -1
expect 2 "BATCHES: expected whole numbers from 1 to 99999, got 'many'" -- bash "$bench/decode_vs_torch.sh" 1 "1 many"
expect 2 "LENGTHS: expected prompt:new-tokens pairs, got '128'" -- bash "$bench/decode_vs_torch.sh" 1 1 "128"
expect 2 "LENGTHS \(prompt:new-tokens\): expected whole numbers from 1 to 99999, got '0'" -- \
  bash "$bench/decode_vs_torch.sh" 1 1 "128:0"
expect 2 "SEQS: expected whole numbers from 1 to 99999, got '1k'" -- bash "$bench/attention_vs_torch.sh" 1 "1024 1k"
expect 2 "STEPS: expected whole numbers from 1 to 99999, got '2.5'" -- bash "$bench/blocks_vs_torch.sh" 1 2 2.5
expect 2 "RUNS: expected whole numbers from 1 to 99999, got '100000'" -- bash "$bench/spread_study.sh" 2 100000
expect 2 "ROUNDS: expected whole numbers from 1 to 99999, got '0'" -- bash "$bench/first_step_vs_torch.sh" 0
expect 2 "THREADS: expected whole numbers from 1 to 99999, got 'two'" -- env THREADS=two bash "$bench/first_step_vs_torch.sh"
expect 2 "PRECISION: expected float32 or bf16, got 'f16'" -- env PRECISION=f16 bash "$bench/first_step_vs_torch.sh"
expect 2 "TORCH_BLAS_THREADS: expected a thread count \(1-999\) or 'default', got 'all'" -- \
  env TORCH_BLAS_THREADS=all bash "$bench/attention_vs_torch.sh"

# Good arguments in a tree without build/keystone: stopped at once, naming it.
mkdir -p "$tmp/tree/tools"
cp -r "$bench" "$tmp/tree/tools/"
for script in bench_vs_torch.sh decode_vs_torch.sh attention_vs_torch.sh blocks_vs_torch.sh spread_study.sh \
  first_step_vs_torch.sh; do
  expect 2 "build/keystone not found: build it first" -- bash "$tmp/tree/tools/bench/$script"
done
# A build but no ../shared/bench beside the tree: the PyTorch model is named.
mkdir -p "$tmp/tree/build" && printf '#!/bin/sh\n' > "$tmp/tree/build/keystone" && chmod +x "$tmp/tree/build/keystone"
expect 2 "../shared/bench/torch_lm_bench.py not found" -- bash "$tmp/tree/tools/bench/first_step_vs_torch.sh"

# torch_blas_env, sourced as the scripts source it.
blas() { bash -c '. "$1" && torch_blas_env "$2"' _ "$bench/torch_blas.sh" "$1"; }
expect 0 "^OPENBLAS_NUM_THREADS=2$" -- blas 2
expect 0 "^OPENBLAS_NUM_THREADS=4$" -- env TORCH_BLAS_THREADS=4 bash -c '. "$1" && torch_blas_env 1' _ "$bench/torch_blas.sh"
expect 0 "^$" -- env TORCH_BLAS_THREADS=default bash -c '. "$1" && torch_blas_env 1' _ "$bench/torch_blas.sh"
finish "bench scripts: arguments checked, PyTorch's BLAS environment as asked"
