#!/usr/bin/env bash
# `zxsampler record` never changes a run and never loses one: every way a program can end,
# shells and exec shims, process trees, attaching to a running process, static programs, kernel
# time, bad input, and a long run with a small buffer.
#
#   test_record_tree.sh ZXSAMPLER TARGET TARGET_STATIC NOFP_TARGET
#
# TARGET is tests/backend/record_target.c built as usual, TARGET_STATIC the same linked
# statically ("" when the toolchain cannot), NOFP_TARGET nofp_target.cpp built without frame
# pointers ("" without a C++ compiler).
set -u

if [ $# -ne 4 ]; then
  echo "usage: $0 ZXSAMPLER TARGET TARGET_STATIC NOFP_TARGET" >&2
  exit 2
fi
ZXS=$1
TARGET=$2
STATIC=$3
NOFP=$4

# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"

# Copies of zxsampler and the target that uid 65534 can run: the build tree may not be
# readable to it (a clone under a 0700 home). Both are linked without our shared library.
nobody_copies() {
  mkdir -p "$T/nobody" && chmod 777 "$T/nobody"
  cp "$ZXS" "$T/nobody/zxsampler" && cp "$TARGET" "$T/nobody/target"
  chmod 755 "$T/nobody/zxsampler" "$T/nobody/target"
}

# The status a shell gives COMMAND (128 + N for a death by signal N).
status_of() { sh -c '"$@" >/dev/null 2>&1; echo $?' sh "$@"; }

# record_run NAME ARGS...: records ARGS into $T/NAME.fxt, the recorder's status as `sh` sees it
# into $T/NAME.status, and its output into $T/NAME.out / .err; then reports into $T/NAME.txt.
record_run() {
  local name=$1
  shift
  sh -c '"$@"; echo $? >"'"$T/$name.status"'"' sh "$ZXS" record -o "$T/$name.fxt" "$@" \
    >"$T/$name.out" 2>"$T/$name.err"
  "$ZXS" report "$T/$name.fxt" >"$T/$name.txt" 2>&1
}
recorded_status() { cat "$T/$1.status"; }
samples_of() { sed -nE 's/^Samples: ([0-9]+).*/\1/p' "$T/$1.txt" | head -n 1; }

# --- 1. Every way to end: the program's own status, and a profile ------------------------------

for mode in return exit _exit _Exit thread_exit abort segv kill9 exec vfork; do
  expected=$(status_of "$TARGET" "$mode")
  record_run "end-$mode" -- "$TARGET" "$mode"
  got=$(recorded_status "end-$mode")
  check "$mode: record exits as the program does ($expected; got $got: $(tr '\n' ' ' <"$T/end-$mode.err"))" \
    [ "$got" = "$expected" ]
  check "$mode: a profile was written" [ -s "$T/end-$mode.fxt" ]
  check "$mode: the profile names spin_main ($(sed -n 2p "$T/end-$mode.txt"))" \
    grep -qw spin_main "$T/end-$mode.txt"
done
check "thread_exit: the exiting thread was sampled too" grep -qw spin_thread "$T/end-thread_exit.txt"
check "exec: the program it became is a process of its own" grep -qE '^ .* sh \(pid' "$T/end-exec.txt"

# --- 2. Nothing of the program's behaviour changes -----------------------------------------------

# Output, file descriptors, environment, ignored and blocked signals, process group.
probe='echo out; echo err >&2; ls /proc/self/fd | sort | tr "\n" " "; echo;
  env | grep -cE "^(LD_PRELOAD|ZXSAMPLER)" ; grep -E "^Sig(Ign|Blk)" /proc/self/status;
  [ "$(ps -o pgid= $$)" = "$(ps -o pgid= $PPID)" ] && echo same-pgrp'
(trap '' USR2; sh -c "$probe" >"$T/native.out" 2>"$T/native.err" 3</dev/null)
(trap '' USR2; "$ZXS" record -o "$T/probe.fxt" -- sh -c "$probe" >"$T/probe.out" \
  2>"$T/probe.err" 3</dev/null)
check "the probe: the recorder ends as the program did (status $?)" [ $? -eq 0 ]
grep -v '^zxsampler: ' "$T/probe.err" >"$T/probe.err.program"
check "the program's stdout is the same under the recorder ($(tr '\n' ' ' <"$T/probe.out"))" \
  cmp -s "$T/native.out" "$T/probe.out"
check "the program's stderr is the same under the recorder" \
  cmp -s "$T/native.err" "$T/probe.err.program"

# --- 3. Shells and shims --------------------------------------------------------------------------

record_run sh-exit -- sh -c "\"$TARGET\" spin 0.3; exit 7"
check "sh -c 'prog; exit 7': status 7 (got $(recorded_status sh-exit))" [ "$(recorded_status sh-exit)" = 7 ]
check "sh -c 'prog; exit 7': the program's samples are there" grep -qw spin_main "$T/sh-exit.txt"
for _ in 1 2 3 4 5; do
  record_run sh-true -- sh -c true
  [ "$(recorded_status sh-true)" = 0 ] || break
done
check "sh -c true: status 0, five times (got $(recorded_status sh-true))" [ "$(recorded_status sh-true)" = 0 ]
printf '#!/bin/sh\nexec "%s" "$@"\n' "$TARGET" >"$T/shim"
chmod +x "$T/shim"
record_run shim -- "$T/shim" spin 0.3
check "a shell shim that execs the program: its samples are there" grep -qw spin_main "$T/shim.txt"
check "a shell shim: status 0 (got $(recorded_status shim))" [ "$(recorded_status shim)" = 0 ]

# Real programs: Debian's python3 behind a shim that execs it, and g++, whose work is done by
# its child cc1plus.
if [ -x /usr/bin/python3 ]; then
  printf '#!/bin/sh\nexec /usr/bin/python3 "$@"\n' >"$T/python-shim"
  chmod +x "$T/python-shim"
  record_run python -- "$T/python-shim" -c 'sum(i * i for i in range(3000000))'
  "$ZXS" report --comm python3 "$T/python.fxt" >"$T/python3.txt" 2>&1
  check "python3 behind a shim: its process has samples" grep -qE '^Samples: [1-9]' "$T/python3.txt"
  check "python3 behind a shim: the interpreter's functions are named" \
    grep -qE '_PyEval_EvalFrameDefault|PyObject_|_PyEval' "$T/python.txt"
fi
if command -v g++ >/dev/null; then
  printf '#include <map>\n#include <string>\nstd::map<int, std::string> m;\n' >"$T/small.cpp"
  record_run gxx -- g++ -O2 -c "$T/small.cpp" -o "$T/small.o"
  check "g++: status 0 (got $(recorded_status gxx))" [ "$(recorded_status gxx)" = 0 ]
  "$ZXS" report --comm cc1plus "$T/gxx.fxt" >"$T/cc1plus.txt" 2>&1
  check "g++: the compiler proper, cc1plus, was followed" grep -qE '^Samples: [1-9]' "$T/cc1plus.txt"
  check "g++: report --comm cc1plus names cc1plus, not the launcher ($(head -n 1 "$T/cc1plus.txt"))" \
    grep -q '^Process: cc1plus (pid [0-9]*)$' "$T/cc1plus.txt"
  "$ZXS" report -f folded "$T/gxx.fxt" >"$T/gxx.folded"
  check "g++: folded stacks start with their program (g++, cc1plus)" \
    sh -c "grep -q '^cc1plus;' '$T/gxx.folded' && ! grep -qv '^[a-z+0-9.-]*;' '$T/gxx.folded'"
fi

# Two programs behind a shell: each has its own root frame in folded stacks and the flame graph,
# where their main-to-libc frames would otherwise merge; a selection names its program.
if command -v xz >/dev/null && command -v gzip >/dev/null; then
  head -c 3000000 /dev/urandom >"$T/random"
  record_run programs -- sh -c "xz -9 -c '$T/random' >/dev/null; gzip -9 -c '$T/random' >/dev/null"
  "$ZXS" report -f folded "$T/programs.fxt" >"$T/programs.folded"
  check "two programs: xz's stacks under xz" grep -q '^xz;.*__libc_start_main' "$T/programs.folded"
  check "two programs: gzip's stacks under gzip" grep -q '^gzip;.*__libc_start_main' "$T/programs.folded"
  "$ZXS" report -f svg "$T/programs.fxt" >"$T/programs.svg"
  check "two programs: the flame graph has both roots" \
    sh -c "grep -q '<title>xz (' '$T/programs.svg' && grep -q '<title>gzip (' '$T/programs.svg'"
  "$ZXS" report -f folded --no-process-frame "$T/programs.fxt" >"$T/programs-merged.folded"
  check "--no-process-frame: no program roots" \
    sh -c "! grep -qE '^(xz|gzip|sh);' '$T/programs-merged.folded'"
  "$ZXS" report --comm xz "$T/programs.fxt" >"$T/programs-xz.txt" 2>&1
  check "report --comm xz: the header names xz ($(head -n 1 "$T/programs-xz.txt"))" \
    grep -q '^Process: xz (pid [0-9]*)$' "$T/programs-xz.txt"
  "$ZXS" report --comm xz -f pprof -o "$T/programs-xz.pb.gz" "$T/programs.fxt"
  check "report --comm xz -f pprof: the comment names xz" \
    sh -c "gzip -dc '$T/programs-xz.pb.gz' | grep -qa 'process xz (pid'"
else
  echo "SKIP: no xz or gzip"
fi

# --- 4. Process trees -----------------------------------------------------------------------------

record_run tree -- "$TARGET" tree 0.3
for f in level0 level1 level2; do
  check "a three-level tree: $f was sampled" grep -qw "$f" "$T/tree.txt"
done
# (3, or more where a sanitizer's runtime forks a helper at exit)
check "a three-level tree: the report lists 3 processes" grep -qE '^Processes: [3-9]$' "$T/tree.txt"
root=$(sed -nE 's/^Process: .* \(pid ([0-9]+)\)$/\1/p' "$T/tree.txt")
"$ZXS" report --pid "$root" "$T/tree.fxt" >"$T/tree-root.txt" 2>&1
check "report --pid ROOT: level0 only" sh -c "grep -qw level0 '$T/tree-root.txt' && ! grep -qwE 'level1|level2' '$T/tree-root.txt'"
"$ZXS" report --comm nosuchname "$T/tree.fxt" >"$T/tree-none.txt" 2>&1
status=$?
check "report --comm with no match: status 2 (got $status)" [ "$status" = 2 ]
check "report --comm with no match: says so, listing the processes" \
  grep -q "no process named 'nosuchname' in the profile; its processes: record_target (pid $root)" \
  "$T/tree-none.txt"
"$ZXS" report --pid 2147483646 -f folded "$T/tree.fxt" >"$T/tree-nopid.txt" 2>&1
status=$?
check "report --pid not in the profile: status 2 (got $status)" [ "$status" = 2 ]
check "report --pid not in the profile: says so" \
  grep -q "no process with pid 2147483646 in the profile; its processes: record_target" \
  "$T/tree-nopid.txt"
"$ZXS" report -f pprof -o "$T/tree.pb.gz" "$T/tree.fxt"
check "pprof of a tree carries process labels" sh -c "gzip -dc '$T/tree.pb.gz' | grep -qa record_target"
record_run tree-noinherit --no-inherit -- "$TARGET" tree 0.3
check "--no-inherit: only the first process" sh -c "grep -qw level0 '$T/tree-noinherit.txt' && ! grep -qwE 'level1|level2' '$T/tree-noinherit.txt'"
check "--no-inherit: says how many children it did not follow" \
  grep -qE '[0-9]+ child process(es)? not followed' "$T/tree-noinherit.err"

# --- 5. A running process (-p) ------------------------------------------------------------------

# until PID is the target, not the shell that forked it on its way to exec: 10 s at most
wait_exec() {
  for _ in $(seq 1 1000); do
    [ "$(cat "/proc/$1/comm" 2>/dev/null)" = record_target ] && return
    sleep 0.01
  done
}

"$TARGET" spin 30 &
BG=$!
wait_exec "$BG"
sh -c '"$@"; echo $? >"'"$T/attach.status"'"' sh "$ZXS" record -p "$BG" -d 1 -o "$T/attach.fxt" \
  >"$T/attach.out" 2>"$T/attach.err"
"$ZXS" report "$T/attach.fxt" >"$T/attach.txt" 2>&1
check "-p PID -d 1: exits 0 (got $(recorded_status attach): $(tr '\n' ' ' <"$T/attach.err"))" \
  [ "$(recorded_status attach)" = 0 ]
check "-p PID: the running program's samples" grep -qw spin_main "$T/attach.txt"
check "-p PID: the process kept running" kill -0 "$BG"
kill -KILL "$BG"
wait "$BG" 2>/dev/null
BG=""
"$TARGET" spin 0.5 &
BG=$!
wait_exec "$BG"  # then it has 0.5 s of CPU time to go
timeout 20 "$ZXS" record -p "$BG" -o "$T/attach-end.fxt" >/dev/null 2>&1
check "-p PID without a duration ends when the process does (status $?)" [ -s "$T/attach-end.fxt" ]
wait "$BG" 2>/dev/null
BG=""

# --- 6. Statically linked programs ----------------------------------------------------------------

if [ -n "$STATIC" ]; then
  record_run static -- "$STATIC" _exit
  check "a static program: status 3 (got $(recorded_status static))" [ "$(recorded_status static)" = 3 ]
  check "a static program: its functions named" grep -qw spin_main "$T/static.txt"
else
  echo "SKIP: no static build of the target (no static libc)"
fi

# --- 7. Kernel time -----------------------------------------------------------------------------

record_run kernel -- "$TARGET" syscalls 0.5
if grep -q '(user and kernel)' "$T/kernel.err"; then
  check "kernel time: the header says so" grep -q '^Sampled: user and kernel' "$T/kernel.txt"
  check "kernel time: a kernel function is named" \
    grep -qE '(ksys_write|__x64_sys_write|sys_getppid|entry_SYSCALL|do_syscall_64|vfs_write)' "$T/kernel.txt"
else
  echo "SKIP: this host does not allow kernel samples"
fi
record_run useronly --user-only -- "$TARGET" syscalls 0.3
check "--user-only: the header says user code only" grep -q '^Sampled: user code only' "$T/useronly.txt"
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  nobody_copies
  setpriv --reuid=65534 --regid=65534 --clear-groups "$T/nobody/zxsampler" record \
    -o "$T/nobody/n.fxt" -- "$T/nobody/target" spin 0.3 >/dev/null 2>"$T/nobody.err"
  check "unprivileged: records ($(tr '\n' ' ' <"$T/nobody.err"))" [ -s "$T/nobody/n.fxt" ]
fi

# --- 8. Bad input -------------------------------------------------------------------------------

"$ZXS" record -o "$T/x.fxt" -- zxs-no-such-command >/dev/null 2>"$T/bad1.err"
sh -c '"$@" >/dev/null 2>&1; echo $?' sh "$ZXS" record -o "$T/x.fxt" -- zxs-no-such-command >"$T/bad1.status"
check "a program that does not exist: status 127" [ "$(cat "$T/bad1.status")" = 127 ]
check "a program that does not exist: the shell's message" grep -q 'zxs-no-such-command: command not found' "$T/bad1.err"
printf 'not a program\n' >"$T/notexec"
sh -c '"$@" >/dev/null 2>&1; echo $?' sh "$ZXS" record -o "$T/x.fxt" -- "$T/notexec" >"$T/bad2.status"
check "a file that is not executable: status 126" [ "$(cat "$T/bad2.status")" = 126 ]
sh -c '"$@" >/dev/null 2>"'"$T/bad3.err"'"; echo $?' sh "$ZXS" record -p 2147483646 -o "$T/x.fxt" >"$T/bad3.status"
check "a pid that does not exist: status 1" [ "$(cat "$T/bad3.status")" = 1 ]
check "a pid that does not exist: says so" grep -q 'no such process' "$T/bad3.err"
sh -c '"$@" >/dev/null 2>"'"$T/bad4.err"'"; echo $?' sh "$ZXS" record -o "$T/no/such/dir/x.fxt" -- \
  touch "$T/ran" >"$T/bad4.status"
check "an unwritable output: status 1" [ "$(cat "$T/bad4.status")" = 1 ]
check "an unwritable output: found before the program ran" [ ! -e "$T/ran" ]
check "an unwritable output: says so" grep -q 'cannot write the profile' "$T/bad4.err"

# --- 9. Whole stacks: CFI where there are no frame pointers, and the depth limit ---------------

# The share of samples whose stack reaches main or a thread's start, from folded stacks.
reach_share() {  # reach_share FOLDED: prints a percentage
  awk '{ n = $NF; total += n; if ($0 ~ /(^|;)(main|__libc_start_call_main|start_thread)(;| )/) ok += n }
       END { printf "%d", (total > 0 ? 100 * ok / total : 0) }' "$1"
}
if "$ZXS" record --help | grep -q -- '--unwind HOW' && [ -n "$NOFP" ]; then
  # (no LeakSanitizer in a sanitizer build: its tracer process at exit does not start at main)
  if ASAN_OPTIONS=detect_leaks=0 "$ZXS" record -q --unwind dwarf -o "$T/nofp.fxt" -- "$NOFP" 0.5 \
    >/dev/null 2>"$T/nofp.err"; then
    "$ZXS" report -f folded "$T/nofp.fxt" >"$T/nofp.folded"
    share=$(reach_share "$T/nofp.folded")
    check "C++ without frame pointers, CFI: >= 90% of stacks reach main (got $share%)" \
      [ "$share" -ge 90 ]
    check "C++ names are demangled" grep -q '(anonymous namespace)::sort_and_count(' "$T/nofp.folded"
    ASAN_OPTIONS=detect_leaks=0 "$ZXS" record -q --unwind fp -o "$T/nofp-fp.fxt" -- "$NOFP" 0.5 \
      >/dev/null 2>&1
    "$ZXS" report -f folded "$T/nofp-fp.fxt" >"$T/nofp-fp.folded"
    echo "C++ without frame pointers: $share% reach main with CFI, $(reach_share "$T/nofp-fp.folded")% with frame pointers"
    # ZXSAMPLER_UNWIND sets the default, --unwind overrides it, a bad value is refused.
    ZXSAMPLER_UNWIND=fp ASAN_OPTIONS=detect_leaks=0 "$ZXS" record -o "$T/env.fxt" -- true \
      >/dev/null 2>"$T/env.err"
    check "ZXSAMPLER_UNWIND=fp: frame pointers" grep -q 'unwound with frame pointers' "$T/env.err"
    ZXSAMPLER_UNWIND=fp ASAN_OPTIONS=detect_leaks=0 "$ZXS" record --unwind dwarf -o "$T/env.fxt" \
      -- true >/dev/null 2>"$T/env.err"
    check "--unwind dwarf over ZXSAMPLER_UNWIND=fp: CFI" grep -q 'unwound with CFI' "$T/env.err"
    ZXSAMPLER_UNWIND=bogus "$ZXS" record -o "$T/env.fxt" -- true >/dev/null 2>"$T/env.err"
    status=$?
    check "ZXSAMPLER_UNWIND=bogus: exit 2 and a message (got $status)" \
      sh -c "[ $status -eq 2 ] && grep -q 'ZXSAMPLER_UNWIND takes fp or dwarf' '$T/env.err'"
  else
    echo "SKIP: this build has no CFI unwinder ($(cat "$T/nofp.err"))"
  fi
fi
record_run deep -- "$TARGET" deep 0.3
"$ZXS" report -f folded --no-process-frame "$T/deep.fxt" >"$T/deep.folded"
check "200 calls deep: the stacks are marked [truncated]" grep -q '^\[truncated\];' "$T/deep.folded"
check "200 calls deep: and counted on stderr" grep -qE 'stacks? cut at the stack copy or 128 frames' "$T/deep.err"
# Frames are PCs: calls inlined at one (labelled "(inlined)") are not among the 128.
check "200 calls deep: 128 frames kept (a stack of ${depth:-?})" \
  awk -F';' '{ n = 0; for (i = 1; i <= NF; i++) if ($i !~ / \(inlined\)( [0-9]+)?$/) n++
               if (n > max) max = n } END { exit max != 128 }' "$T/deep.folded"

