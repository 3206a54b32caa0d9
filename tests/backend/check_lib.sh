# Sourced by the shell tests: counting checks, and a temporary directory removed at exit.
#   check DESCRIPTION COMMAND...   passes when COMMAND succeeds
#   fail DESCRIPTION               a failed check
#   finish                         prints "N passed, N failed" and returns the verdict
# $T is the directory; a background process whose pid is in $BG is killed at exit.
T=$(mktemp -d "${TMPDIR:-/tmp}/zxs-test.XXXXXX")
chmod 755 "$T"
BG=""
cleanup() {
  if [ -n "$BG" ]; then kill -KILL "$BG" 2>/dev/null; fi
  rm -rf "$T"
}
trap cleanup EXIT

failures=0
checks=0
pass() { checks=$((checks + 1)); }
fail() {
  checks=$((checks + 1))
  failures=$((failures + 1))
  echo "FAIL: $*" >&2
}
check() {
  local what=$1
  shift
  if "$@"; then pass; else fail "$what"; fi
}
finish() {
  echo "$((checks - failures)) passed, $failures failed"
  [ "$failures" -eq 0 ]
}
