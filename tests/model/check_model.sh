#!/usr/bin/env bash
# Model-checks the per-CPU state protocol (tests/model/percpu_protocol.pml) with spin.
#
#   - the correct model (the C code's CAS admission, and the seed's check-set-check admission)
#     must pass the safety run (asserts for properties 1, 2, 4, 5 and no invalid end state) and
#     the liveness run (LTL `live` under weak fairness: every stop returns, destroy completes);
#   - every mutant (-DBUG_...) must fail, with the error the property it breaks predicts;
#   - every witness (-DWITNESS=n) must be reached, so the passes above are not vacuous.
#
# Prints one line per run and exits 0 only when every expectation holds; 77 (meson: skipped)
# when spin or a C compiler is missing.
#
# Environment: MODEL_DEEP=1 adds bigger configurations (a few minutes, up to ~2 GB per run);
# MODEL_VERBOSE=1 prints each run's command and pan statistics; MODEL_KEEP=1 keeps the work
# directory (pan output and trails); MODEL_JOBS runs that many pans at once (default: nproc);
# CC picks the compiler (default gcc, then cc); MODEL_MEMLIM is pan's limit in MB (2048).
#
# A counterexample is replayed with: cd <work>/runNNN && spin -t -p -D... model.pml
set -u

here="$(cd "$(dirname "$0")" && pwd)"
model="${1:-$here/percpu_protocol.pml}"

if ! command -v spin >/dev/null 2>&1; then
  echo "spin is not installed (apt-get install -y spin): skipping the model check"
  exit 77
fi
cc="${CC:-}"
if [ -z "$cc" ]; then
  if command -v gcc >/dev/null 2>&1; then cc=gcc; elif command -v cc >/dev/null 2>&1; then cc=cc; fi
fi
if [ -z "$cc" ] || ! command -v "$cc" >/dev/null 2>&1; then
  echo "no C compiler for pan: skipping the model check"
  exit 77
fi
if [ ! -r "$model" ]; then
  echo "cannot read $model" >&2
  exit 1
fi

memlim="${MODEL_MEMLIM:-2048}"
depth=100000            # -m: far above the deepest path (a few hundred); checked below
per_run_timeout=240     # seconds, a backstop: the whole script takes well under a minute
verbose="${MODEL_VERBOSE:-0}"

work="$(mktemp -d "${TMPDIR:-/tmp}/zxs-model.XXXXXX")"
# shellcheck disable=SC2317  # called by the trap
cleanup() { if [ "${MODEL_KEEP:-0}" = 1 ]; then echo "work directory: $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT

with_timeout() {
  if command -v timeout >/dev/null 2>&1; then timeout "$per_run_timeout" "$@"; else "$@"; fi
}

now() { date +%s.%N 2>/dev/null || date +%s; }

njobs="${MODEL_JOBS:-$(nproc 2>/dev/null || echo 2)}"
[ "$njobs" -ge 1 ] 2>/dev/null || njobs=2
runs=0
start_all="$(now)"

# one_run DIR KIND NAME LABEL REGEX SPIN_FLAGS...
#   KIND    safety | liveness | witness
#   REGEX   "" = must pass; otherwise an extended regex that pan's first error line must match
#   Writes DIR/line (the table row), DIR/verdict (ok|bad) and DIR/detail (shown when bad).
one_run() {
  local dir="$1" kind="$2" name="$3" label="$4" want="$5"
  shift 5
  mkdir -p "$dir"
  cp "$model" "$dir/model.pml"

  local ccflags panflags opt
  case "$kind" in
    liveness)
      ccflags="-DNFAIR=3 -DMEMLIM=$memlim"
      panflags="-a -f -m$depth -w24"
      ;;
    *)
      ccflags="-DSAFETY -DNOCLAIM -DMEMLIM=$memlim"
      panflags="-m$depth -w24"
      ;;
  esac
  # Runs that must pass explore everything: optimise. Runs that must fail stop at the first
  # error after a few thousand states: compile fast.
  if [ -z "$want" ]; then opt=-O1; else opt=-O0; panflags="$panflags -c1"; fi
  # The deep configurations store tens of millions of states: compress them.
  if [ "${MODEL_DEEP:-0}" = 1 ] && [ -z "$want" ]; then ccflags="$ccflags -DCOLLAPSE"; panflags="${panflags/-w24/-w26}"; fi
  local cmd="spin${*:+ $*} -a model.pml && $cc $opt $ccflags -o pan pan.c && ./pan $panflags"

  local t0 t1 status out="$dir/pan.out"
  t0="$(now)"
  (
    cd "$dir" || exit 1
    spin "$@" -a model.pml >spin.out 2>&1 || { cat spin.out >pan.out; exit 2; }
    # shellcheck disable=SC2086
    "$cc" $opt -w $ccflags -o pan pan.c >cc.out 2>&1 || { cat cc.out >pan.out; exit 3; }
    # shellcheck disable=SC2086
    with_timeout ./pan $panflags >pan.out 2>&1
    echo "pan exit $?" >>pan.out
  )
  status=$?
  t1="$(now)"

  local states="-" dep="-" errors="" first="" result verdict=ok
  if [ "$status" -ne 0 ]; then
    result="spin or $cc failed (status $status)"
    verdict=bad
  else
    states="$(sed -n 's/^ *\([0-9][0-9]*\) states, stored.*/\1/p' "$out" | head -n1)"
    dep="$(sed -n 's/.*depth reached \([0-9][0-9]*\).*/\1/p' "$out" | head -n1)"
    errors="$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$out" | head -n1)"
    first="$(grep -m1 -E '^pan:[0-9]+: ' "$out" | sed 's/^pan:[0-9]*: *//; s/ (at depth [0-9]*)//')"
    if [ -z "$errors" ]; then
      result="no verdict from pan"
      verdict=bad
    elif grep -qE 'max search depth too small|out of memory|reached -DMEMLIM' "$out" ||
      grep -q '^pan exit 124' "$out"; then
      result="incomplete search (depth, memory or time)"
      verdict=bad
    elif [ -z "$want" ]; then
      if [ "$errors" = 0 ]; then result="pass"; else result="FAILED: $first"; verdict=bad; fi
    elif [ "$errors" = 0 ]; then
      result="NOT CAUGHT: pan found no error"
      verdict=bad
    elif printf '%s\n' "$first" | grep -qE -- "$want"; then
      result="rejected: $first"
    else
      result="WRONG ERROR: $first"
      verdict=bad
    fi
  fi
  local secs
  secs="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1fs", b - a }')"
  printf '%-9s %-42s %-22s %9s %5s %6s  %s\n' "$kind" "$name" "$label" "${states:--}" \
    "${dep:--}" "$secs" "$result" >"$dir/line"
  echo "$verdict" >"$dir/verdict"
  {
    echo "    \$ $cmd"
    grep -E 'State-vector|states, stored|elapsed' "$out" | sed 's/^/    /'
    if [ "$verdict" != ok ]; then
      grep -vE '^[[:space:]]+(model\.pml|_spin_nvr)' "$out" | head -n 25 | sed 's/^/    | /'
    fi
  } >"$dir/detail"
}