# --- 10. Names from separate debug files --------------------------------------------------------

# A stripped program whose names live in a debug file holding only its symbol table (no DWARF):
# found through .gnu_debuglink next to it, and by build ID under ZXSAMPLER_DEBUG_DIR.
if command -v cc >/dev/null && command -v objcopy >/dev/null && command -v strip >/dev/null; then
  mkdir -p "$T/dbg/bin"
  printf '%s\n' 'static volatile unsigned long sink;' \
    '__attribute__((noinline)) static void stripped_hot(void) {' \
    '  for (long i = 0; i < 200000000; i++) sink += (unsigned long)i; }' \
    'int main(void) { stripped_hot(); return 0; }' >"$T/dbg/hot.c"
  cc -O1 -o "$T/dbg/bin/hot" "$T/dbg/hot.c" &&
    objcopy --only-keep-debug "$T/dbg/bin/hot" "$T/dbg/hot.full" &&
    strip --strip-debug -o "$T/dbg/bin/hot.debug" "$T/dbg/hot.full" &&
    strip --strip-all "$T/dbg/bin/hot" &&
    objcopy --add-gnu-debuglink="$T/dbg/bin/hot.debug" "$T/dbg/bin/hot"
  record_run stripped -- "$T/dbg/bin/hot"
  check "a stripped program: named from its .gnu_debuglink file" grep -qw stripped_hot "$T/stripped.txt"
  bid=$(readelf -n "$T/dbg/bin/hot" | sed -n 's/.*Build ID: //p')
  mkdir -p "$T/dbg/root/.build-id/${bid:0:2}"
  mv "$T/dbg/bin/hot.debug" "$T/dbg/root/.build-id/${bid:0:2}/${bid:2}.debug"
  "$ZXS" report "$T/stripped.fxt" >"$T/stripped-none.txt" 2>&1
  check "a stripped program without its debug file: unnamed, grouped" grep -q '\[hot\]' "$T/stripped-none.txt"
  ZXSAMPLER_DEBUG_DIR="$T/dbg/root" "$ZXS" report "$T/stripped.fxt" >"$T/stripped-id.txt" 2>&1
  check "a stripped program: named from DEBUG/.build-id/xx/rest.debug" grep -qw stripped_hot "$T/stripped-id.txt"
