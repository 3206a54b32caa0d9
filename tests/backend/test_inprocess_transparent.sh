#!/usr/bin/env bash
# Issue #26: in process (`zxsampler record --in-process`, the library preloaded; the same library
# an application links), the program behaves exactly as it does without us. Each mode of
# transparent_target.c is run with and without the library; what it sees must be the same.
#   test_inprocess_transparent.sh ZXSAMPLER TARGET
# No timing is asserted; `timeout` only turns a hang (the bug itself) into a failure.
set -u
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
zxs=$(abs "$1") target=$(abs "$2")
if ldd "$zxs" 2>/dev/null | grep -q libasan; then
  export ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0
check() {  # check DESCRIPTION CONDITION...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what" >&2; fails=$((fails + 1)); fi
}
# profiled NAME MODE [ENV...]: runs the target in MODE under `record --in-process`; its output in
# $dir/NAME.out, the recorder's messages in $dir/NAME.err, the status in $status.
profiled() {
  local name=$1 mode=$2
  shift 2
  rm -f "$dir/$name.fxt"
  (cd "$dir" && env "$@" timeout -s KILL 60 "$zxs" record --in-process -q -o "$name.fxt" -- \
    "$target" "$mode" >"$name.out" 2>"$name.err")
  status=$?
}

# 1. A forked child's SIGTERM kills the child, not its parent; the parent's status is its own.
profiled fork fork-term
check "fork-term: the parent lives and exits 0 (got $status; $(tr '\n' ' ' <"$dir/fork.err"))" \
  test "$status" -eq 0
check "fork-term: the child died of SIGTERM" grep -q child-killed "$dir/fork.out"
check "fork-term: the parent's profile is written" test -s "$dir/fork.fxt"

# 2 and 6. No disposition the program did not set: every signal reads as it does without us.
# (Through the same `timeout` as profiled(): it catches HUP, INT, QUIT and TERM, so what the
# program gets from it is their default action, even where the test was started with one ignored.)
timeout -s KILL 60 "$target" dispositions >"$dir/plain.dispositions"
profiled dispositions dispositions
check "dispositions: the program ran (status $status)" test "$status" -eq 0
check "dispositions: the same as without the library ($(diff "$dir/plain.dispositions" \
  "$dir/dispositions.out" | tr '\n' ' '))" cmp -s "$dir/plain.dispositions" "$dir/dispositions.out"
# Python installs its SIGINT handler only over SIG_DFL; then Ctrl-C is its KeyboardInterrupt.
profiled python python-int
check "python-int: the program's own SIGINT handler runs (status $status; $(tr '\n' ' ' \
  <"$dir/python.out"))" test "$status" -eq 0

# 3. A main thread that calls pthread_exit: the process ends when its last thread does, status 0.
profiled pthread_exit pthread-exit
check "pthread-exit: the process ends, status 0 (got $status)" test "$status" -eq 0
check "pthread-exit: the other thread finished" grep -q worker-done "$dir/pthread_exit.out"
check "pthread-exit: the profile is written" test -s "$dir/pthread_exit.fxt"

# 4. A program that blocks every signal and takes them with sigwaitinfo gets only its own.
profiled sigwait sigwait
check "sigwait: the program took its SIGUSR1 and nothing else (status $status; $(tr '\n' ' ' \
  <"$dir/sigwait.out"))" test "$status" -eq 0
# ... and no thread of ours leaves a signal unblocked, for a process-directed one to land on.
profiled threads threads
check "threads: the program ran (status $status)" test "$status" -eq 0
check "threads: the library's threads block every signal ($(tr '\n' ' ' <"$dir/threads.out"))" \
  grep -qx "foreign-unblocked 0" "$dir/threads.out"

# 5. A program that closes every inherited descriptor: it exits as it would, and the profile is
# written from what is in memory.
profiled close_all close-all
check "close-all: the program's status is its own (0, got $status; $(tr '\n' ' ' \
  <"$dir/close_all.err"))" test "$status" -eq 0
check "close-all: the profile is written" test -s "$dir/close_all.fxt"
check "close-all: the profile reads back" "$zxs" report -f folded -o "$dir/close_all.folded" \
  "$dir/close_all.fxt"
# With each source forced (those this machine lacks start no profile; the program still runs).
for source in perf-ring perf cputimer; do
  profiled "close_all_$source" close-all ZXSAMPLER_SOURCE=$source
  check "close-all, $source: the program's files stay open, its status is its own (got $status; \
$(tr '\n' ' ' <"$dir/close_all_$source.out"))" test "$status" -eq 0
done

echo "$fails failed"
[ "$fails" -eq 0 ]
