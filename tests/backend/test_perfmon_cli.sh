#!/usr/bin/env bash
# `zxsampler perfmon` as a user runs it.
#
#   test_perfmon_cli.sh ZXSAMPLER_PERFMON PERFMON_WORKLOAD ZXSAMPLER
#
# Checks:
#   - --help exits 0; bad arguments exit 2 with a message; a program that cannot run exits 127;
#   - one event twice (two spellings, two modes :u/:k, two rates) exits 2 with a message that
#     names both items and, for two modes, says an event is counted once per run, in one mode;
#   - as nobody (setpriv, when run as root with perf_event_paranoid > 0): exit 1 and a message
#     naming perf_event_paranoid;
#   - stat: a workload touching N fresh pages; the page faults counted on every CPU are at
#     least N and at most what `perf stat -a -e page-faults` counted around the same run (its
#     window holds ours; how close they are depends on what else faults: printed, not
#     asserted; other processes fault too, so the count has no upper bound of its own); -x output
#     per CPU adds up; the program's exit status is passed on;
#   - record page-faults@1: the workload's own samples are N within 2% (one per fault, over
#     the workload touching no page);
#   - record cpu-clock: the workload's samples land in its hot function (report's first row);
#     pprof and top conversions.
# Without the privilege to monitor every CPU (not root, perf_event_paranoid > 0) everything
# past the usage checks is skipped (exit 77) and says why; without perf, the perf comparison.
set -u

if [ $# -ne 2 ]; then
  echo "usage: $0 ZXSAMPLER PERFMON_WORKLOAD" >&2
  exit 2
fi
ZXS=$1
WL=$2
pm() { "$ZXS" perfmon "$@"; }
N=50000      # pages for stat (200 MiB with 4 KiB pages)
NREC=20000   # pages for record page-faults@1

# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"
within() {  # within A B PERCENT: |A - B| <= PERCENT% of B
  awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d * 100 <= p * b) }'
}

# --- Usage ----------------------------------------------------------------------------------

pm --help >"$T/help.out" 2>&1
check "--help exits 0" [ $? -eq 0 ]
check "--help lists stat and record" grep -q "record" "$T/help.out"
pm stat --help >/dev/null 2>&1
check "stat --help exits 0" [ $? -eq 0 ]
pm record --help >/dev/null 2>&1
check "record --help exits 0" [ $? -eq 0 ]
pm bogus >/dev/null 2>"$T/err"
check "an unknown command exits 2" [ $? -eq 2 ]
pm stat -e no-such-event -- true >/dev/null 2>"$T/err"
check "an unknown event exits 2" [ $? -eq 2 ]
check "... and names it" grep -q "unknown event 'no-such-event'" "$T/err"
pm stat -e page-faults@10 -- true >/dev/null 2>"$T/err"
check "a rate in stat exits 2" [ $? -eq 2 ]
pm record -e page-faults -- true >/dev/null 2>"$T/err"
check "record without EVENT@RATE exits 2" [ $? -eq 2 ]
pm record -e page-faults@0 -- true >/dev/null 2>"$T/err"
check "a rate of 0 exits 2" [ $? -eq 2 ]
pm stat -e page-faults,faults -- true >/dev/null 2>"$T/err"
check "an event twice exits 2" [ $? -eq 2 ]
check "... and names both spellings of it ($(head -1 "$T/err"))" \
  grep -q "'page-faults' and 'faults' are one event (misc:page_faults)" "$T/err"
pm stat -e page-faults:u,page-faults:u -- true >/dev/null 2>"$T/err"
check "the same item twice exits 2" [ $? -eq 2 ]
check "... and says it was given twice" grep -q "'page-faults:u' given twice" "$T/err"
# One event in two modes: the controller takes an event once per run (its records name the
# event, not the mode), so the tool refuses, says why, and does not call it the same item twice.
pm stat -e page-faults:u,page-faults:k -- true >/dev/null 2>"$T/err"
check "one event in two modes exits 2" [ $? -eq 2 ]
check "... and names both modes ($(head -1 "$T/err"))" \
  grep -q "'page-faults:u' and 'page-faults:k' are one event (misc:page_faults) in different modes" \
  "$T/err"
check "... says an event is counted once per run, in one mode" \
  grep -q "counts an event once per run, in one mode" "$T/err"
check "... and offers the event for both modes" grep -q "count 'page-faults' for both modes" "$T/err"
check "... and does not say 'given twice'" sh -c "! grep -q 'given twice' '$T/err'"
pm record -e cpu-clock@1000,cpu-clock@2000 -- true >/dev/null 2>"$T/err"
check "one event at two rates exits 2" [ $? -eq 2 ]
check "... and names both rates" grep -q "'cpu-clock@1000' and 'cpu-clock@2000' are one event" "$T/err"

