#!/usr/bin/env bash
# tools/bench/bench_vs_torch.sh — Keystone's training step against PyTorch's on this
# CPU, side by side in one run: for each attention shape of issue 12's table
# (softmax 8×32, fixed 8×64, mgk 4×32, mgk 8×32), each thread count and each
# precision (float32; bf16 = our AMX/AVX512-BF16 GEMMs vs torch.autocast's
# oneDNN), the two benches run in turn ROUNDS times and each line is one
# run's tokens/s.
#   bash tools/bench/bench_vs_torch.sh [ROUNDS (default 3)]
# Environment: THREADS (default "2"), PRECISIONS (default "float32 bf16"),
# STEPS (timed steps per run, default the benches' own), PRESET (gpt2-small:
# GPT-2 small's shape alone, `keystone bench --preset gpt2-small` against the
# torch script with the same flags; the GFLOP/s column is Keystone's, from the
# model's own FLOP count, the same work for both), ISA:
#   unset   both run with OPENBLAS_CORETYPE=SkylakeX, the same float32 kernels
#           for both (the AVX-512 ones Keystone selects itself where OpenBLAS
#           falls back to SSE3 kernels, and not what an environment's own
#           OPENBLAS_CORETYPE may say);
#   avx2    what an AVX2-only machine runs, on this one: Keystone under
#           KS_CPU_ISA=avx2 (core/cpu_features.h), PyTorch's oneDNN under
#           ONEDNN_MAX_CPU_ISA=AVX2, both with OpenBLAS's Haswell kernels
#           (Debian's PyTorch 1.13 dispatches its own kernels at AVX2 already:
#           torch.__config__.show(), "CPU capability usage"). float32 only:
#           PyTorch's bf16 autocast takes oneDNN's AVX-512 kernels on this CPU
#           and stops under the cap ("could not create a primitive descriptor
#           iterator"), so there Keystone's bf16 is compared with its own
#           float32 (keystone bench --precision bf16 under KS_CPU_ISA=avx2).
#           The instruction mix is an AVX2 machine's; the cores, caches and
#           memory are still this machine's.
# PyTorch's BLAS runs on the thread count asked for (tools/bench/torch_blas.sh;
# TORCH_BLAS_THREADS overrides it, "default" leaves Debian's pool).
# Needs build/keystone and Debian's python3-torch.
# Not a test: it prints figures; docs/performance.md has runs and their reading.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${1:-3}"
torch_bench=../shared/bench/torch_lm_bench.py
shapes=("softmax --heads 8" "fixed --heads 8 --head-dim 64" "mgk --heads 4 --head-dim 32" "mgk --heads 8")
steps=()
[ -n "${STEPS:-}" ] && steps=(--steps "$STEPS")
case "${PRESET:-}" in
  "") ks_shape=(); pt_shape=() ;;
  gpt2-small)
    shapes=("softmax --heads 12")
    ks_shape=(--preset gpt2-small)
    pt_shape=(--d-model 768 --layers 12 --d-ff 3072 --seq 1024 --batch 4 --vocab 50257) ;;
  *) echo "PRESET: expected gpt2-small or nothing, got '$PRESET'" >&2; exit 2 ;;
esac
. tools/bench/args.sh
counts ROUNDS "$rounds"
# shellcheck disable=SC2086
counts THREADS ${THREADS:-2}
[ -n "${STEPS:-}" ] && counts STEPS "$STEPS"
for precision in ${PRECISIONS:-float32 bf16}; do
  case "$precision" in
    float32 | bf16) ;;
    *) echo "PRECISIONS: expected float32 and/or bf16, got '$precision'" >&2; exit 2 ;;
  esac
done
case "${ISA:-}" in
  "") coretype=SkylakeX; ks_env=(); pt_env=() ;;
  avx2) coretype=Haswell; ks_env=(KS_CPU_ISA=avx2); pt_env=(ONEDNN_MAX_CPU_ISA=AVX2)
    if [ "${PRECISIONS:-float32 bf16}" != float32 ]; then
      echo "ISA=avx2 compares float32 only (PRECISIONS=float32): PyTorch's bf16 autocast needs oneDNN's AVX-512" >&2
      exit 2
    fi ;;
  *) echo "ISA: expected avx2 or nothing, got '$ISA'" >&2; exit 2 ;;
esac
. tools/bench/torch_blas.sh
needs_keystone
needs_torch
printf "%-36s %7s %-8s %5s %12s %12s %7s %10s\n" shape threads precision round keystone torch ratio ks_GFLOP/s
for shape in "${shapes[@]}"; do
  for threads in ${THREADS:-2}; do
    for precision in ${PRECISIONS:-float32 bf16}; do
      for r in $(seq 1 "$rounds"); do
        # shellcheck disable=SC2086
        line=$(env OPENBLAS_CORETYPE=$coretype "${ks_env[@]}" ./build/keystone bench "${ks_shape[@]}" --attention $shape \
               --threads "$threads" --precision "$precision" "${steps[@]}")
        ks=$(field tokens_per_s <<<"$line")
        gflops=$(field gflop_per_s <<<"$line")
        # shellcheck disable=SC2086
        pt=$(env OPENBLAS_CORETYPE=$coretype "${pt_env[@]}" $(torch_blas_env "$threads") /usr/bin/python3 "$torch_bench" "${pt_shape[@]}" --attention $shape --threads "$threads" \
               --precision "$precision" "${steps[@]}" | field tokens_per_s)
        printf "%-36s %7s %-8s %5s %12.0f %12.0f %6.2fx %10.1f\n" "$shape" "$threads" "$precision" "$r" "$ks" "$pt" \
          "$(python3 -c "print($ks / $pt)")" "$gflops"
      done
    done
  done
done