fi

# A debuginfod server on 127.0.0.1 over a directory holding a stripped program's debug file:
# with DEBUGINFOD_URLS set, report names the program's functions (libdw's debuginfod client).
if command -v debuginfod >/dev/null && command -v cc >/dev/null; then
  mkdir -p "$T/di/srv" "$T/di/bin"
  cc -O1 -g -o "$T/di/bin/hot" "$T/dbg/hot.c" &&
    objcopy --only-keep-debug "$T/di/bin/hot" "$T/di/srv/hot.debug" &&
    strip --strip-all "$T/di/bin/hot"
  port=$((20000 + RANDOM % 20000))
  debuginfod -p "$port" -F "$T/di/srv" -d "$T/di/index.sqlite" >"$T/di/log" 2>&1 &
  DI=$!
  for _ in $(seq 1 100); do  # until it answers and has indexed the directory
    grep -q 'fts traversed' "$T/di/log" 2>/dev/null && break
    sleep 0.1
  done
  record_run di -- "$T/di/bin/hot"
  check "debuginfod: without DEBUGINFOD_URLS the stripped program is unnamed" grep -q '\[hot\]' "$T/di.txt"
  DEBUGINFOD_URLS="http://127.0.0.1:$port" DEBUGINFOD_CACHE_PATH="$T/di/cache" \
    "$ZXS" report "$T/di.fxt" >"$T/di-named.txt" 2>&1
  check "debuginfod: with DEBUGINFOD_URLS its functions are named ($(sed -n 6p "$T/di-named.txt"))" \
    grep -qw stripped_hot "$T/di-named.txt"
  kill "$DI" 2>/dev/null
  wait "$DI" 2>/dev/null
