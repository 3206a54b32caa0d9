#!/usr/bin/env bash
# floor_variants.sh: the measurements behind the proposed fixes in docs/PERFORMANCE.md.
#
#   bench/floor_variants.sh [N] [PERIOD_US]      N rounds (default 7), period (default 250 us)
#
# Environment: BUILD=DIR (default: build) with bench/interrupt_floor, bench/peer_workload and
# tools/zxsampler.
#
# 1. Re-arm variants of the perf source, with bench/interrupt_floor (same workload, 3 threads,
#    sources armed by the program itself, no library): the interrupt alone (count), a signal to
#    an empty handler (signal, free-running), the library's one-shot pattern (oneshot: gettid +
#    REFRESH(1) per sample), without the gettid (-G), and re-armed every K overflows (-r K: at
#    most K signals queued per thread, as with one-shot the queue stays bounded). Each run is
#    next to an unarmed run; the table gives the median extra CPU per event.
# 2. What the library's calibration costs a profiled process: `zxsampler record --in-process
#    -F 1000` (the library preloaded, as the calibration runs in process) of a
#    short program (peer_workload -u 100, ~15 ms of CPU) with the per-sample cost measured at
#    start (as shipped) and given in ZXSAMPLER_SAMPLE_COST_NS (no measurement); total CPU of the
#    command from GNU time.
# 3. Kernel events per sample (perf stat with tracepoints: needs root or perf_event_paranoid -1;
#    skipped otherwise): local timer interrupts, irq_work interrupts, MSR writes (TSC-deadline
#    timer programming, x2APIC self-IPIs: they trap to the hypervisor on a typical KVM guest),
#    hrtimer starts, signal
#    deliveries and system calls, per event, above an unarmed run; for the floor modes, for
#    `zxsampler record` (perf source, the period above) and for `perf record -g` at that period
#    (its counts include the perf tool's own process).
set -euo pipefail
N=${1:-7}
PERIOD=${2:-250}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
IF=$BUILD/bench/interrupt_floor
PW=$BUILD/bench/peer_workload
ZXS=$BUILD/tools/zxsampler
for f in "$IF" "$PW" "$ZXS"; do
  [[ -x $f ]] || { echo "floor_variants: $f not built (BUILD=$BUILD)" >&2; exit 1; }
