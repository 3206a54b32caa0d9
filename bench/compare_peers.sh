#!/usr/bin/env bash
# compare_peers.sh: libzxsampler against other profilers on the same program (docs/PERFORMANCE.md).
#
#   bench/compare_peers.sh [N]          N rounds (default 5)
#
# Environment:
#   BUILD=DIR     meson build directory holding bench/peer_workload, bench/interrupt_floor and
#                 tools/zxsampler (default: build, relative to the source root)
#   OUT=DIR       where raw results and profiles go (default: a new temporary directory; kept)
#   WORK_ARGS=... arguments for peer_workload / interrupt_floor (default: "-t 3 -u 8000": three
#                 threads, ~1.1 s of CPU in all on an idle core)
#   ONLY=REGEX    run only the configurations whose name matches (the baseline always runs)
#   VARIANTS=...  extra in-process perf-ring rows, side by side with the others in the same run:
#                 "NAME:VAR=VALUE,VAR=VALUE;NAME2:..." adds zxs-NAME-1000 and zxs-NAME-4000, run
#                 with those variables set (PRELOAD=PATH takes another build's preload library,
#                 to compare a change with what it replaces)
#
# Every round runs the baseline (peer_workload, no profiler) between every two configurations,
# A c1 A c2 A ... cK A, the configurations rotated from round to round; a configuration's
# slowdown in a round is its CPU time over the mean of the two baseline runs next to it. The
# table gives medians over the rounds. What each configuration runs:
#
#   floor-*       bench/interrupt_floor: the same workload with a per-thread perf task-clock
#                 event armed by the program itself: count (no signal: the kernel's interrupt
#                 alone), signal (+ a real-time signal to an empty handler), oneshot (+ the
#                 REFRESH re-arm libzxsampler does per sample), threadcpu (count, with one
#                 event per CPU per thread, as perf-ring and perf record arm a thread), percpu (a
#                 cpu-clock event per CPU for every task: needs root), record (count, and the
#                 kernel writes a sample of tid, time and CPU that nobody reads), stack (record
#                 with perf-ring's registers and a 2 KiB stack copy: perf-ring's kernel side),
#                 callchain (record with the kernel's user call chain: `perf record -g`'s kernel
#                 side); floor-none runs it unarmed
#   zxs-record-*  zxsampler record --user-only --period 1000 (1000 samples/s per thread) or
#                 --period 250 (4000/s): out of process, per-CPU rings drained by zxsampler;
#                 zxs-record-fp-* the same with --unwind fp (against perf-*)
#   zxs-*         the library in process (libzxsampler-preload.so preloaded by hand, as
#                 `zxsampler record` did before it sampled from outside), period 1000 or 250 us,
#                 ZXSAMPLER_SOURCE=perf-ring (the default), perf (signal) or cputimer
#   gperf-*       gperftools' CPU profiler (LD_PRELOAD=libprofiler.so), CPUPROFILE_FREQUENCY
#                 1000 or 4000, its default ITIMER_PROF (process-wide CPU-time timer), and
#                 CPUPROFILE_REALTIME=1 (ITIMER_REAL, process-wide wall-clock timer)
#   perf-*        perf record -g -F 1000|4000 -e task-clock:u (user only, as libzxsampler)
#   perf-dwarf-*  the same with --call-graph dwarf (perf's CFI mode, against zxs-record's)
#
# Columns: the workload's own CPU time (all threads, printed by it, profiler start-up and
# write-out excluded) against the baseline's; total CPU of everything the command ran (GNU time:
# user + sys, children included: perf's own process, the profile write-out); wall time; samples
# delivered (zxsampler report header, the gperftools profile's records, perf report -D) against
# expected (rate x the workload's CPU time; for CPUPROFILE_REALTIME rate x wall time); peak RSS
# (GNU time's maximum resident set of the command and its children, in MiB).
set -euo pipefail