else
  echo "SKIP: debuginfod not installed"
fi

# --- 11. A long run with a small buffer ----------------------------------------------------------

# 8 s of CPU at 4000 samples/s with 1 MiB rings: the recording covers the whole
# run, and whatever was lost is said on stderr and in the report's header.
record_run long -b 1 -F 4000 -- "$TARGET" spin 8
duration=$(sed -nE 's/.*Duration: ([0-9]+)\.[0-9]+ s.*/\1/p' "$T/long.txt")
check "a long run: the profile covers it to the end (duration ${duration:-?} s)" [ "${duration:-0}" -ge 7 ]
samples=$(samples_of long)
check "a long run: samples were kept (${samples:-0})" [ "${samples:-0}" -gt 1000 ]
if grep -q 'samples lost' "$T/long.err"; then
  check "a long run: a loss on stderr is in the report's header too" grep -q 'Lost: ' "$T/long.txt"
else
  check "a long run: no loss on stderr, none in the header" sh -c "! grep -q 'Lost: ' '$T/long.txt'"
fi
echo "long run: $(sed -n 2,3p "$T/long.txt" | tr '\n' ' ') $(tr '\n' ' ' <"$T/long.err")"
# The target reads its CPU clock all the time: through the vDSO, which has no file.
check "the vDSO is named (its image travels in the trace)" \
  sh -c "'$ZXS' report -f folded '$T/long.fxt' | grep -q '__vdso_clock_gettime'"