# run KIND NAME LABEL REGEX SPIN_FLAGS...: queues one_run, at most $njobs at a time.
run() {
  local dir
  dir="$work/run$(printf '%03d' "$runs")"
  runs=$((runs + 1))
  while [ "$(jobs -rp | wc -l)" -ge "$njobs" ]; do wait -n 2>/dev/null || sleep 0.2; done
  one_run "$dir" "$@" &
}

# --- The correct protocol -------------------------------------------------------------------
# Safety: 2 CPUs, 2 writers (1 sample each, on any CPU, migrating), 2 per-CPU timers, a late
# writer after destroy, start / stop / start / (stop) / destroy. Every assert (properties 1, 2,
# 4 and 5) and no invalid end state (3).
run safety "correct: C code (CAS admission)" "pass" ""
run safety "correct: seed check-set-check admission" "pass" "" -DADMIT_SEED
# Liveness (3), LTL `live` under weak fairness. One writer taking 2 samples keeps the fair
# product small; MODEL_DEEP=1 repeats it with the 2 writers of the safety run.
run liveness "correct: C code, 1 writer x 2" "pass" "" -DNWRITERS=1 -DSAMPLES=2
run liveness "correct: seed admission, 1 writer x 2" "pass" "" -DADMIT_SEED -DNWRITERS=1 -DSAMPLES=2

# --- Witnesses: the interleavings that matter do happen (so the passes are not vacuous) ------
run witness "W1 stop has a writer to wait for" "reached" 'writers\[i\]>0' -DWITNESS=1
run witness "W2 re-arm after cancel missed it" "reached" 'cancel_done' -DWITNESS=2
run witness "W3 a sample after destroy" "reached" 'assertion violated' -DWITNESS=3
run witness "W4 a region fills up" "reached" 'assertion violated' -DWITNESS=4
run witness "W5 writer ends on its state elsewhere" "reached" 'cur!=c' -DWITNESS=5
run witness "W6 callback drops its mark in stop" "reached" 'stopping' -DWITNESS=6

