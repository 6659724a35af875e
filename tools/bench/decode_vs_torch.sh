#!/usr/bin/env bash
# tools/bench/decode_vs_torch.sh — cached generation (`keystone bench --decode`)
# against Debian's PyTorch (tools/bench/torch_decode_bench.py: the same model
# with the hand-written concatenating cache), side by side, each run in turn;
# with OLD=path/to/keystone, an older binary's run is added to each line.
#   bash tools/bench/decode_vs_torch.sh [ROUNDS (default 2)] [BATCHES (default "1 16")] [LENGTHS (default "128:128 1024:256")]
# LENGTHS are prompt:new-tokens pairs. Float32, one thread, one step a run.
# Needs build/keystone and Debian's python3-torch. Not a test: it prints
# figures; docs/performance.md has a run and its reading.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${1:-2}"
batches="${2:-1 16}"
lengths="${3:-128:128 1024:256}"
. tools/bench/args.sh
counts ROUNDS "$rounds"
# shellcheck disable=SC2086
counts BATCHES $batches
for pair in $lengths; do
  case "$pair" in
    *:*) counts "LENGTHS (prompt:new-tokens)" "${pair%%:*}" "${pair##*:}" ;;
    *) echo "LENGTHS: expected prompt:new-tokens pairs, got '$pair'" >&2; exit 2 ;;
  esac
done
vs_torch 1  # PyTorch's BLAS on the run's thread count
echo "# $cpu, $(date -u +%F), $(git rev-parse --short HEAD)${OLD:+, old: $OLD}, PyTorch: ${torch_blas:-its default OpenBLAS pool}"
printf "%5s %5s %6s %6s %10s %10s %10s %7s\n" round batch prompt new old keystone torch ratio
for r in $(seq 1 "$rounds"); do
  for b in $batches; do
    for pair in $lengths; do
      prompt=${pair%%:*} new=${pair##*:}
      args="--batch $b --threads 1 --steps 1 --prompt $prompt --new-tokens $new"
      old="-"
      # shellcheck disable=SC2086
      [ -n "${OLD:-}" ] && old=$("$OLD" bench --decode $args | field tokens_per_s)
      # shellcheck disable=SC2086
      ks=$(./build/keystone bench --decode $args | field tokens_per_s)
      # shellcheck disable=SC2086
      pt=$(env $torch_blas /usr/bin/python3 tools/bench/torch_decode_bench.py $args | field tokens_per_s)
      printf "%5s %5s %6s %6s %10s %10.0f %10.0f %6.2fx\n" "$r" "$b" "$prompt" "$new" "$old" "$ks" "$pt" \
        "$(python3 -c "print($ks / $pt)")"
    done
  done
done
