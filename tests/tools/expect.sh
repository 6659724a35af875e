# tests/tools/expect.sh — what the scripts that run the keystone binary share
# (sourced first by tests/tools/test_cli*.sh, test_plugins.sh and
# test_bench_scripts.sh): `set -u`; Debian's python3 first on PATH; $root, the
# checkout; a temporary folder $tmp, removed on exit; the count of failed
# checks $fails; `expect CODE PATTERN -- command...`, which runs the command
# and counts a failure unless it exits with CODE and its output (stdout and
# stderr) matches the extended regular expression PATTERN;
# `sigint_then_resume CONFIG OUT STEPS`, a real Ctrl-C and --resume; and
# `finish MESSAGE`, the exit. Not here: what any one script checks.
set -u
# Debian's python3 first (the one tools/run.sh installs packages for): a version
# manager's shim ahead of it on PATH costs half a second a call, and these
# scripts make dozens.
PATH="/usr/bin:$PATH"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
expect() {  # expect CODE PATTERN -- command...
  local code="$1" pattern="$2"; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$code" ] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL: $* -> exit $rc (want $code), output: $out (want /$pattern/)"
    fails=$((fails + 1))
  fi
}
# sigint_then_resume CONFIG OUT STEPS: `$ks train` of CONFIG into OUT in the
# background gets a real SIGINT once it has written a metric; it must save,
# say where it stopped and exit 130 (its output in OUT.log; its exit status
# left in $rc); then --resume must finish the run's STEPS steps. The caller
# compares the losses.
sigint_then_resume() {
  local config="$1" out="$2" steps="$3" pid
  "$ks" train --config "$config" --out "$out" --quiet > "$out.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 500); do [ -s "$out/metrics.jsonl" ] && break; sleep 0.01; done
  kill -INT "$pid"; wait "$pid"; rc=$?
  if [ "$rc" != 130 ] || ! grep -q "stopped at step" "$out.log"; then
    echo "FAIL: SIGINT -> exit $rc (want 130): $(cat "$out.log")"; fails=$((fails + 1))
  fi
  expect 0 "finished $steps steps" -- "$ks" train --out "$out" --resume --quiet
}
finish() {  # finish MESSAGE: exit 1 naming the count of failures, else print MESSAGE
  if [ "$fails" -ne 0 ]; then echo "$fails checks failed"; exit 1; fi
  echo "$1"
}