# --- 12. Where each thread's time went (RFC-0084) ------------------------------------------------

# The report's runtime row of thread NAME: "CPU QUEUE FAULTS LOCKS" (ms, "-" not measured).
runtime_of() {  # runtime_of REPORT NAME
  awk -v name="$2" '$1 == name && $2 == "(tid" { print $(NF-3), $(NF-2), $(NF-1), $NF; exit }' "$1"
}
# The target's own measure of thread NAME: "CPU_MS WALL_MS".
own_of() { awk -v name="$2" '$1 == name { print $3, $4; exit }' "$1"; }
# within A B PERCENT SLACK_MS: |A - B| <= B * PERCENT / 100 + SLACK_MS
within() { awk -v a="$1" -v b="$2" -v p="$3" -v s="$4" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "-" && d <= b * p / 100 + s) }'; }
above() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "-" && a + 0 > b + 0) }'; }

# By default only cpu and queue time (free to the program); the fault and lock events are asked.
record_run runtime-default -- "$TARGET" runtime 0.1
read -r cpu queue faults locks <<<"$(runtime_of "$T/runtime-default.txt" toucher)"
check "runtime by default: cpu and queue, not faults or locks ($cpu $queue $faults $locks)" \
  sh -c "[ '$cpu' != - ] && [ '$queue' != - ] && [ '$faults' = - ] && [ '$locks' = - ]"
