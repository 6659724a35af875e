#!/usr/bin/env bash
# tools/experiments/run.sh — trains the runs of tools/experiments/claims.txt,
# seed by seed (every run of seed 0 first, so partial results stay balanced),
# skipping finished runs and resuming interrupted ones: it may be stopped at
# any moment (Ctrl-C or SIGTERM: the current step finishes and is saved) and
# started again later.
#   bash tools/experiments/run.sh [CLAIM...]      (default: every claim)
# Environment: SEEDS (default "0 1 2"), KS_EXPERIMENTS (run folders, default
# runs/experiments), KS_RESULTS (the committed results, default
# docs/results/runs), KEYSTONE (the binary, default build/keystone), CLAIMS
# (the list, default tools/experiments/claims.txt), ANALYZE_CLAIMS (claims
# whose trained models `keystone analyze` reads for claim 6, default "1 3 5"),
# ANALYZE_FLAGS (default: the analysis defaults, 8 validation batches).
#
# Two places: a run folder (checkpoints, megabytes, lost with the machine)
# and its results (config.json, metrics.jsonl, provenance.jsonl (the commit
# and machine of each training session), machine.json from `keystone
# info --machine` and, for ANALYZE_CLAIMS, analysis/analysis.json without its
# singular values: kilobytes, copied into KS_RESULTS as each run
# finishes, to be committed). A run is finished when its results hold the
# final test record; sessions on fresh machines therefore skip it. An
# unfinished run with a checkpoint is resumed; one without (stopped before its
# first checkpoint) is started again by the trainer itself, in the same folder:
# nothing here deletes a run folder, so a second runner started by mistake
# cannot take a folder from under a trainer (its own trainer finds the folder
# locked and fails, naming the lock). Each run's output goes to RUN.log; a
# failure's last lines are also printed.
# Not here: the tables and figures (docs/RESULTS.md, made by report.py and
# `keystone plot` from the results alone).
set -euo pipefail
set -f  # no globbing: an override such as key=[1,2] is a value, not a pattern
# Bash reads a script as it runs it, and this loop reads the claims list line
# by line: editing either, or checking out another commit, while runs train
# would change what the running loop reads next. So it runs from a copy of
# both, made here and removed when it ends; the copy's path also ends in
# tools/experiments/run.sh, so `pkill -TERM -f tools/experiments/run.sh`
# still finds it.
if [ -z "${KS_RUN_SH_COPY:-}" ] || [ "$0" != "$KS_RUN_SH_COPY/tools/experiments/run.sh" ]; then
  copy="$(mktemp -d)"
  mkdir -p "$copy/tools/experiments"
  cp "$0" "$copy/tools/experiments/run.sh"
  cp "${CLAIMS:-$(dirname "$0")/claims.txt}" "$copy/claims.txt"
  KS_RUN_SH_COPY="$copy" KS_RUN_SH_ROOT="$(cd "$(dirname "$0")/../.." && pwd)" CLAIMS="$copy/claims.txt" \
    exec bash "$copy/tools/experiments/run.sh" "$@"
fi
trap 'rm -rf "$KS_RUN_SH_COPY"' EXIT
cd "$KS_RUN_SH_ROOT"
seeds="${SEEDS:-0 1 2}"
root="${KS_EXPERIMENTS:-runs/experiments}"
results="${KS_RESULTS:-docs/results/runs}"
analyze_claims=" ${ANALYZE_CLAIMS:-1 3 5} "
ks="${KEYSTONE:-build/keystone}"
[ -x "$ks" ] || { echo "run.sh: $ks is not an executable keystone binary (build first, or set KEYSTONE)" >&2; exit 2; }
claims=("$@")
claims_file="${CLAIMS:-tools/experiments/claims.txt}"
stop=0
trap 'stop=1' INT TERM

has_test() { grep -q '"split": *"test"' "$1/metrics.jsonl" 2>/dev/null; }

# compact SRC DST: an analysis.json without the singular values of every head
# and example (95% of its 0.6 MB; `keystone analyze --compare`, which the
# tables read, needs only their effective ranks), or as it is without python3.
compact() {
  if ! command -v python3 >/dev/null; then cp "$1" "$2"; return; fi
  python3 - "$1" "$2" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
for site in a["sites"]:
    for example in site.get("rank", {}).get("examples", []):
        for head in example.get("heads", []):
            for spectrum in head.values():
                if isinstance(spectrum, dict):
                    spectrum.pop("singular_values", None)
with open(sys.argv[2], "w") as f:
    json.dump(a, f, indent=1)
    f.write("\n")
PY
}

# keep CLAIM DIR: the finished run's results into KS_RESULTS, analysed first
# when its claim is one of ANALYZE_CLAIMS (the analysis needs the checkpoint,
# which does not outlive the machine).
keep() {
  local claim="$1" dir="$2" kept="$results/claim$1/$(basename "$2")"
  if [[ "$analyze_claims" == *" $claim "* ]] && [ ! -f "$dir/analysis/analysis.json" ]; then
    echo "$(date -u +%FT%TZ) analyze $dir"
    # shellcheck disable=SC2086
    "$ks" analyze --run "$dir" ${ANALYZE_FLAGS:-} > "$dir.analysis.log" 2>&1 \
      || { echo "run.sh: keystone analyze --run $dir failed, see $dir.analysis.log" >&2; return 1; }
  fi
  mkdir -p "$kept"
  cp "$dir/config.json" "$dir/metrics.jsonl" "$kept/"
  # Which binary (commit) on which machine trained each session of the run.
  [ ! -f "$dir/provenance.jsonl" ] || cp "$dir/provenance.jsonl" "$kept/"
  "$ks" info --machine > "$kept/machine.json"  # the CPU and bf16 GEMM path that finished it
  if [ -f "$dir/analysis/analysis.json" ]; then
    mkdir -p "$kept/analysis"
    compact "$dir/analysis/analysis.json" "$kept/analysis/analysis.json"
  fi
  echo "$(date -u +%FT%TZ) kept   $kept"
}

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
    kept="$results/claim$claim/$name-seed$seed"
    has_test "$kept" && continue                        # finished, results kept
    if has_test "$dir"; then keep "$claim" "$dir"; continue; fi  # finished here, not yet kept
    mkdir -p "$root/claim$claim"
    sets=(--set "seed=$seed" --set train.precision=bf16 --set "name=$name-seed$seed")
    for kv in $overrides; do sets+=(--set "$kv"); done
    if [ -f "$dir/latest.safetensors" ]; then
      echo "$(date -u +%FT%TZ) resume $dir"
      cmd=("$ks" train --out "$dir" --resume --quiet)
    else
      # A folder left before its first checkpoint is the trainer's to restart:
      # it does so under the folder's lock, which a trainer still running holds.
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
    if [ "$stop" = 1 ]; then
      # A stop that came as the run ended leaves it finished (kept by the
      # next start), not resumable.
      if has_test "$dir"; then echo "$(date -u +%FT%TZ) finished $dir"; else echo "$(date -u +%FT%TZ) stopped $dir (resumable)"; fi
      exit 130
    fi
    if [ "$rc" != 0 ]; then
      echo "run.sh: $dir failed (exit $rc), see $dir.log; its last lines:" >&2
      tail -n 3 "$dir.log" >&2
      exit 1
    fi
    echo "$(date -u +%FT%TZ) finished $dir"
    keep "$claim" "$dir"
  done < "$claims_file"
done
echo "$(date -u +%FT%TZ) every run is finished"
