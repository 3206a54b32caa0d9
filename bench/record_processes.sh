#!/usr/bin/env bash
# record_processes.sh: what `zxsampler record` costs per process of a process tree
# (docs/PERFORMANCE.md).
#
#   bench/record_processes.sh [N]     N rounds (default 5)
#
# The workload is a shell that starts P short programs one after another (P=300 by default,
# each `/bin/true`), so nearly all of its time is process creation, exec and exit. Each round
# runs it plain, under `zxsampler record` (which follows every child), and with the library
# preloaded in process (the way `record` worked before, which follows no child), alternating;
# the table gives medians of wall time and of total CPU (user + sys of everything the command
# ran, the recorder and its profile write-out included), the extra per process over the plain
# run, and the recorder's samples and processes.
#
# Environment: BUILD=DIR (default build), P=processes per run.
set -euo pipefail

N=${1:-5}
P=${P:-300}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
ZXS=$BUILD/tools/zxsampler
PRELOAD=$BUILD/src/libzxsampler-preload.so
[[ -x $ZXS && -e $PRELOAD ]] || { echo "record_processes: build $BUILD first" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "record_processes: needs GNU time (apt-get install time)" >&2; exit 1; }
OUT=$(mktemp -d /tmp/record_processes.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

LOOP="i=0; while [ \$i -lt $P ]; do /bin/true; i=\$((i + 1)); done"

run() {  # run NAME COMMAND...: appends "NAME wall cpu" to $OUT/raw
  local name=$1
  shift
  /usr/bin/time -f '%e %U %S' -o "$OUT/time" "$@" >/dev/null 2>"$OUT/err" || {
    echo "record_processes: $name failed" >&2; cat "$OUT/err" >&2; exit 1; }
  read -r wall user sys <"$OUT/time"
  echo "$name $wall $(python3 -c "print($user + $sys)")" >>"$OUT/raw"
  if [[ $name == record ]]; then
    "$ZXS" report "$OUT/p.fxt" | sed -nE 's/^Samples: ([0-9]+).*/\1/p' >>"$OUT/samples"
    "$ZXS" report "$OUT/p.fxt" | sed -nE 's/^Processes: ([0-9]+).*/\1/p' >>"$OUT/procs"
  fi
}

for ((r = 0; r < N; r++)); do
  run plain sh -c "$LOOP"
  run record "$ZXS" record -q -o "$OUT/p.fxt" -- sh -c "$LOOP"
  run plain sh -c "$LOOP"
  run preload env LD_PRELOAD="$PRELOAD" ZXSAMPLER_OUTPUT="$OUT/q.fxt" sh -c "$LOOP"
done

python3 - "$OUT/raw" "$P" "$OUT/samples" "$OUT/procs" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
p = int(sys.argv[2])
med = lambda name, i: statistics.median(float(r[i]) for r in rows if r[0] == name)
samples = [int(l) for l in open(sys.argv[3]) if l.strip()]
procs = [int(l) for l in open(sys.argv[4]) if l.strip()]
print(f"{p} processes per run, medians of {len([r for r in rows if r[0] == 'record'])} rounds")
print(f"{'':28} {'wall s':>8} {'cpu s':>8} {'+wall/proc':>11} {'+cpu/proc':>10}")
for name, label in (("plain", "no profiler"), ("record", "zxsampler record (tree)"),
                    ("preload", "in process (first only)")):
    w, c = med(name, 1), med(name, 2)
    dw = (w - med("plain", 1)) / p * 1e6
    dc = (c - med("plain", 2)) / p * 1e6
    extra = "" if name == "plain" else f"{dw:9.0f}us {dc:8.0f}us"
    print(f"{label:28} {w:8.3f} {c:8.3f} {extra}")
if samples:
    print(f"record: {statistics.median(samples):.0f} samples in "
          f"{statistics.median(procs) if procs else 1:.0f} processes with samples (median)")
EOF
