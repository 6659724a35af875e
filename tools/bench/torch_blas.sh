# tools/bench/torch_blas.sh — sourced by the *_vs_torch.sh scripts (most
# through vs_torch in tools/bench/args.sh): the environment that makes
# PyTorch's BLAS use the thread count a run asks for.
# Not a script to run on its own.
#
# Debian's PyTorch 1.13 does its float32 GEMMs in OpenBLAS (pthreads build),
# whose pool has one thread per core whatever torch.set_num_threads says, so
# a "one-thread" PyTorch run otherwise multiplies matrices on every idle core
# (1.8 cores of CPU time on a 2-vCPU machine: docs/performance.md, "One
# thread means one core"). Keystone runs OpenBLAS on one thread and does its
# own threading (ops/cpu/gemm/gemm.h).
#   env $(torch_blas_env THREADS) python3 ...
# prints OPENBLAS_NUM_THREADS=THREADS, or TORCH_BLAS_THREADS's value when set;
# nothing with TORCH_BLAS_THREADS=default (the pool as Debian's PyTorch sets it up).
case "${TORCH_BLAS_THREADS:-default}" in
  default | [1-9] | [1-9][0-9] | [1-9][0-9][0-9]) ;;
  *) echo "TORCH_BLAS_THREADS: expected a thread count (1-999) or 'default', got '$TORCH_BLAS_THREADS'" >&2; exit 2 ;;
esac
torch_blas_env() {
  [ "${TORCH_BLAS_THREADS:-}" = default ] || echo "OPENBLAS_NUM_THREADS=${TORCH_BLAS_THREADS:-$1}"
}
