# tools/bench/args.sh — sourced by the bench scripts (*_vs_torch.sh,
# spread_study.sh): the checks of their arguments and of what they need, so
# that a bad count or a missing program stops a script at once, naming it,
# instead of failing halfway through a run; and the two readings every
# script takes. Not a script to run on its own.
#   counts NAME VALUE...   each VALUE a whole number from 1 up, else exit 2
#   needs_keystone         build/keystone is built, else exit 2
#   needs_torch            Debian's python3 imports torch, else exit 2
#   field NAME             the number NAME of the JSON line on standard input
#   keystone_cpu           the CPU's brand string, as `keystone bench` reports it
#   vs_torch THREADS       a comparison's start: needs_keystone, needs_torch, both
#                          sides on the same float32 kernels, PyTorch's BLAS on
#                          THREADS threads (tools/bench/torch_blas.sh); sets
#                          $torch_blas (that environment) and $cpu (keystone_cpu)
counts() {
  local name=$1 value
  shift
  for value in "$@"; do
    case "$value" in
      [1-9] | [1-9][0-9] | [1-9][0-9][0-9] | [1-9][0-9][0-9][0-9] | [1-9][0-9][0-9][0-9][0-9]) ;;
      *) echo "$name: expected whole numbers from 1 to 99999, got '$value'" >&2; exit 2 ;;
    esac
  done
}
needs_keystone() {
  [ -x build/keystone ] || { echo "build/keystone not found: build it first (cmake --build build)" >&2; exit 2; }
}
needs_torch() {
  /usr/bin/python3 -c 'import torch' 2>/dev/null ||
    { echo "/usr/bin/python3 cannot import torch: install Debian's python3-torch" >&2; exit 2; }
}
field() { sed -n "s/.*\"$1\": *\\([0-9.]*\\).*/\\1/p" | head -1; }
keystone_cpu() {
  ./build/keystone bench --attention-only --seq 16 --batch 1 --steps 1 | sed -n 's/.*"cpu":"\([^"]*\)".*/\1/p'
}
vs_torch() {
  needs_keystone
  needs_torch
  export OPENBLAS_CORETYPE=SkylakeX  # the same float32 kernels for both (see bench_vs_torch.sh)
  . tools/bench/torch_blas.sh
  torch_blas=$(torch_blas_env "$1")
  cpu=$(keystone_cpu)
}
