#!/usr/bin/env bash
# The flight recorder end to end: examples/audio_mixer makes some periods late on purpose (first-
# touch page faults, kernel lock contention, extra work), each named after its cause; every alert
# trace it leaves must read back with `zxsampler report` and name that cause as the largest share
# of the late period, with the injection site in the late period's stacks.
#
#   test_recorder.sh ZXSAMPLER AUDIO_MIXER
#
# Robust on a loaded machine: the injected delays are several times the 10 ms budget, and per kind
# the check asks for a majority of right answers (a period can also be late for reasons of the
# machine's own; those alerts are named "mixer" and only have to read back). Nothing is timed.
# A fault storm's time is the fault handler's timed span plus a measured per-fault estimate of
# the entry and exit around it (runtime_events_linux.c), so faults are the largest share of their
# periods as lock contention is of its own; extra work must measure the CPU time it spends, though
# waiting for the CPU (no real-time priority without privileges) may be larger.
# A cause the host cannot measure (no perf events, no lock tracepoints) is reported as skipped.
set -u

if [ $# -ne 2 ]; then
  echo "usage: $0 ZXSAMPLER AUDIO_MIXER" >&2
  exit 2
fi
ZXS=$1
MIXER=$2

# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"

mkdir -p "$T/alerts"
# 225 periods: three injections of each kind, a quarter of a second apart.
"$MIXER" -o "$T/alerts" -n 225 >"$T/mixer.out" 2>"$T/mixer.err"
status=$?
check "audio_mixer exits 0 (got $status: $(tail -3 "$T/mixer.err"))" [ "$status" -eq 0 ]

# The largest share named in a report: the first row under "Why this period was late".
largest_share() {  # largest_share REPORT
  awk '/^Why this period was late/ { getline; print $1; exit }' "$1"
}
# The late period's table of a report: from its heading to the next blank line.
late_table() {  # late_table REPORT
  awk '/^Thread [0-9]+, the late period:/ { on = 1; next } on && /^$/ { exit } on' "$1"
}

# A cause's row in a report: its milliseconds (field 2) or its share in percent (field 4).
row_of() {  # row_of REPORT CAUSE FIELD
  awk -v cause="$2" -v field="$3" '/^Why this period was late/ { on = 1; next } on && /^$/ { exit }
                     on && $1 == cause { sub(/%$/, "", $field); print $field; exit }' "$1"
}
greater() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }

# check_kind KIND CAUSE SITE RULE: each alert of KIND must name the mixer thread, show SITE in
# its late period's stacks (most of them) and meet RULE (most of them):
#   first           CAUSE is the largest share
#   ms-at-least M   CAUSE measures at least M ms (what the injection spends of it, by design)
check_kind() {
  local kind=$1 cause=$2 site=$3 rule=$4 bound=${5:-} files=0 right=0 wrong=0 stacks=0
  local unmeasured=0 f ok what
  case $rule in
    first) what="name $cause as the largest share" ;;
    ms-at-least) what="measure at least $bound ms of $cause, what the injection spends" ;;
  esac
  for f in "$T"/alerts/late-"$kind"-*.fxt; do
    [ -e "$f" ] || continue
    files=$((files + 1))
    local report="$f.txt"
    if ! "$ZXS" report "$f" >"$report" 2>"$report.err"; then
      fail "report $f: $(cat "$report.err")"
      continue
    fi
    check "$kind: the alert names the mixer thread" grep -q "^Why this period was late: late-$kind on thread mixer" "$report"
    if ! grep -q "^  $cause " "$report"; then
      unmeasured=$((unmeasured + 1))  # the host does not measure it
      continue
    fi
    case $rule in
      first) [ "$(largest_share "$report")" = "$cause" ] && ok=1 || ok=0 ;;
      ms-at-least) greater "$(row_of "$report" "$cause" 2)" "$((bound - 1)).999" && ok=1 || ok=0 ;;
    esac
    if [ "$ok" -eq 1 ]; then right=$((right + 1)); else
      wrong=$((wrong + 1))
      echo "note: $f: does not $what:" >&2
      sed -n '/^Why this period/,/^$/p' "$report" >&2
    fi
    if late_table "$report" | grep -q " $site\$"; then stacks=$((stacks + 1)); fi
  done
  check "$kind: its injected periods were late and alerted ($files alert traces)" [ "$files" -ge 1 ]
  if [ "$unmeasured" -gt 0 ] && [ "$right" -eq 0 ] && [ "$wrong" -eq 0 ]; then
    echo "SKIP: $kind: this host does not measure $cause (perf events or lock tracepoints)"
    return
  fi
  echo "$kind: $right of $((right + wrong)) $what; $stacks show $site in the late period"
  check "$kind: most alerts $what ($right right, $wrong wrong)" [ "$right" -gt "$wrong" ]
  check "$kind: most late periods' stacks show $site ($stacks of $files)" \
    [ $((2 * stacks)) -gt "$files" ]
}

check_kind faults page_fault_time inject_page_faults first
check_kind locks lock_contention_time inject_lock_contention first
# (25 ms: audio_mixer's EXTRA_WORK of thread CPU time; the largest share only where nothing else
# runs on its CPU: without SCHED_FIFO, unprivileged, waiting for the CPU can be larger)
check_kind work cpu_time inject_extra_work ms-at-least 25

# Any alert converts as any profile: every format, non-empty; folded stacks name the site.
first=$(ls "$T"/alerts/late-faults-*.fxt 2>/dev/null | head -1)
if [ -n "$first" ]; then
  for format in pprof folded svg markup fxt; do
    "$ZXS" report -f "$format" -o "$T/converted.$format" "$first" 2>"$T/convert.err"
    check "convert an alert trace to $format ($(cat "$T/convert.err"))" [ -s "$T/converted.$format" ]
  done
  check "folded stacks of an alert name the injection site" grep -q "inject_page_faults" "$T/converted.folded"
  check "fxt conversion is the trace itself" cmp -s "$first" "$T/converted.fxt"
fi
# Alerts of periods late on their own (a loaded machine) read back too.
for f in "$T"/alerts/mixer-*.fxt; do
  [ -e "$f" ] || continue
  check "report $(basename "$f")" "$ZXS" report -o /dev/null "$f"
done

finish
