#!/usr/bin/env bash
# cfi_record.sh: what `zxsampler record --unwind dwarf` costs the recorder per sample with our
# own CFI unwinder against libunwind's (ZXSAMPLER_CFI=own|libunwind), frame pointers alongside
# (docs/PERFORMANCE.md, "CFI unwinding in zxsampler record").
#
#   bench/cfi_record.sh [N]     N rounds (default 3), the configurations alternating in each
#
# Programs: `xz -9 -T1` on 24 MB of poorly compressible data (1000 samples/s, the default), and
# bench/cfi_workload with 8 threads 32 frames deep at 4000 samples/s of each thread's CPU time
# (the collector target of issue 10). The recorder reports its own CPU time ("the recorder used
# X s of CPU (Y us a sample)"), the samples it kept and those the kernel lost; the table gives
# medians over rounds, and the load average before and after (other jobs share the machine:
# compare rows of one run, not with other runs).
#
# Environment: BUILD=DIR (default build).
set -euo pipefail

N=${1:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
ZXS=$BUILD/tools/zxsampler
WORKLOAD=$BUILD/bench/cfi_workload
[[ -x $ZXS && -x $WORKLOAD ]] || { echo "cfi_record: build $BUILD first" >&2; exit 1; }
[[ -x /usr/bin/xz ]] || { echo "cfi_record: needs xz" >&2; exit 1; }
OUT=$(mktemp -d /tmp/cfi_record.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

python3 - "$OUT/data" <<'EOF'
import random, sys
r = random.Random(1)
with open(sys.argv[1], "wb") as f:
    for _ in range(24):
        f.write(bytes(r.choice(b"abcdefghijklmnop") for _ in range(1 << 20)))
EOF

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
# one NAME UNWIND CFI FREQ COMMAND...: appends "NAME samples lost cpu_s us_per_sample"
one() {
  local name=$1 unwind=$2 cfi=$3 freq=$4
  shift 4
  ZXSAMPLER_CFI=$cfi "$ZXS" record --unwind "$unwind" -F "$freq" -o "$OUT/p.fxt" -- "$@" \
    >/dev/null 2>"$OUT/err" || { echo "cfi_record: $name failed" >&2; cat "$OUT/err" >&2; exit 1; }
  python3 - "$name" "$OUT/err" >>"$OUT/raw" <<'EOF'
import re, sys
text = open(sys.argv[2]).read()
samples = re.search(r"(\d+) samples of", text)
cpu = re.search(r"the recorder used ([0-9.]+) s of CPU \(([0-9.]+) us a sample\)", text)
lost = re.search(r"warning: (\d+) samples lost", text)
print(sys.argv[1], samples.group(1), lost.group(1) if lost else 0, cpu.group(1), cpu.group(2))
EOF
}

for ((r = 0; r < N; r++)); do
  for cfg in "own dwarf own" "libunwind dwarf libunwind" "fp fp own"; do
    read -r label unwind cfi <<<"$cfg"
    one "xz/$label" "$unwind" "$cfi" 1000 /usr/bin/xz -9 -T1 -c -k "$OUT/data"
    one "w8x32/$label" "$unwind" "$cfi" 4000 "$WORKLOAD" 8 32 1500
  done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$OUT/raw" "$N" "$LOAD_BEFORE" "$LOAD_AFTER" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print(f"zxsampler record, recorder CPU per sample: medians of {sys.argv[2]} rounds; "
      f"load average {sys.argv[3]} before, {sys.argv[4]} after\n")
print("| program | unwinder | samples kept | lost | recorder CPU | us a sample | vs libunwind |")
print("|---|---|---:|---:|---:|---:|---:|")
names = {"xz": "`xz -9 -T1` (1000/s)", "w8x32": "cfi_workload 8 threads x 32 deep (4000/s)"}
for prog in ("xz", "w8x32"):
    med = {}
    for label in ("own", "libunwind", "fp"):
        sel = [r for r in rows if r[0] == f"{prog}/{label}"]
        med[label] = [statistics.median(float(r[i]) for r in sel) for i in (1, 2, 3, 4)]
    for label in ("own", "libunwind", "fp"):
        s, lost, cpu, us = med[label]
        what = {"own": "CFI, own", "libunwind": "CFI, libunwind", "fp": "frame pointers"}[label]
        ratio = us / med["libunwind"][3] if med["libunwind"][3] > 0 else 0
        print(f"| {names[prog]} | {what} | {s:.0f} | {lost:.0f} | {cpu:.3f} s | {us:.1f} | {ratio:.2f}x |")
EOF
