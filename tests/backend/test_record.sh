#!/usr/bin/env bash
# `zxsampler record` and `zxsampler report` as a user runs them.
#
#   test_record.sh ZXSAMPLER WORKLOAD
#
# Builds nothing: meson passes the built tools/zxsampler and examples/workload. Checks:
#   - record -- workload 1: exit code 0, a profile written;
#   - report: parse_input, update_model and render_output listed, parse_input first (the
#     workload spends 3/6, 2/6 and 1/6 of its time in them);
#   - conversions to pprof, folded, svg, markup and fxt: non-empty, each in its format (folded
#     lines end with counts that add up to the report's sample count);
#   - --help of each command exits 0; bad arguments exit 2 with a message;
#   - unreadable, garbage, empty and truncated profiles exit 1 with an error naming the
#     problem, and nothing crashes;
#   - a program killed by SIGTERM still leaves a profile, and so does one whose recorder was sent
#     SIGTERM (which it passes on);
#   - the program keeps its nice while the recorder, as root, drains at nice -10;
#   - as nobody under an 8 MiB locked-memory limit, no CPU's ring is starved by the first's, and
#     the default stack copy shrinks so that a ring holds 256 samples (not one given).
set -u

if [ $# -ne 2 ]; then
  echo "usage: $0 ZXSAMPLER WORKLOAD" >&2
  exit 2
fi
ZXS=$1
WORKLOAD=$2

# In a sanitizer build the preload library carries the sanitizer runtime into the (plain)
# workload, where it cannot be first in the library list; let it run there anyway.
if ldd "$ZXS" 2>/dev/null | grep -q libasan; then
  export ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
fi

# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"

# No crash: an exit status from a signal, or a sanitizer report, in what a command printed.
crashed() {  # crashed STATUS STDERR-FILE
  [ "$1" -ge 128 ] || grep -qE 'AddressSanitizer|runtime error|Segmentation|Aborted|core dumped' "$2"
}

# --- record ---------------------------------------------------------------------------------

"$ZXS" record -o "$T/T.fxt" -- "$WORKLOAD" 1 >"$T/record.out" 2>"$T/record.err"
status=$?
check "record exits 0 (got $status; $(tr '\n' ' ' <"$T/record.err"))" [ "$status" -eq 0 ]
check "the workload ran to its end" grep -q "workload: done" "$T/record.out"
check "record says where the profile went" grep -q "written to $T/T.fxt" "$T/record.err"
check "record wrote a non-empty profile" [ -s "$T/T.fxt" ]
if [ ! -s "$T/T.fxt" ]; then
  echo "no profile: nothing else to check" >&2
  exit 1
fi

# --- report ---------------------------------------------------------------------------------

"$ZXS" report "$T/T.fxt" >"$T/top.txt" 2>"$T/top.err"
status=$?
check "report exits 0 (got $status)" [ "$status" -eq 0 ]
for f in parse_input update_model render_output; do
  check "report lists $f" grep -qw "$f" "$T/top.txt"
done
first=$(grep -owE 'parse_input|update_model|render_output' "$T/top.txt" | head -n 1)
check "parse_input comes first in the report (first: '$first')" [ "$first" = parse_input ]
samples=$(sed -nE 's/^Samples: ([0-9]+).*/\1/p' "$T/top.txt" | head -n 1)
check "the report gives a sample count" [ -n "$samples" ]
cat "$T/top.txt"

# --- conversions ----------------------------------------------------------------------------

for fmt in pprof folded svg markup fxt; do
  "$ZXS" report -f "$fmt" -o "$T/out.$fmt" "$T/T.fxt" 2>"$T/$fmt.err"
  status=$?
  check "report -f $fmt exits 0 (got $status)" [ "$status" -eq 0 ]
  check "report -f $fmt writes a non-empty file" [ -s "$T/out.$fmt" ]
done
# pprof: gzip-compressed.
check "pprof output is gzip" [ "$(head -c 2 "$T/out.pprof" | od -An -tx1 | tr -d ' \n')" = 1f8b ]
# folded: "frame;frame;... count" per line, counts adding up to the report's samples.
check "every folded line ends with a count" \
  awk 'NF < 2 || $NF !~ /^[0-9]+$/ { bad = 1 } END { exit bad || NR == 0 }' "$T/out.folded"
total=$(awk '{ s += $NF } END { print s + 0 }' "$T/out.folded")
check "folded counts add up to the report's $samples samples (got $total)" [ "$total" = "$samples" ]
check "folded stacks end in the workload's functions" grep -qE ';?parse_input [0-9]+$' "$T/out.folded"
check "svg output is an SVG document" grep -q '<svg' "$T/out.svg"
check "svg output names parse_input" grep -q 'parse_input' "$T/out.svg"
check "markup output starts with a reset" grep -q '{{{reset}}}' "$T/out.markup"
check "markup output has modules and backtraces" \
  sh -c "grep -q '{{{module:' '$T/out.markup' && grep -q '{{{bt:0:' '$T/out.markup'"
"$ZXS" report "$T/out.fxt" >"$T/top2.txt" 2>/dev/null
check "an fxt re-export reports the same as the original" cmp -s "$T/top.txt" "$T/top2.txt"
# Recording straight into another format.
"$ZXS" record -f folded -o "$T/direct.folded" -- "$WORKLOAD" 0.3 >/dev/null 2>"$T/direct.err"
status=$?
check "record -f folded exits 0 (got $status)" [ "$status" -eq 0 ]
check "record -f folded writes folded stacks" grep -qE ' [0-9]+$' "$T/direct.folded"
# The recorder drains at a higher priority where it may (root); the program keeps its own nice.
# Field 19 of /proc/PID/stat is the nice of the process's first thread, the recorder's drain.
own_nice=$(cut -d' ' -f19 /proc/self/stat)
"$ZXS" record -o "$T/nice.fxt" -- sh -c 'sleep 0.3; echo "$(cut -d" " -f19 /proc/$$/stat) $(cut -d" " -f19 /proc/$PPID/stat)"' \
  >"$T/nice.out" 2>/dev/null
read -r program_nice recorder_nice <"$T/nice.out"
check "the program runs at the nice it was started with ($own_nice; got '${program_nice:-}')" \
  [ "${program_nice:-x}" = "$own_nice" ]
if [ "$(id -u)" = 0 ] && [ "$own_nice" -gt -10 ]; then
  check "as root, the recorder drains at nice -10 (got '${recorder_nice:-}')" [ "${recorder_nice:-x}" = -10 ]
fi
# Unprivileged, the locked-memory allowance cuts the rings: every CPU gets its share (the first
# CPU's ring took 8 MiB and left the second 256 KiB, 8 samples of the default stack copy).
# Run as nobody where nobody can reach the build (not under a 0700 home).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
  setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$ZXS" 2>/dev/null &&
  setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$WORKLOAD" 2>/dev/null; then
  mkdir -p "$T/nobody" && chmod 0777 "$T" "$T/nobody"
  (ulimit -l 8192 && setpriv --reuid=65534 --regid=65534 --clear-groups \
    "$ZXS" record -F 1000 -o "$T/nobody/p.fxt" -- "$WORKLOAD" 0.2) >/dev/null 2>"$T/nobody.err"
  cut_kib=$(sed -n 's/.*the rings were cut to \([0-9]*\) KiB a CPU.*/\1/p' "$T/nobody.err" | head -1)
  cpus=$(getconf _NPROCESSORS_CONF)
  if [ -n "$cut_kib" ]; then
    check "as nobody, the rings share the allowance ($cpus x $cut_kib KiB >= 1 MiB)" \
      [ $((cut_kib * cpus)) -ge 1024 ]
    # With CFI the default copy is 32 KiB: a cut ring holding fewer than 256 of them cuts the
    # copy too (to 8 KiB at least), unless --stack-copy chose it.
    if grep -q "unwound with CFI" "$T/nobody.err" && [ $((cut_kib * 1024 / 33280)) -lt 256 ]; then
      copy_kib=$(sed -n 's/.*and the stack copy to \([0-9]*\) KiB a sample.*/\1/p' "$T/nobody.err")
      check "as nobody, the stack copy follows the ring (${copy_kib:-not} cut: $(tr '\n' ' ' <"$T/nobody.err"))" \
        [ -n "$copy_kib" ] && [ "$copy_kib" -ge 8 ] && [ "$copy_kib" -lt 32 ] &&
        { [ "$copy_kib" -eq 8 ] || [ $((cut_kib / (copy_kib + 1))) -ge 256 ]; }
      (ulimit -l 8192 && setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$ZXS" record -F 1000 --stack-copy 32768 -o "$T/nobody/p.fxt" -- "$WORKLOAD" 0.2) \
        >/dev/null 2>"$T/nobody-fixed.err"
      check "as nobody, --stack-copy is kept ($(tr '\n' ' ' <"$T/nobody-fixed.err"))" \
        grep -q "the rings were cut to [0-9]* KiB a CPU (of the [0-9]* KiB asked for) by" \
        "$T/nobody-fixed.err"
    fi
  else
    check "as nobody, a profile was written ($(tr '\n' ' ' <"$T/nobody.err"))" \
      grep -q "written to" "$T/nobody.err"
  fi
fi

# --- help and bad arguments -----------------------------------------------------------------

for args in "--help" "record --help" "report --help"; do
  # shellcheck disable=SC2086
  "$ZXS" $args >"$T/help.out" 2>"$T/help.err"
  status=$?
  check "zxsampler $args exits 0 (got $status)" [ "$status" -eq 0 ]
  check "zxsampler $args prints usage" grep -q '^usage: zxsampler' "$T/help.out"
done

version=$("$ZXS" --version 2>&1)
check "zxsampler --version exits 0 and prints the version (got '$version')" \
  grep -qE '^zxsampler [0-9]+\.[0-9]+\.[0-9]+$' <<<"$version"

bad_args=(
  ""
  "frobnicate"
  "record"
  "record -p 5 -- true"
  "record -p x -- true"
  "record -f nope -- true"
  "record -b 0 -- true"
  "record -s NOPE -- true"
  "record --period 5 -- true"
  "record -F 0 -- true"
  "record -p 1 -- true"
  "record -d 3 -- true"
  "record --bogus -- true"
  "report"
  "report a b"
  "report -f nope $T/T.fxt"
  "report --bogus $T/T.fxt"
)
for args in "${bad_args[@]}"; do
  # shellcheck disable=SC2086
  "$ZXS" $args >"$T/bad.out" 2>"$T/bad.err"
  status=$?
  check "zxsampler $args exits 2 (got $status)" [ "$status" -eq 2 ]
  check "zxsampler $args explains itself on stderr" [ -s "$T/bad.err" ]
  check "zxsampler $args prints nothing on stdout" [ ! -s "$T/bad.out" ]
done

# --- unreadable, garbage, truncated profiles --------------------------------------------------

head -c 4096 /dev/urandom >"$T/garbage.fxt"
: >"$T/empty.fxt"
size=$(stat -c %s "$T/T.fxt")
head -c $((size - 8)) "$T/T.fxt" >"$T/short.fxt"   # the last record cut
head -c 1001 "$T/T.fxt" >"$T/odd.fxt"               # cut inside a word
mkdir "$T/dir.fxt"
# FILE|what the message must say (an extended regular expression)
bad_files=(
  "$T/missing.fxt|missing.fxt.*(No such file|not found)"
  "$T/dir.fxt|dir.fxt.*directory"
  "$T/garbage.fxt|magic"
  "$T/empty.fxt|magic|empty"
  "$T/short.fxt|byte [0-9]+.*(past the end|truncated)"
  "$T/odd.fxt|byte [0-9]+.*(past the end|truncated|ends inside)"
)
if [ "$(id -u)" -ne 0 ]; then  # root reads anything
  cp "$T/T.fxt" "$T/noaccess.fxt"
  chmod 000 "$T/noaccess.fxt"
  bad_files+=("$T/noaccess.fxt|noaccess.fxt.*(Permission denied|permission)")
fi
for entry in "${bad_files[@]}"; do
  file=${entry%%|*}
  pattern=${entry#*|}
  for fmt in top folded; do
    "$ZXS" report -f "$fmt" -o "$T/out.$fmt" "$file" >"$T/badfile.out" 2>"$T/badfile.err"
    status=$?
    name=$(basename "$file")
    check "report -f $fmt $name exits 1 (got $status)" [ "$status" -eq 1 ]
    check "report -f $fmt $name does not crash" sh -c "! { [ $status -ge 128 ] || grep -qE 'AddressSanitizer|runtime error|Segmentation|Aborted' '$T/badfile.err'; }"
    check "report -f $fmt $name names the problem ('$(head -n 1 "$T/badfile.err")')" \
      grep -qE "^zxsampler: .*($pattern)" "$T/badfile.err"
  done
done

# --- SIGTERM --------------------------------------------------------------------------------

# The workload would run for a minute. SIGTERM goes to the program (then to the recorder, which
# passes it on): each time the profile must be written and the recorder must report the death
# by SIGTERM.
hz=$(getconf CLK_TCK)
for target in program recorder; do
  "$ZXS" record -o "$T/term.fxt" -- "$WORKLOAD" 60 >"$T/term.out" 2>"$T/term.err" &
  BG=$!
  child=""
  for _ in $(seq 1 3000); do
    if [ -z "$child" ] && [ -r "/proc/$BG/task/$BG/children" ]; then
      child=$(tr -d ' \n' <"/proc/$BG/task/$BG/children")
    fi
    if [ -n "$child" ] && [ "$(cat "/proc/$child/comm" 2>/dev/null)" = workload ]; then break; fi
    sleep 0.01
  done
  check "the recorded workload started ($target)" [ -n "$child" ]
  # Let it collect some samples: until it has run 200 ms of CPU (utime + stime, in clock ticks),
  # however long that takes on a loaded machine.
  for _ in $(seq 1 3000); do
    [ -n "$child" ] || break
    ran=$(awk '{ print $14 + $15 }' "/proc/$child/stat" 2>/dev/null)
    [ "${ran:-0}" -ge "$((hz / 5))" ] && break
    sleep 0.01
  done
  if [ "$target" = program ] && [ -n "$child" ]; then kill -TERM "$child"; fi
  if [ "$target" = recorder ]; then kill -TERM "$BG"; fi
  for _ in $(seq 1 3000); do
    kill -0 "$BG" 2>/dev/null || break
    sleep 0.01
  done
  if kill -0 "$BG" 2>/dev/null; then
    fail "zxsampler record did not end after SIGTERM to the $target"
    kill -KILL "$child" 2>/dev/null
  fi
  wait "$BG"
  status=$?
  BG=""
  check "SIGTERM to the $target: record reports it as 143 (got $status; $(tr '\n' ' ' <"$T/term.err"))" \
    [ "$status" -eq 143 ]
  check "SIGTERM to the $target: a profile was written" [ -s "$T/term.fxt" ]
  "$ZXS" report "$T/term.fxt" >"$T/term.txt" 2>&1
  status=$?
  check "SIGTERM to the $target: the profile reads back (got $status)" [ "$status" -eq 0 ]
  check "SIGTERM to the $target: the profile has the workload's functions" \
    grep -qw parse_input "$T/term.txt"
  rm -f "$T/term.fxt"
done


# --- outputs --------------------------------------------------------------------------------

# Never a device, FIFO or directory; an empty name refused; all before the program runs; a
# symlink's target file replaced, the link kept; an old profile kept when none is written.
mkfifo "$T/fifo"
"$ZXS" record -o "$T/fifo" -- sh -c "touch '$T/ran'" >/dev/null 2>"$T/out.err"
check "-o FIFO: refused (got $?)" [ ! -e "$T/ran" ]
check "-o FIFO: still a FIFO, and said" sh -c "test -p '$T/fifo' && grep -q FIFO '$T/out.err'"
"$ZXS" record -o '' -- sh -c "touch '$T/ran'" >/dev/null 2>&1
check "-o '': refused before the program runs" [ ! -e "$T/ran" ]
"$ZXS" record -o "$T/no-such-dir/p.fxt" -- sh -c "touch '$T/ran'" >/dev/null 2>&1
check "-o in a missing folder: refused before the program runs" [ ! -e "$T/ran" ]
ln -s /dev/null "$T/null-link"
"$ZXS" record -o "$T/null-link" -- true >/dev/null 2>"$T/out.err"
check "-o a link to a device: refused, the link kept" sh -c "test -L '$T/null-link' && test -c /dev/null"
echo old >"$T/real.fxt" && ln -s real.fxt "$T/link.fxt"
"$ZXS" record -q -o "$T/link.fxt" -- "$WORKLOAD" 1 >/dev/null 2>&1
check "-o a link to a file: the file gets the profile, the link stays" \
  sh -c "test -L '$T/link.fxt' && '$ZXS' report '$T/real.fxt' >/dev/null 2>&1"
echo old >"$T/old.fxt"
"$ZXS" record -o "$T/old.fxt" -- "$T/no-such-program" >/dev/null 2>&1
check "a program that cannot start: the old profile is kept" grep -qx old "$T/old.fxt"
"$ZXS" report /dev/zero >/dev/null 2>"$T/out.err"
check "report /dev/zero: refused with a reason" sh -c "grep -q 'not a regular file' '$T/out.err'"
# A pipe is spooled to an unlinked file in TMPDIR and mapped, as a file is: the same report, no
# file left behind, and a TMPDIR it cannot use said.
mkdir -p "$T/spool"
"$ZXS" report "$T/real.fxt" >"$T/from-file.txt" 2>&1
cat "$T/real.fxt" | TMPDIR="$T/spool" "$ZXS" report /dev/stdin >"$T/from-pipe.txt" 2>&1
check "report from a pipe: the same as from the file" cmp -s "$T/from-file.txt" "$T/from-pipe.txt"
check "report from a pipe: nothing left in TMPDIR" [ -z "$(ls -A "$T/spool")" ]
cat "$T/real.fxt" | TMPDIR="$T/no-such-dir" "$ZXS" report /dev/stdin >/dev/null 2>"$T/out.err"
check "report from a pipe, TMPDIR unusable: refused with a reason" grep -q "cannot make a file in" "$T/out.err"

# --- programs that cannot run: the shell's statuses -------------------------------------------

printf 'echo hi\n' >"$T/noexec" && chmod 644 "$T/noexec" && mkdir -p "$T/adir"
for prog in "$T/noexec" "$T/adir" "$T/missing"; do
  bash -c "$prog" >/dev/null 2>&1
  expected=$?
  "$ZXS" record -o "$T/x.fxt" -- "$prog" >/dev/null 2>&1
  got=$?
  check "record $(basename "$prog"): the shell's status ($expected, got $got)" [ "$got" -eq "$expected" ]
done

# --- unprivileged defaults ------------------------------------------------------------------

# Where the locked-memory limit cuts the rings, the reader is woken for the rings it got, and what
# is said names that limit (never "a larger --buffer").
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  mkdir -p "$T/nobody" && chmod 777 "$T" "$T/nobody"
  cp "$ZXS" "$T/nobody/zxsampler" && cp "$WORKLOAD" "$T/nobody/workload"
  chmod 755 "$T/nobody/zxsampler" "$T/nobody/workload"
  setpriv --reuid=65534 --regid=65534 --clear-groups "$T/nobody/zxsampler" record \
    -o "$T/nobody/n.fxt" -- "$T/nobody/workload" 1 >/dev/null 2>"$T/nobody.err"
  check "unprivileged: records ($(tr '\n' ' ' <"$T/nobody.err"))" [ -s "$T/nobody/n.fxt" ]
  if grep -q "rings were cut" "$T/nobody.err"; then
    check "unprivileged: the cut names the limit" grep -q perf_event_mlock_kb "$T/nobody.err"
    check "unprivileged: no advice of a larger --buffer" \
      sh -c "! grep -q 'larger --buffer' '$T/nobody.err'"
  fi
fi

finish