N=${1:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
OUT=${OUT:-$(mktemp -d /tmp/compare_peers.XXXXXX)}
WORK_ARGS=${WORK_ARGS:--t 3 -u 8000}
ONLY=${ONLY:-.}
mkdir -p "$OUT"

PW=$BUILD/bench/peer_workload
IF=$BUILD/bench/interrupt_floor
ZXS=$BUILD/tools/zxsampler
PRELOAD=$BUILD/src/libzxsampler-preload.so
for f in "$PW" "$IF" "$ZXS" "$PRELOAD"; do
  [[ -e $f ]] || { echo "compare_peers: $f not built (BUILD=$BUILD)" >&2; exit 1; }
done
[[ -x /usr/bin/time ]] || { echo "compare_peers: needs GNU time (apt-get install time)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "compare_peers: needs python3" >&2; exit 1; }

LIBPROFILER=$(ls /usr/lib/*/libprofiler.so.0 /usr/lib/libprofiler.so.0 /usr/local/lib/libprofiler.so.0 \
  2>/dev/null | head -1 || true)
HAVE_PERF=0
if command -v perf >/dev/null && perf record -q -o "$OUT/probe.data" -e task-clock:u -- true \
  >/dev/null 2>&1; then
  HAVE_PERF=1
fi
rm -f "$OUT/probe.data"

# name|kind|rate  (rate: samples/s per CPU-second of the workload; 0 = none)
CONFIGS=(
  "floor-none|floor:none:1000|0"
  "floor-count-1000|floor:count:1000|1000"
  "floor-count-4000|floor:count:250|4000"
  "floor-signal-1000|floor:signal:1000|1000"
  "floor-signal-4000|floor:signal:250|4000"
  "floor-oneshot-1000|floor:oneshot:1000|1000"
  "floor-oneshot-4000|floor:oneshot:250|4000"
  "floor-threadcpu-1000|floor:threadcpu:1000|1000"
  "floor-threadcpu-4000|floor:threadcpu:250|4000"
  "floor-percpu-1000|floor:percpu:1000|1000"
  "floor-percpu-4000|floor:percpu:250|4000"
  "floor-record-1000|floor:record:1000|1000"
  "floor-record-4000|floor:record:250|4000"
  "floor-stack-1000|floor:stack:1000|1000"
  "floor-stack-4000|floor:stack:250|4000"
  "floor-callchain-1000|floor:callchain:1000|1000"
  "floor-callchain-4000|floor:callchain:250|4000"
  "zxs-record-1000|record:1000|1000"
  "zxs-record-4000|record:250|4000"
  "zxs-record-fp-1000|recordfp:1000|1000"
  "zxs-record-fp-4000|recordfp:250|4000"
  "zxs-ring-1000|zxs:perf-ring:1000|1000"
  "zxs-ring-4000|zxs:perf-ring:250|4000"
  "zxs-perf-1000|zxs:perf:1000|1000"
  "zxs-perf-4000|zxs:perf:250|4000"
  "zxs-cputimer-1000|zxs:cputimer:1000|1000"
  "zxs-cputimer-4000|zxs:cputimer:250|4000"
)
if [[ -n $LIBPROFILER ]]; then
  CONFIGS+=("gperf-itimer-1000|gperf:0:1000|1000" "gperf-itimer-4000|gperf:0:4000|4000"
            "gperf-realtime-1000|gperf:1:1000|1000" "gperf-realtime-4000|gperf:1:4000|4000")
else
  echo "compare_peers: libprofiler.so not found (apt-get install libgoogle-perftools4): skipping gperftools" >&2
fi
if [[ $HAVE_PERF == 1 ]]; then
  CONFIGS+=("perf-1000|perf:1000|1000" "perf-4000|perf:4000|4000"
            "perf-dwarf-1000|perfdwarf:1000|1000" "perf-dwarf-4000|perfdwarf:4000|4000")
else
  echo "compare_peers: perf record does not work here: skipping perf" >&2
fi
declare -A VARIANT_ENV=()
if [[ -n ${VARIANTS:-} ]]; then
  IFS=';' read -ra _variants <<<"$VARIANTS"
  for v in "${_variants[@]}"; do
    VARIANT_ENV[${v%%:*}]=${v#*:}
    CONFIGS+=("zxs-${v%%:*}-1000|zxsv:${v%%:*}:1000|1000" "zxs-${v%%:*}-4000|zxsv:${v%%:*}:250|4000")
  done
fi
SELECTED=()
for c in "${CONFIGS[@]}"; do
  [[ ${c%%|*} =~ $ONLY ]] && SELECTED+=("$c")
done

RAW=$OUT/raw.tsv
printf 'round\tconfig\tpos\tcpu_s\twall_s\ttotal_cpu_s\tcmd_wall_s\tmaxrss_kb\tinproc_rss_kb\tsamples\texpected\n' >"$RAW"

# Counts the samples in a profile file: $1 kind, $2 file.
count_samples() {
  case $1 in
    zxs) "$ZXS" report "$2" 2>/dev/null | sed -n 's/^Samples: \([0-9]*\).*/\1/p' | head -1 ;;
    gperf) python3 - "$2" <<'EOF'
import struct, sys
# gperftools CPU profile (64-bit): header words 0, 3, 0, period_us, 0; then records
# (count, depth, pc * depth) up to the trailer (0, 1, 0); then the text maps.
data = open(sys.argv[1], "rb").read()
w = lambda i: struct.unpack_from("<Q", data, 8 * i)[0]
i, total = 5, 0
while 8 * (i + 2) <= len(data):
    count, depth = w(i), w(i + 1)
    if count == 0 and depth == 1 and w(i + 2) == 0:
        break
    total += count
    i += 2 + depth
print(total)
EOF
      ;;
    perf) perf report -D -i "$2" 2>/dev/null | grep -c 'PERF_RECORD_SAMPLE' || true ;;
  esac
}

