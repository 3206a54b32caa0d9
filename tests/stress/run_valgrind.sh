#!/usr/bin/env bash
# Runs stress programs under valgrind's memcheck: every heap block freed, no invalid access.
#
#   run_valgrind.sh PROGRAM [ARGS...] [-- PROGRAM [ARGS...]]...
#
# The CPU-clock timer source is used (no perf_event fasync signals, whose delivery under
# valgrind is not something to depend on), and the programs run their light configuration
# (ZXS_STRESS_LIGHT=1: valgrind runs everything ~50 times slower; the main thread is never
# sampled, since valgrind cannot always grow the main stack for a signal frame). Exits 77
# (skipped) when valgrind is not installed (apt-get install valgrind) or every program skipped.
set -euo pipefail

if ! command -v valgrind >/dev/null 2>&1; then
  echo "valgrind is not installed (apt-get install valgrind): skipped"
  exit 77
fi
if [ "$#" -eq 0 ]; then
  echo "usage: $0 PROGRAM [ARGS...] [-- PROGRAM [ARGS...]]..." >&2
  exit 2
fi

export ZXSAMPLER_SOURCE=cputimer
export ZXS_STRESS_LIGHT=1

# Definite and indirect leaks fail; "possibly lost" blocks are not shown (glibc keeps the TLS
# blocks of joined threads for reuse, which memcheck reports as possibly lost).
VALGRIND=(valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect
  --errors-for-leak-kinds=definite,indirect --error-exitcode=1 --track-fds=no
  --child-silent-after-fork=yes -q)

status=0
ran=0
run() {
  echo "== valgrind $*"
  local rc=0
  "${VALGRIND[@]}" "$@" || rc=$?
  if [ "$rc" -eq 77 ]; then
    echo "== skipped: $*"
  elif [ "$rc" -ne 0 ]; then
    echo "== FAILED under valgrind (exit $rc): $*"
    status=1
  else
    ran=$((ran + 1))
  fi
}

cmd=()
for arg in "$@"; do
  if [ "$arg" = "--" ]; then
    if [ "${#cmd[@]}" -gt 0 ]; then run "${cmd[@]}"; fi
    cmd=()
  else
    cmd+=("$arg")
  fi
done
if [ "${#cmd[@]}" -gt 0 ]; then run "${cmd[@]}"; fi
if [ "$status" -eq 0 ] && [ "$ran" -eq 0 ]; then exit 77; fi
exit "$status"