# --- Privilege --------------------------------------------------------------------------------

paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 2)
pm stat -e cpu-clock -- true >"$T/probe.out" 2>"$T/probe.err"
probe=$?
if [ "$probe" -ne 0 ]; then
  check "unprivileged: exit 1 (got $probe)" [ "$probe" -eq 1 ]
  check "unprivileged: the message names perf_event_paranoid" \
    grep -q "perf_event_paranoid" "$T/probe.err"
  echo "SKIP: this process may not monitor every CPU (euid $(id -u), perf_event_paranoid" \
       "$paranoid): $(cat "$T/probe.err")"
  [ "$failures" -eq 0 ] || { finish; exit 1; }
  exit 77
fi
if [ "$(id -u)" -eq 0 ] && [ "$paranoid" -gt 0 ] && [ -x /usr/bin/setpriv ]; then
  cp "$ZXS" "$T/zxsampler" && chmod 755 "$T/zxsampler"
  # (a copy nobody can reach: the build tree may not be readable to it)
  setpriv --reuid=65534 --regid=65534 --clear-groups "$T/zxsampler" perfmon stat -e cpu-clock -- true \
    >/dev/null 2>"$T/denied.err"
  status=$?
  if [ "$status" -eq 127 ] || [ "$status" -eq 126 ]; then
    echo "note: nobody cannot run the tool here (exit $status): unprivileged check skipped"
  else
    check "as nobody: exit 1 (got $status)" [ "$status" -eq 1 ]
    check "as nobody: the message names perf_event_paranoid ($(cat "$T/denied.err"))" \
      grep -q "perf_event_paranoid" "$T/denied.err"
  fi
fi

pm stat -e cpu-clock -- /nonexistent/program >/dev/null 2>"$T/err"
check "a program that cannot run exits 127" [ $? -eq 127 ]
pm stat -e cpu-clock -- sh -c 'exit 3' >/dev/null 2>&1
check "stat passes the program's exit status on" [ $? -eq 3 ]

# --- stat -----------------------------------------------------------------------------------

# perf stat -a counts from before our tool starts to after it exits; ours only between its
# start and stop. What perf counts outside ours (the tool's own start and exit: thousands of
# faults under AddressSanitizer) is measured on an empty run first and taken off.
stat_under_perf() {  # stat_under_perf PAGES: sets ours, theirs
  perf stat -a -x, -e page-faults -o "$T/perf.txt" -- \
    "$ZXS" perfmon stat -x, -e page-faults -o "$T/ours.txt" -- "$WL" pages "$1" >"$T/wl.out" \
    2>"$T/stat.err"
  status=$?
  check "perf stat -a around stat: exit 0 (got $status; $(tr '\n' ' ' <"$T/stat.err"))" \
    [ "$status" -eq 0 ]
  theirs=$(awk -F, '$3 == "page-faults" { print $1 }' "$T/perf.txt")
  ours=$(awk -F, '$1 == "total" && $3 == "page-faults" { print $2 }' "$T/ours.txt")
  theirs=${theirs:-0}
  ours=${ours:-0}
}
if command -v perf >/dev/null 2>&1; then
  stat_under_perf 0
  outside=$((theirs - ours))
  [ "$outside" -ge 0 ] || outside=0
  stat_under_perf "$N"
  check "the workload ran" grep -q "touched $N pages" "$T/wl.out"
  theirs_in=$((theirs - outside))
  echo "stat: $N fresh pages: page faults on every CPU: ours $ours, perf stat -a $theirs" \
       "($theirs_in without the $outside perf counts outside our run)"
  # What the kernel guarantees, whatever else runs on the machine: every fresh page of the
  # workload is a fault ours counted, and perf's window holds ours, so it counted at least as
  # many. (How close the two are depends on the other processes' faults: not asserted.)
  check "ours counted the workload's $N faults at least ($ours)" [ "$ours" -ge "$N" ]
  check "ours within perf stat -a's window ($ours <= $theirs)" [ "$ours" -le "$theirs" ]
else
  echo "note: no perf here: the comparison with perf stat -a is skipped"
  pm stat -x, -e page-faults -o "$T/ours.txt" -- "$WL" pages "$N" >"$T/wl.out" 2>"$T/stat.err"
  check "stat: exit 0" [ $? -eq 0 ]
  check "the workload ran" grep -q "touched $N pages" "$T/wl.out"
  ours=$(awk -F, '$1 == "total" && $3 == "page-faults" { print $2 }' "$T/ours.txt")
  echo "stat: $N fresh pages: page faults on every CPU: ${ours:-none}"