done
TMP=$(mktemp -d /tmp/floor_variants.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

VARIANTS=("count" "signal" "oneshot" "oneshot -G" "oneshot -r 4" "oneshot -r 16" "oneshot -r 16 -G")
for ((r = 0; r < N; r++)); do
  for ((k = 0; k < ${#VARIANTS[@]}; k++)); do
    v=${VARIANTS[$(((k + r) % ${#VARIANTS[@]}))]}
    a=$("$IF" -m none -p "$PERIOD")
    b=$("$IF" -m $v -p "$PERIOD")
    echo "$v|$a|$b" >>"$TMP/runs"
  done
done
python3 - "$TMP/runs" "$N" "$PERIOD" <<'EOF'
import re, statistics, sys
get = lambda s, k: float(re.search(rf"\b{k}=([0-9.]+)", s).group(1))
per, slow = {}, {}
for line in open(sys.argv[1]):
    v, a, b = line.rstrip("\n").split("|")
    ev = get(b, "events")
    per.setdefault(v, []).append((get(b, "cpu_s") - get(a, "cpu_s")) * 1e6 / ev if ev else 0)
    slow.setdefault(v, []).append(get(b, "cpu_s") / get(a, "cpu_s") - 1)
print(f"\nRe-arm variants at {sys.argv[3]} us, 3 threads, median of {sys.argv[2]} pairs:\n")
print("| interrupt_floor -m ... | extra CPU per event (us) | p25..p75 | slowdown |")
print("|---|---:|---:|---:|")
for v in per:
    p = sorted(per[v])
    q = statistics.quantiles(p, n=4) if len(p) > 1 else [p[0], p[0], p[0]]
    print(f"| {v} | {statistics.median(p):.1f} | {q[0]:.1f}..{q[2]:.1f} | "
          f"{statistics.median(slow[v]) * 100:+.1f}% |")
EOF

for ((r = 0; r < N; r++)); do
  for mode in measured given; do
    env_args=()
    [[ $mode == given ]] && env_args=("ZXSAMPLER_SAMPLE_COST_NS=40000")
    /usr/bin/time -f '%U %S %e' -o "$TMP/time" env "${env_args[@]}" ZXSAMPLER_SOURCE=perf \
      "$ZXS" record --in-process -o "$TMP/p.fxt" -F 1000 -- "$PW" -u 100 >/dev/null 2>&1
    echo "$mode $(cat "$TMP/time")" >>"$TMP/cal"
  done
done
python3 - "$TMP/cal" "$N" <<'EOF'
import statistics, sys
cpu, wall = {}, {}
for line in open(sys.argv[1]):
    mode, u, s, e = line.split()
    cpu.setdefault(mode, []).append(float(u) + float(s))
    wall.setdefault(mode, []).append(float(e))
print(f"\nzxsampler record --in-process -F 1000 -- peer_workload -u 100, median of {sys.argv[2]}:\n")
print("| per-sample cost | total CPU of the command | wall |\n|---|---:|---:|")
for mode, label in (("measured", "measured at start (as shipped)"),
                    ("given", "given: ZXSAMPLER_SAMPLE_COST_NS=40000")):
    print(f"| {label} | {statistics.median(cpu[mode]) * 1e3:.0f} ms | "
          f"{statistics.median(wall[mode]) * 1e3:.0f} ms |")
EOF

EV=irq_vectors:local_timer_entry,irq_vectors:irq_work_entry,msr:write_msr,timer:hrtimer_start,signal:signal_deliver,raw_syscalls:sys_enter
if ! perf stat -x, -e "$EV" -- true >/dev/null 2>&1; then
  echo "floor_variants: perf stat with tracepoints does not work here: skipping part 3" >&2
  exit 0
fi
stat_run() {  # $1 label, rest: command; prints "label|events|counts..."
  local label=$1; shift
  perf stat -x, -o "$TMP/stat" -e "$EV" -- "$@" >"$TMP/out" 2>/dev/null
  local events
  events=$(sed -n 's/.* events=\([0-9]*\).*/\1/p' "$TMP/out")
  if [[ -z $events && $label == perf* ]]; then  # perf record: samples in its file
    events=$(perf report -D -i "$TMP/perf.data" 2>/dev/null | grep -c PERF_RECORD_SAMPLE || true)
  elif [[ -z $events ]]; then  # zxsampler record: samples from the profile
    events=$("$ZXS" report "$TMP/p.fxt" | sed -n 's/^Samples: \([0-9]*\).*/\1/p')
  fi
  echo "$label|$events|$(grep -v '^#' "$TMP/stat" | grep , | cut -d, -f1,3 | tr '\n' ' ')"
}
{
  stat_run "none" "$IF" -m none -p "$PERIOD"
  for v in "count" "signal" "oneshot" "oneshot -r 16"; do
    stat_run "interrupt_floor -m $v" "$IF" -m $v -p "$PERIOD"
  done
  ZXSAMPLER_SOURCE=perf ZXSAMPLER_SAMPLE_COST_NS=40000 stat_run "zxsampler record (perf)" \
    "$ZXS" record --in-process -o "$TMP/p.fxt" -F "$((1000000 / PERIOD))" -- "$PW"
  stat_run "perf record -g -c (same period)" perf record -q -g -e task-clock:u \
    -c "$((PERIOD * 1000))" -o "$TMP/perf.data" -- "$PW"
} >"$TMP/stats"
python3 - "$TMP/stats" "$PERIOD" <<'EOF'
import sys
rows = []
for line in open(sys.argv[1]):
    label, events, counts = line.rstrip("\n").split("|")
    c = {}
    for item in counts.split():
        v, name = item.split(",", 1)
        c[name] = float(v) if v.replace(".", "").isdigit() else 0.0
    rows.append((label, float(events or 0), c))
base = rows[0][2]
names = [("irq_vectors:local_timer_entry", "timer irqs"), ("irq_vectors:irq_work_entry", "irq_work irqs"),
         ("msr:write_msr", "MSR writes"), ("timer:hrtimer_start", "hrtimer starts"),
         ("signal:signal_deliver", "signals"), ("raw_syscalls:sys_enter", "syscalls")]
print(f"\nKernel events per sample at {sys.argv[2]} us (perf stat; counts above the unarmed run / events):\n")
print("| run | events | " + " | ".join(n for _, n in names) + " |")
print("|---|---:|" + "---:|" * len(names))
for label, ev, c in rows[1:]:
    print(f"| {label} | {ev:.0f} | " +
          " | ".join(f"{(c.get(k, 0) - base.get(k, 0)) / ev:.2f}" if ev else "-" for k, _ in names) + " |")
EOF
