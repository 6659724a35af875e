# tests/tools/expect.sh — what the scripts that run the keystone binary share
# (sourced by tests/tools/test_cli.sh and tests/tools/test_plugins.sh): a
# temporary folder $tmp, removed on exit; the count of failed checks $fails;
# `expect CODE PATTERN -- command...`, which runs the command and counts a
# failure unless it exits with CODE and its output (stdout and stderr) matches
# the extended regular expression PATTERN; and `finish MESSAGE`, the exit.
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
finish() {  # finish MESSAGE: exit 1 naming the count of failures, else print MESSAGE
  if [ "$fails" -ne 0 ]; then echo "$fails checks failed"; exit 1; fi
  echo "$1"
}