check "runtime by default: the report says the events were not asked for" \
  grep -q '^Not measured: .*not asked (--runtime-events' "$T/runtime-default.txt"
record_run runtime --runtime-events -- "$TARGET" runtime 0.3
sed -n '/^Task runtime/,/^$/p' "$T/runtime.txt"
cat "$T/runtime.out"
check "runtime: the report has the breakdown" grep -q '^Task runtime (ms): ' "$T/runtime.txt"
check "runtime: a row for the process" grep -qE '^ record_target \(pid [0-9]+\) ' "$T/runtime.txt"
read -r cpu queue faults locks <<<"$(runtime_of "$T/runtime.txt" spinner)"
read -r own_cpu own_wall <<<"$(own_of "$T/runtime.out" spinner)"
check "runtime: the spinner's cpu_time is its CPU ($cpu ms; it measured $own_cpu)" \
  within "$cpu" "$own_cpu" 5 5
# (unprivileged, the page-fault rings may find no locked memory left after the sampling rings:
# then the report says page faults were not measured, and why)
faults_why() { grep -q '^Not measured: .*page_fault_time' "$T/runtime.txt"; }
if [ "$faults" = - ] && [ "$(id -u)" -ne 0 ]; then
  check "runtime: page faults not measured, and the report says why" faults_why
