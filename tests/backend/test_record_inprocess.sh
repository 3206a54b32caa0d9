#!/usr/bin/env bash
# `zxsampler record` with the library preloaded into the program: macOS's record (here: the
# macOS backend over the Mach double) and Linux's `record --in-process`.
#   test_record_inprocess.sh ZXSAMPLER TARGET [--in-process] [--names]
# --names: also require the sampled functions' names (not on the Mach double, whose images'
# UUIDs do not match their ELF build IDs).
set -u
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
zxs=$(abs "$1") target=$(abs "$2")
shift 2
mode=() names=0
for a in "$@"; do
  case $a in
    --in-process) mode=(--in-process) ;;
    --names) names=1 ;;
  esac
done
# In a sanitizer build the preload library carries the sanitizer runtime into the program.
if ldd "$zxs" 2>/dev/null | grep -q libasan; then
  export ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0
not_grep() { ! grep -q "$@"; }
check() {  # check DESCRIPTION CONDITION...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what" >&2; fails=$((fails + 1)); fi
}

# A program that returns: its status, a profile of both threads.
(cd "$dir" && "$zxs" record "${mode[@]}" -o prof.fxt -- "$target" return >out.txt 2>report.txt)
status=$?
check "the program's status is kept (7, got $status)" test "$status" -eq 7
check "a profile is written" test -s "$dir/prof.fxt"
check "the report counts two threads" grep -q "Threads: 2" "$dir/report.txt"
samples=$(sed -n 's/^Samples: \([0-9]*\).*/\1/p' "$dir/report.txt")
check "samples for 0.6 s of CPU at 1000/s (got ${samples:-none})" test "${samples:-0}" -ge 200
if [ "$names" = 1 ]; then
  check "the main thread's function is named" grep -q inprocess_main_work "$dir/report.txt"
  check "the other thread's function is named" grep -q inprocess_thread_work "$dir/report.txt"
fi
check "the report is not in the program's output (stdout)" not_grep -q Samples: "$dir/out.txt"
check "the report converts" "$zxs" report -f folded -o "$dir/prof.folded" "$dir/prof.fxt"

# A program whose forked child exits first: the child writes nothing and says nothing.
rm -f "$dir/prof.fxt"
(cd "$dir" && "$zxs" record "${mode[@]}" -o prof.fxt -- "$target" fork >out.txt 2>report.txt)
status=$?
check "fork: the program's status is kept (7, got $status)" test "$status" -eq 7
check "fork: the child's exit reports no failure" not_grep -i fail "$dir/report.txt"
check "fork: the program's two threads are recorded" grep -q "Threads: 2" "$dir/report.txt"

# A wrapper that execs the program (as pyenv's shims do): the program is what is recorded.
rm -f "$dir/prof.fxt"
(cd "$dir" && "$zxs" record "${mode[@]}" -o prof.fxt -- sh -c 'exec "$0" return' "$target" \
  >out.txt 2>report.txt)
status=$?
check "exec: the program's status is kept (7, got $status)" test "$status" -eq 7
check "exec: the program's two threads are recorded" grep -q "Threads: 2" "$dir/report.txt"
if [ "$names" = 1 ]; then
  check "exec: the program's function is named" grep -q inprocess_main_work "$dir/report.txt"
fi

# A shell that starts the program and waits: the programs it starts write nothing and inherit
# no request to profile (the shell's own profile is not written: dash ends with _exit).
rm -f "$dir/prof.fxt"
(cd "$dir" && "$zxs" record "${mode[@]}" -o prof.fxt -- sh -c \
  '"$0" return; test -e prof.fxt && echo started-program-wrote; env | grep -qE "^ZXSAMPLER_|zxsampler-preload" && echo started-program-asked; exit 5' \
  "$target" >out.txt 2>report.txt)
status=$?
check "a started program: the shell's status is kept (5, got $status)" test "$status" -eq 5
check "a started program: it wrote no profile" not_grep started-program-wrote "$dir/out.txt"
check "a started program: its environment asks for nothing" not_grep started-program-asked \
  "$dir/out.txt"

# A program that ends with _exit: no profile, said plainly, its status kept.
rm -f "$dir/prof.fxt"
(cd "$dir" && "$zxs" record "${mode[@]}" -q -o prof.fxt -- "$target" _exit >/dev/null 2>err.txt)
status=$?
check "_exit: the status is kept (3, got $status)" test "$status" -eq 3
check "_exit: no profile" test ! -e "$dir/prof.fxt"
check "_exit: the user is told" grep -q "wrote no profile" "$dir/err.txt"