# Runs one configuration; appends a line to $RAW. $1 round, $2 name, $3 kind spec, $4 rate, $5 pos
run_one() {
  local round=$1 name=$2 spec=$3 rate=$4 pos=$5
  local prof=$OUT/prof.$name.$round.$pos timef=$OUT/time.txt outf=$OUT/out.txt
  local kind=${spec%%:*} rest=${spec#*:}
  local -a cmd env_args=()
  case $kind in
    base) cmd=("$PW" $WORK_ARGS) ;;
    floor) cmd=("$IF" -m "${rest%%:*}" -p "${rest#*:}" $WORK_ARGS) ;;
    zxs) env_args=("ZXSAMPLER_SOURCE=${rest%%:*}" "LD_PRELOAD=$PRELOAD" "ZXSAMPLER_OUTPUT=$prof"
                   "ZXSAMPLER_PERIOD_NS=$((${rest#*:} * 1000))")
         cmd=("$PW" $WORK_ARGS) ;;
    zxsv) local preload=$PRELOAD vname=${rest%%:*} kv
          env_args=("ZXSAMPLER_SOURCE=perf-ring" "ZXSAMPLER_OUTPUT=$prof"
                    "ZXSAMPLER_PERIOD_NS=$((${rest#*:} * 1000))")
          IFS=',' read -ra _kvs <<<"${VARIANT_ENV[$vname]}"
          for kv in "${_kvs[@]}"; do
            if [[ ${kv%%=*} == PRELOAD ]]; then preload=${kv#*=}; else env_args+=("$kv"); fi
          done
          env_args+=("LD_PRELOAD=$preload")
          cmd=("$PW" $WORK_ARGS) ;;
    record) cmd=("$ZXS" record -q --user-only -o "$prof" --period "$rest" -- "$PW" $WORK_ARGS) ;;
    recordfp) cmd=("$ZXS" record -q --user-only --unwind fp -o "$prof" --period "$rest" -- "$PW" \
                   $WORK_ARGS) ;;
    gperf) env_args=("LD_PRELOAD=$LIBPROFILER" "CPUPROFILE=$prof" "CPUPROFILE_FREQUENCY=${rest#*:}")
           [[ ${rest%%:*} == 1 ]] && env_args+=("CPUPROFILE_REALTIME=1")
           cmd=("$PW" $WORK_ARGS) ;;
    perf) cmd=(perf record -q -g -F "$rest" -e task-clock:u -o "$prof" -- "$PW" $WORK_ARGS) ;;
    perfdwarf) cmd=(perf record -q --call-graph dwarf -F "$rest" -e task-clock:u -o "$prof" --
                    "$PW" $WORK_ARGS) ;;
  esac
  # The variables go to the measured command only (GNU time must not be profiled itself).
  /usr/bin/time -f '%e %U %S %M' -o "$timef" env "${env_args[@]}" "${cmd[@]}" >"$outf" \
    2>"$OUT/err.txt" || {
    echo "compare_peers: $name failed:" >&2; cat "$OUT/err.txt" >&2; exit 1; }
  local line; line=$(grep -E '^(peer_workload|interrupt_floor):' "$outf" | tail -1)
  local cpu wall rss samples expected
  cpu=$(sed -n 's/.* cpu_s=\([0-9.]*\).*/\1/p' <<<"$line")
  wall=$(sed -n 's/.* wall_s=\([0-9.]*\).*/\1/p' <<<"$line")
  rss=$(sed -n 's/.* maxrss_kb=\([0-9]*\).*/\1/p' <<<"$line")
  read -r t_wall t_user t_sys t_rss <"$timef"
  samples=0
  expected=$(python3 -c "print(round($cpu * $rate))")
  case $kind in
    floor) samples=$(sed -n 's/.* events=\([0-9]*\).*/\1/p' <<<"$line") ;;
    zxs|zxsv|record|recordfp) samples=$(count_samples zxs "$prof") ;;
    perf | perfdwarf) samples=$(count_samples perf "$prof") ;;
    gperf) samples=$(count_samples gperf "$prof")
           [[ ${rest%%:*} == 1 ]] && expected=$(python3 -c "print(round($wall * $rate))") ;;
  esac
  rm -f "$prof" "$prof"_*
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$name" "$pos" "$cpu" "$wall" \
    "$(python3 -c "print(round($t_user + $t_sys, 3))")" "$t_wall" "$t_rss" "$rss" "${samples:-0}" \
    "$expected" >>"$RAW"
}

