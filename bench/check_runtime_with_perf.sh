#!/usr/bin/env bash
# check_runtime_with_perf.sh: ZX_INFO_TASK_RUNTIME's page-fault and lock-contention times against
# perf's own measurement of the same kernel events, in the same run (docs/PERFORMANCE.md).
#
#   BUILD=DIR bench/check_runtime_with_perf.sh      (root; needs perf; default BUILD=build)
#
# locks:  `perf lock record` + `perf lock contention` (the lock:contention_* tracepoints,
#         paired by perf) around bench/runtime_probe locks; perf's total wait of the program's
#         sleeping locks against the program's own sum of lock_contention_time.
# faults: `perf record -c 1` of page-faults (handler start) and minor/major-faults (its end)
#         around bench/runtime_probe faults, paired per thread from `perf script`; perf's window
#         also holds the program's start-up faults.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
PROBE=$BUILD/bench/runtime_probe
command -v perf >/dev/null || { echo "skipped: perf is not installed"; exit 0; }
[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

ours=$(perf lock record -o "$OUT/lock.data" "$PROBE" locks 2>/dev/null | awk '/lock_contention_time/ {print $2}')
perf_ns=$(perf lock contention -i "$OUT/lock.data" -E 1000 2>&1 | awk '
  function ns(v, u) { return u == "s" ? v * 1e9 : u == "ms" ? v * 1e6 : u == "us" ? v * 1e3 : v }
  $1 ~ /^[0-9]+$/ && $0 ~ /rwsem|mutex|rtmutex|percpu-rwsem/ { s += ns($2, $3) } END { printf "%.0f", s }')
row() { awk -v what="$1" -v p="$2" -v o="${3:-0}" 'BEGIN { printf "%-14s %16.1f %16.1f\n", what, p / 1e6, o / 1e6 }'; }
printf '%-14s %16s %16s\n' "" "perf (ms)" "ours (ms)"
row "lock waits" "$perf_ns" "$ours"

ours=$(perf record -q -o "$OUT/pf.data" -c 1 -e page-faults -e minor-faults -e major-faults \
  "$PROBE" faults 2>/dev/null | awk '/page_fault_time/ {print $2}')
perf_ns=$(perf script -i "$OUT/pf.data" -F tid,event,time 2>/dev/null | awk '
  { t = $2; sub(":", "", t); e = $3
    if (e == "page-faults:") b[$1] = t
    else if ((e == "minor-faults:" || e == "major-faults:") && b[$1]) { s[$1] += t - b[$1]; n[$1]++; b[$1] = 0 } }
  END { best = 0; for (k in s) if (n[k] > best) { best = n[k]; v = s[k] }; printf "%.0f", v * 1e9 }')
row "fault handler" "$perf_ns" "$ours"