# ZXSAMPLER_DUMP_SIGNAL (set by hand): the signal has the library's thread write the profile,
# which then survives the program's _exit.
rm -f "$dir/prof.fxt"
(cd "$dir" && ZXSAMPLER_DUMP_SIGNAL=$(kill -l USR1) "$zxs" record "${mode[@]}" -q -o prof.fxt -- \
  "$target" dump >/dev/null 2>err.txt)
status=$?
check "dump signal: the status is kept (3, got $status)" test "$status" -eq 3
check "dump signal: the profile is written ($(tr '\n' ' ' <"$dir/err.txt"))" test -s "$dir/prof.fxt"

# A program that does not exist: exec's status, and why.
"$zxs" record "${mode[@]}" -o "$dir/none.fxt" -- "$dir/no-such-program" 2>"$dir/err.txt"
status=$?
check "a missing program: status 127 (got $status)" test "$status" -eq 127
check "a missing program: the user is told" grep -q "cannot run" "$dir/err.txt"

# Losses are said whatever -q says: a profile that holds lost samples gets a warning on stderr.
# (A 1 MiB buffer at 100000/s loses some on most machines; where none were lost there is
# nothing to say.)
(cd "$dir" && "$zxs" record "${mode[@]}" -q -b 1 -F 100000 -o lossy.fxt -- "$target" return \
  >out.txt 2>err.txt)
check "-q: the top functions are not printed" not_grep -q Samples: "$dir/err.txt"
if "$zxs" report "$dir/lossy.fxt" 2>/dev/null | grep -q "Lost:"; then
  check "-q: the losses the profile holds are said" grep -q "samples lost" "$dir/err.txt"
else
  echo "ok: -q: nothing lost here, nothing said (# skip)"
  check "-q: nothing lost, no loss said" not_grep -q "samples lost" "$dir/err.txt"
fi

# Signals sent to zxsampler reach the program (whose library writes the profile as it dies of
# them), and zxsampler ends as the program did; none is orphaned. Job control on: a background
# job's SIGINT is not ignored; and each starts at the signal's default action, since zxsampler
# rightly leaves ignored a signal it was started with ignored (under nohup, say).
set -m
for sig in TERM INT HUP; do
  rm -f "$dir/ready" "$dir/sig.fxt"
  env --default-signal="$sig" "$zxs" record "${mode[@]}" -q -o "$dir/sig.fxt" -- \
    "$target" wait "$dir/ready" >/dev/null 2>"$dir/err.txt" &
  zpid=$!
  while [ ! -e "$dir/ready" ] && kill -0 "$zpid" 2>/dev/null; do sleep 0.05; done
  child=$(pgrep -P "$zpid" | head -1)
  kill -s "$sig" "$zpid"
  wait "$zpid"
  status=$?
  expected=$((128 + $(kill -l "$sig")))
  check "SIG$sig: zxsampler ends as the program did ($expected, got $status)" \
    test "$status" -eq "$expected"
  check "SIG$sig: the program is gone (not orphaned)" test -n "$child" -a ! -e "/proc/$child"
  check "SIG$sig: the program wrote its profile" test -s "$dir/sig.fxt"
done
set +m

# Outputs: never a device, FIFO or directory; an empty name refused; an old profile kept when
# the program writes none; an unwritable output refused before the program runs.
mkfifo "$dir/fifo"
"$zxs" record "${mode[@]}" -q -o "$dir/fifo" -- "$target" return >/dev/null 2>"$dir/err.txt"
status=$?
check "-o FIFO: refused before the program runs (1, got $status)" test "$status" -eq 1
check "-o FIFO: it stays a FIFO" test -p "$dir/fifo"
check "-o FIFO: the user is told" grep -q "FIFO" "$dir/err.txt"
"$zxs" record "${mode[@]}" -q -o '' -- "$target" return >/dev/null 2>"$dir/err.txt"
check "-o '': refused" test $? -eq 1
echo old >"$dir/old.fxt"
"$zxs" record "${mode[@]}" -q -o "$dir/old.fxt" -- "$target" _exit >/dev/null 2>"$dir/err.txt"
check "_exit: an old profile is kept as it was" grep -qx old "$dir/old.fxt"
"$zxs" record "${mode[@]}" -q -o "$dir/old.fxt" -- "$dir/no-such-program" 2>/dev/null
check "a program that cannot start: an old profile is kept" grep -qx old "$dir/old.fxt"
"$zxs" record "${mode[@]}" -q -o "$dir/no-such-dir/p.fxt" -- sh -c "touch $dir/ran" 2>"$dir/err.txt"
check "-o in a missing folder: refused (1)" test $? -eq 1
check "-o in a missing folder: the program did not run" test ! -e "$dir/ran"

# Bad options are usage errors.
"$zxs" record "${mode[@]}" -F 0 -- "$target" 2>/dev/null
check "-F 0 is a usage error" test $? -eq 2

echo "$fails failed"
[ "$fails" -eq 0 ]