echo "compare_peers: $N rounds of ${#SELECTED[@]} configurations, results in $OUT" >&2
START=$(date +%s)
K=${#SELECTED[@]}
for ((r = 0; r < N; r++)); do
  pos=0
  run_one "$r" base base:: 0 $pos
  for ((k = 0; k < K; k++)); do
    IFS='|' read -r name spec rate <<<"${SELECTED[$(((k + r) % K))]}"
    pos=$((pos + 1)); run_one "$r" "$name" "$spec" "$rate" $pos
    pos=$((pos + 1)); run_one "$r" base base:: 0 $pos
  done
  echo "compare_peers: round $((r + 1))/$N done ($(($(date +%s) - START)) s)" >&2
done

python3 - "$RAW" "$N" "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
n, cpus, load = sys.argv[2], sys.argv[3], sys.argv[4]
by_round = {}
for r in rows:
    by_round.setdefault(r["round"], {})[int(r["pos"])] = r
f = lambda r, k: float(r[k])
stats, order = {}, []
for rnd, runs in by_round.items():
    for pos, r in runs.items():
        if r["config"] == "base":
            continue
        a, b = runs.get(pos - 1), runs.get(pos + 1)
        base = lambda k: (f(a, k) + f(b, k)) / 2
        s = stats.setdefault(r["config"], {k: [] for k in
            ("slow", "total", "wall", "samples", "expected", "rss", "inproc", "per")})
        if r["config"] not in order:
            order.append(r["config"])
        s["slow"].append(f(r, "cpu_s") / base("cpu_s"))
        s["total"].append(f(r, "total_cpu_s") / base("total_cpu_s"))
        s["wall"].append(f(r, "cmd_wall_s") / base("cmd_wall_s"))
        s["samples"].append(f(r, "samples"))
        if f(r, "samples") > 0:
            s["per"].append((f(r, "cpu_s") - base("cpu_s")) * 1e6 / f(r, "samples"))
        s["expected"].append(f(r, "expected"))
        s["rss"].append(f(r, "maxrss_kb"))
        s["inproc"].append(f(r, "inproc_rss_kb"))
base = [r for r in rows if r["config"] == "base"]
med = statistics.median
def q(v, p):
    v = sorted(v)
    i = p * (len(v) - 1)
    lo = int(i)
    return v[lo] if lo + 1 >= len(v) else v[lo] * (1 - (i - lo)) + v[lo + 1] * (i - lo)
print(f"\n{cpus} CPUs, {n} rounds, load average {load} at the end. Baseline (no profiler): "
      f"workload CPU median {med(f(r,'cpu_s') for r in base):.3f} s, wall "
      f"{med(f(r,'cmd_wall_s') for r in base):.3f} s, peak RSS "
      f"{med(f(r,'maxrss_kb') for r in base)/1024:.1f} MiB.\n")
print("| configuration | workload CPU slowdown | p25..p75 | extra workload CPU per sample (us) "
      "| total CPU (incl. profiler process, write-out) | wall | samples delivered | expected "
      "| delivered/expected | peak RSS (MiB) | RSS of the workload process (MiB) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
names = sorted(order, key=lambda c: (c.split("-")[0] != "floor", c))
for c in names:
    s = stats[c]
    pct = lambda v: f"{(v - 1) * 100:+.1f}%"
    exp = med(s["expected"])
    ratio = f"{med(s['samples']) / exp:.2f}" if exp > 0 else "-"
    per = f"{med(s['per']):.1f}" if s["per"] else "-"
    print(f"| {c} | {pct(med(s['slow']))} | {pct(q(s['slow'], .25))}..{pct(q(s['slow'], .75))} | "
          f"{per} | {pct(med(s['total']))} | {pct(med(s['wall']))} | {med(s['samples']):.0f} | {exp:.0f} | "
          f"{ratio} | {med(s['rss'])/1024:.1f} | {med(s['inproc'])/1024:.1f} |")
EOF
python3 - "$RAW" <<'EOF'
# Our cost above the floor: each configuration's median slowdown minus the floor's at its rate.
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
runs = {}
for r in rows:
    runs.setdefault(r["round"], {})[int(r["pos"])] = r
slow = {}
for rnd in runs.values():
    for pos, r in rnd.items():
        if r["config"] != "base" and pos - 1 in rnd and pos + 1 in rnd:
            b = (float(rnd[pos - 1]["cpu_s"]) + float(rnd[pos + 1]["cpu_s"])) / 2
            slow.setdefault(r["config"], []).append(float(r["cpu_s"]) / b - 1)
med = {c: statistics.median(v) * 100 for c, v in slow.items()}
lines = []
for rate in ("1000", "4000"):
    floor = med.get(f"floor-count-{rate}")
    if floor is None:
        continue
    for c in sorted(med):
        if c.endswith("-" + rate) and c != f"floor-count-{rate}":
            lines.append(f"| {rate}/s | {c} | {med[c]:+.1f}% | {floor:+.1f}% | {med[c] - floor:+.1f} points |")
if lines:
    print("\n| rate | configuration | slowdown | interrupt floor (floor-count) | above the floor |")
    print("|---|---|---:|---:|---:|")
    print("\n".join(lines))
EOF
echo "compare_peers: total $(($(date +%s) - START)) s; raw runs in $RAW" >&2