fi
sum=$(awk -F, '$1 ~ /^CPU/ && $3 == "page-faults" { s += $2 } END { print s + 0 }' "$T/ours.txt")
check "stat printed a total" [ -n "$ours" ]
ours=${ours:-0}
check "the CPUs add up to the total ($sum vs $ours)" [ "$sum" -eq "$ours" ]
check "at least N page faults counted ($ours >= $N)" [ "$ours" -ge "$N" ]

# One mode per run, as the refusal above suggests: each mode's count has its own row.
for mode in u k; do
  pm stat -x, -e "page-faults:$mode" -o "$T/mode.txt" -- "$WL" pages 100 >/dev/null 2>"$T/mode.err"
  status=$?
  check "stat -e page-faults:$mode: exit 0 (got $status; $(tr '\n' ' ' <"$T/mode.err"))" \
    [ "$status" -eq 0 ]
  check "stat -e page-faults:$mode: a total row for page-faults:$mode" \
    grep -q "^total,[0-9]*,page-faults:$mode\$" "$T/mode.txt"
done

pm stat -e page-faults,context-switches -- "$WL" pages 100 >/dev/null 2>"$T/human.err"
check "stat prints a table with a total column" grep -qE "total +event" "$T/human.err"
check "stat prints the elapsed time" grep -q "seconds time elapsed" "$T/human.err"

# --- record -----------------------------------------------------------------------------------

# The workload's own faults (its start: dozens, thousands under AddressSanitizer), then N more.
record_faults() {  # record_faults PAGES: sets mine
  pm record -e page-faults@1 -o "$T/faults.fxt" -- "$WL" pages "$1" >/dev/null 2>"$T/rec.err"
  status=$?
  check "record page-faults@1: exit 0 (got $status; $(tr '\n' ' ' <"$T/rec.err"))" \
    [ "$status" -eq 0 ]
  mine=$(sed -n 's/.*: \([0-9]*\) samples of .* written to.*/\1/p' "$T/rec.err")
  mine=${mine:-0}
}
record_faults 0
base=$mine
record_faults "$NREC"
echo "record: $NREC fresh pages: $mine page-fault samples of the workload ($base when it" \
     "touches none)"
check "the workload's page faults are N within 2% ($mine - $base for $NREC)" \
  within "$((mine - base))" "$NREC" 2

pm record -e cpu-clock@200000 -o "$T/spin.fxt" -- "$WL" spin 600 >/dev/null 2>"$T/rec.err"
status=$?
check "record cpu-clock: exit 0 (got $status; $(tr '\n' ' ' <"$T/rec.err"))" [ "$status" -eq 0 ]
"$ZXS" report "$T/spin.fxt" >"$T/top.txt" 2>"$T/top.err"
check "report reads the profile" [ $? -eq 0 ]
first=$(awk '/Function$/ { body = 1; next } body && NF >= 5 { print $5; exit }' "$T/top.txt")
samples=$(sed -n 's/^Samples: \([0-9]*\).*/\1/p' "$T/top.txt")
echo "record: hot function first in the report: '${first:-none}' (of ${samples:-0} samples)"
check "the samples land in the hot function (first: '$first')" [ "$first" = perfmon_hot_spin ]
check "the report names the process" grep -q "Process: perfmon_worklo" "$T/top.txt"
check "the period is the rate in ns" grep -q "Period: 200000 ns" "$T/top.txt"
check "the report says kernel time is sampled too" grep -q "^Sampled: user and kernel" "$T/top.txt"
pm record -e cpu-clock@200000 -f pprof -o "$T/spin.pb.gz" -- "$WL" spin 200 >/dev/null 2>&1
check "record -f pprof writes a gzip file" sh -c "gzip -t '$T/spin.pb.gz'"
pm record -e cpu-clock:u@200000 -f top -o "$T/spin.top" -- "$WL" spin 200 >/dev/null 2>&1
check "record -f top (user mode only) names the hot function" grep -q perfmon_hot_spin "$T/spin.top"
check "... and no kernel address" sh -c "! grep -q '0xffff' '$T/spin.top'"
check "... and says it sampled user code only" grep -q "^Sampled: user code only" "$T/spin.top"


# --- record's output ----------------------------------------------------------------------------

# An output that cannot be written is refused before the program runs; a FIFO is never replaced.
rm -f "$T/ran"
pm record -o "$T/no-such-dir/p.fxt" -- sh -c "touch '$T/ran'" >/dev/null 2>"$T/err"
status=$?
check "record -o in a missing folder: exit 1 (got $status)" [ "$status" -eq 1 ]
check "... before the program ran" [ ! -e "$T/ran" ]
mkfifo "$T/pm.fifo"
pm record -o "$T/pm.fifo" -- sh -c "touch '$T/ran'" >/dev/null 2>"$T/err"
check "record -o FIFO: refused before the program ran, still a FIFO" \
  sh -c "test ! -e '$T/ran' && test -p '$T/pm.fifo'"

finish