# --- Mutants: each rejected by the property it breaks (-DONLY=n keeps only property n) -------
p1='assertion violated +!\(quiesced\)'
p2='assertion violated (region_valid|ctx_valid)'
p4w='assertion violated \(inside==0\)'
p4t='assertion violated \(\(timers\[i\]==0\)'
dl='invalid end state'
run safety "BUG_CHECK_THEN_SET" "(1) write after stop" "$p1" -DBUG_CHECK_THEN_SET -DONLY=1
run safety "BUG_CHECK_THEN_SET" "(4) writer not waited" "$p4w" -DBUG_CHECK_THEN_SET -DONLY=4
run safety "BUG_NO_PHASE2" "(2) use after release" "$p2" -DBUG_NO_PHASE2 -DONLY=2
run safety "BUG_NO_PHASE2" "(4) timer not waited" "$p4t" -DBUG_NO_PHASE2 -DONLY=4
run safety "BUG_NO_PHASE3" "(1) write after stop" "$p1" -DBUG_NO_PHASE3 -DONLY=1
run safety "BUG_NO_PHASE3" "(2) use after release" "$p2" -DBUG_NO_PHASE3 -DONLY=2
run safety "BUG_NO_PHASE3" "(4) writer not waited" "$p4w" -DBUG_NO_PHASE3 -DONLY=4
run safety "BUG_WAIT_BEFORE_DISABLE" "(1) write after stop" "$p1" -DBUG_WAIT_BEFORE_DISABLE -DONLY=1
run safety "BUG_END_ON_CURRENT_CPU" "(3) deadlock" "$dl" -DBUG_END_ON_CURRENT_CPU -DONLY=1
run safety "BUG_END_ON_CURRENT_CPU" "(5) count below 0" 'writers\[cur\]>0' -DBUG_END_ON_CURRENT_CPU -DONLY=5
run safety "BUG_BAIL_WITHOUT_END" "(3) deadlock" "$dl" -DBUG_BAIL_WITHOUT_END -DONLY=3
run safety "BUG_RESERVE_LOAD_STORE" "(5) shared record slot" 'rec\[' -DBUG_RESERVE_LOAD_STORE -DONLY=5
run safety "BUG_RELEASE_BEFORE_STOP" "(2) use after release" "$p2" -DBUG_RELEASE_BEFORE_STOP -DONLY=2
run safety "BUG_CANCEL_ASSUMES_SUCCESS" "(2) use after release" "$p2" -DBUG_CANCEL_ASSUMES_SUCCESS -DONLY=2
run safety "BUG_DESTROY_WITHOUT_STOP" "(2) use after release" "$p2" -DBUG_DESTROY_WITHOUT_STOP -DONLY=2
run safety "BUG_DESTROY_WITHOUT_STOP" "(5) late writer admitted" '!\(ok\)' -DBUG_DESTROY_WITHOUT_STOP -DONLY=5
run liveness "BUG_REARM_IGNORES_DISABLE" "(3) stop never returns" 'acceptance cycle' \
  -DBUG_REARM_IGNORES_DISABLE -DNWRITERS=1 -DSAMPLES=2
run liveness "BUG_BAIL_WITHOUT_END" "(3) stop never returns" 'acceptance cycle' \
  -DBUG_BAIL_WITHOUT_END -DNWRITERS=1 -DSAMPLES=2

if [ "${MODEL_DEEP:-0}" = 1 ]; then
  run safety "deep: correct, 2 writers x 2 samples" "pass" "" -DSAMPLES=2
  run safety "deep: correct, 3 CPUs" "pass" "" -DNCPU=3
  run liveness "deep: correct, 2 writers x 1" "pass" ""
  run safety "deep: phase 2 without the cancel" "pass" "" -DNO_CANCEL
  run liveness "deep: phase 2 without the cancel" "pass" "" -DNO_CANCEL -DNWRITERS=1 -DSAMPLES=2
  # Safety alone cannot see this mutant (the timer keeps firing, nothing is stuck).
  run safety "deep: BUG_REARM_IGNORES_DISABLE" "safety blind: pass" "" -DBUG_REARM_IGNORES_DISABLE
fi
wait

printf '%-9s %-42s %-22s %9s %5s %6s  %s\n' kind variant expect states depth time result
printf '%s\n' "------------------------------------------------------------------------------------------------------------------------"
failures=0
for dir in "$work"/run*; do
  cat "$dir/line" 2>/dev/null || echo "(a run left no result: $dir)"
  if [ "$(cat "$dir/verdict" 2>/dev/null)" != ok ]; then
    failures=$((failures + 1))
    cat "$dir/detail" 2>/dev/null
  elif [ "$verbose" = 1 ]; then
    cat "$dir/detail"
  fi
done

end_all="$(now)"
total="$(awk -v a="$start_all" -v b="$end_all" 'BEGIN { printf "%.1f", b - a }')"
echo
if [ "$failures" -eq 0 ]; then
  echo "model check: all $runs runs as expected (${total}s)"
  exit 0
fi
echo "model check: $failures of $runs runs NOT as expected (${total}s)"
exit 1