else
  check "runtime: the spinner takes no page-fault time ($faults ms)" within "$faults" 0 0 1
fi
spinner_locks=$locks
read -r cpu queue faults locks <<<"$(runtime_of "$T/runtime.txt" toucher)"
if [ "$faults" != - ] || [ "$(id -u)" -eq 0 ]; then
  check "runtime: the first-touch thread's page_fault_time > 5 ms ($faults ms)" above "$faults" 5
fi
for n in 1 2; do
  read -r cpu queue faults locks <<<"$(runtime_of "$T/runtime.txt" "pinned-$n")"
  read -r own_cpu own_wall <<<"$(own_of "$T/runtime.out" "pinned-$n")"
  waited=$(awk -v w="$own_wall" -v c="$own_cpu" 'BEGIN { printf "%.3f", w - c }')
  check "runtime: pinned-$n's queue_time is wall - cpu ($queue ms; it measured $waited)" \
    within "$queue" "$waited" 10 10
done
mapper_locks=$(awk '$1 ~ /^mapper-/ && $2 == "(tid" { if ($NF == "-") m = "-"; else s += $NF }
                    END { print (m == "-" ? "-" : s + 0) }' "$T/runtime.txt")
if [ "$mapper_locks" != "-" ]; then
  check "runtime: mmap/munmap threads contend on the address-space lock ($mapper_locks ms)" \
    above "$mapper_locks" 0
  # (next to nothing: under AddressSanitizer its runtime's own mmap calls meet the mappers'
  # mmap_lock, 15 ms once against their hundreds)
  check "runtime: the spinner waits on almost no kernel lock ($spinner_locks of $mapper_locks ms)" \
    awk -v s="$spinner_locks" -v m="$mapper_locks" 'BEGIN { exit !(s != "-" && s <= 1 + m / 20) }'
else
  check "runtime: lock_contention_time not measured, and the report says why" \
    grep -q '^Not measured: .*lock_contention_time' "$T/runtime.txt"
fi
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  if [ -e /sys/kernel/tracing/events/lock/contention_begin ] ||
    [ -e /sys/kernel/debug/tracing/events/lock/contention_begin ]; then
    check "runtime as root: lock_contention_time measured" [ "$mapper_locks" != "-" ]
  else
    echo "SKIP: runtime as root: lock time needs tracefs (mount -t tracefs nodev /sys/kernel/tracing)"
  fi
  nobody_copies
  setpriv --reuid=65534 --regid=65534 --clear-groups "$T/nobody/zxsampler" record -q \
    --runtime-events -o "$T/nobody/rt.fxt" -- "$T/nobody/target" runtime 0.1 >/dev/null 2>&1
  "$ZXS" report "$T/nobody/rt.fxt" >"$T/nobody-rt.txt" 2>&1
  read -r cpu queue faults locks <<<"$(runtime_of "$T/nobody-rt.txt" toucher)"
  check "unprivileged: cpu and queue time measured ($cpu $queue)" \
    sh -c "[ '$cpu' != - ] && [ '$queue' != - ]"
  # (page faults need a ring of locked memory, which the sampling rings may have taken)
  check "unprivileged: page faults measured, or the report says why not ($faults)" \
    sh -c "[ '$faults' != - ] || grep -q '^Not measured: .*page_fault_time' '$T/nobody-rt.txt'"
  check "unprivileged: lock_contention_time shown as not measured ($locks), and why" \
    sh -c "[ '$locks' = - ] && grep -q '^Not measured: .*lock_contention_time' '$T/nobody-rt.txt'"
fi
"$ZXS" report -f pprof -o "$T/runtime.pb.gz" "$T/runtime.fxt"
check "runtime: pprof export still works" [ -s "$T/runtime.pb.gz" ]

finish
