#!/usr/bin/env bash
# tools/experiments/run.sh — trains the runs of tools/experiments/claims.txt,
# seed by seed (every run of seed 0 first, so partial results stay balanced),
# skipping finished runs and resuming interrupted ones: it may be stopped at
# any moment (Ctrl-C or SIGTERM: the current step finishes and is saved) and
# started again in a later session.
#   bash tools/experiments/run.sh [CLAIM...]      (default: every claim)
# Environment: SEEDS (default "0 1 2"), KS_EXPERIMENTS (run folders, default
# runs/experiments), KEYSTONE (the binary, default build/keystone), CLAIMS
# (the list, default tools/experiments/claims.txt).
# A run is finished when its metrics.jsonl holds the final test record; one
# with a checkpoint is resumed; one without (stopped before its first
# checkpoint) is started again. Each run's output goes to RUN.log.
# Not here: the tables and figures (docs/RESULTS.md, made from the run
# folders' metrics alone).
set -euo pipefail
set -f  # no globbing: an override such as key=[1,2] is a value, not a pattern
cd "$(dirname "$0")/../.."
seeds="${SEEDS:-0 1 2}"
root="${KS_EXPERIMENTS:-runs/experiments}"
ks="${KEYSTONE:-build/keystone}"
[ -x "$ks" ] || { echo "run.sh: $ks is not an executable keystone binary (build first, or set KEYSTONE)" >&2; exit 2; }
claims=("$@")
claims_file="${CLAIMS:-tools/experiments/claims.txt}"
stop=0
trap 'stop=1' INT TERM

wanted() {  # wanted CLAIM: in the command line's list (or no list given)
  [ ${#claims[@]} -eq 0 ] && return 0
  local c; for c in "${claims[@]}"; do [ "$c" = "$1" ] && return 0; done; return 1
}

for seed in $seeds; do
  while read -r claim name config overrides; do
    [ -z "$claim" ] || [ "${claim:0:1}" = "#" ] && continue
    wanted "$claim" || continue
    [ "$stop" = 1 ] && exit 130
    dir="$root/claim$claim/$name-seed$seed"
    if [ -f "$dir/metrics.jsonl" ] && grep -q '"split": *"test"' "$dir/metrics.jsonl"; then
      continue  # finished
    fi
    mkdir -p "$root/claim$claim"
    sets=(--set "seed=$seed" --set train.precision=bf16 --set "name=$name-seed$seed")
    for kv in $overrides; do sets+=(--set "$kv"); done
    if [ -f "$dir/latest.safetensors" ]; then
      echo "$(date -u +%FT%TZ) resume $dir"
      cmd=("$ks" train --out "$dir" --resume --quiet)
    else
      rm -rf "$dir"
      echo "$(date -u +%FT%TZ) start  $dir"
      cmd=("$ks" train --config "$config" --out "$dir" --quiet "${sets[@]}")
    fi
    # In the background and waited for, so that a signal reaches this
    # script at once; it is passed on, and the trainer saves and exits.
    "${cmd[@]}" >> "$dir.log" 2>&1 &
    pid=$!
    trap 'stop=1; kill -TERM $pid 2>/dev/null' INT TERM
    rc=0; wait "$pid" || rc=$?
    while kill -0 "$pid" 2>/dev/null; do rc=0; wait "$pid" || rc=$?; done
    trap 'stop=1' INT TERM
    finished=0
    grep -q '"split": *"test"' "$dir/metrics.jsonl" 2>/dev/null && finished=1
    if [ "$stop" = 1 ]; then
      # A stop that came as the run ended leaves it finished, not resumable.
      if [ "$finished" = 1 ]; then echo "$(date -u +%FT%TZ) finished $dir"; else echo "$(date -u +%FT%TZ) stopped $dir (resumable)"; fi
      exit 130
    fi
    [ "$rc" = 0 ] || { echo "run.sh: $dir failed (exit $rc), see $dir.log" >&2; exit 1; }
    echo "$(date -u +%FT%TZ) finished $dir"
  done < "$claims_file"
done
echo "$(date -u +%FT%TZ) every run is finished"
