#!/usr/bin/env bash
# `zxsampler record` names JIT code from the files JITs write for perf, read at record time:
#   - jit_target (our own tiny JIT): its function named in /tmp/perf-PID.map and the one named in
#     its jitdump file (found through the mapping of the dump) are each one row, in top, folded,
#     SVG and pprof, after the program and its perf map are gone;
#   - a perf map that is a symbolic link is refused;
#   - node --perf-basic-prof (where node is installed; CI installs Debian's nodejs): the hot JS
#     function is the hottest row, each of its V8 tiers one row, and nearly every sample in code
#     outside the modules is named;
#   - the same two programs under `record --in-process`: the library reads its own process's
#     perf map and mapped jitdump when it writes the trace.
#
#   test_record_jit.sh ZXSAMPLER JIT_TARGET
set -u

if [ $# -ne 2 ]; then
  echo "usage: $0 ZXSAMPLER JIT_TARGET" >&2
  exit 2
fi
ZXS=$(realpath "$1")  # (node runs in another directory)
TARGET=$2

# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"
# In a sanitizer build the preload library (--in-process) carries the sanitizer runtime.
sanitized=0
if ldd "$ZXS" 2>/dev/null | grep -q libasan; then
  export ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  sanitized=1
fi

# Rows of `report` (top) that name $2 in $1.
rows_naming() { grep -cF -- "$2" "$1"; }
# Samples of folded stacks whose leaf is $2.
leaf_samples() { awk -v name="$2" '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); if (f[k] == name) s += n } END { print s + 0 }' "$1"; }

# --- 1. Our own JIT: a perf map and a jitdump -------------------------------------------------

"$TARGET" "$T" 0 >"$T/probe.out"
if [ $? -eq 77 ]; then
  echo "SKIP: jit_target has no code for this architecture"
  exit 77
fi
rm -f "/tmp/perf-$(head -n 1 "$T/probe.out").map"

"$ZXS" record -o "$T/jit.fxt" -- "$TARGET" "$T" 2 >"$T/jit.out" 2>"$T/jit.err"
status=$?
check "record of jit_target exits 0 ($(tr '\n' ' ' <"$T/jit.err"))" [ $status -eq 0 ]
pid=$(head -n 1 "$T/jit.out")
check "jit_target wrote its perf map" [ -f "/tmp/perf-$pid.map" ]
check "jit_target wrote its jitdump" [ -f "$T/jit-$pid.dump" ]
# The names live in the trace: the files may go.
rm -f "/tmp/perf-$pid.map" "$T/jit-$pid.dump"

"$ZXS" report "$T/jit.fxt" >"$T/jit.txt" 2>&1
"$ZXS" report -f folded -o "$T/jit.folded" "$T/jit.fxt"
"$ZXS" report -f svg -o "$T/jit.svg" "$T/jit.fxt"
"$ZXS" report -f pprof -o "$T/jit.pb.gz" "$T/jit.fxt"
for name in hot_jit_perfmap hot_jit_dump; do
  check "top: $name is one row ($(rows_naming "$T/jit.txt" "$name") rows)" \
    [ "$(rows_naming "$T/jit.txt" "$name")" -eq 1 ]
  check "folded: $name is a leaf of samples ($(leaf_samples "$T/jit.folded" "$name"))" \
    [ "$(leaf_samples "$T/jit.folded" "$name")" -ge 50 ]
  check "svg: $name is named" grep -qF "$name" "$T/jit.svg"
  if command -v go >/dev/null 2>&1; then
    go tool pprof -top "$T/jit.pb.gz" >"$T/jit.pprof.txt" 2>&1
    check "pprof: $name is one row" [ "$(rows_naming "$T/jit.pprof.txt" "$name")" -eq 1 ]
  fi
done
# The JIT's samples are named: few leaves are bare addresses.
bare=$(awk '{ sub(/ [0-9]+$/, "", $0); n = split($0, f, ";"); if (f[n] ~ /^0x[0-9a-f]+$/) c++ } END { print c + 0 }' "$T/jit.folded")
check "folded: at most 2 stacks end in a bare address ($bare)" [ "$bare" -le 2 ]

# --- 2. A perf map that is a symbolic link is not read ----------------------------------------

"$ZXS" record -o "$T/link.fxt" -- "$TARGET" "$T" 1 symlink >"$T/link.out" 2>"$T/link.err"
status=$?
check "record of jit_target (symlink) exits 0" [ $status -eq 0 ]
pid=$(head -n 1 "$T/link.out")
rm -f "/tmp/perf-$pid.map" "$T/jit-$pid.dump" "$T/real.map"
"$ZXS" report "$T/link.fxt" >"$T/link.txt" 2>&1
check "a symlinked perf map is refused" [ "$(rows_naming "$T/link.txt" hot_jit_perfmap)" -eq 0 ]
check "the jitdump is still read" [ "$(rows_naming "$T/link.txt" hot_jit_dump)" -eq 1 ]

# --- 3. In process: the library writes the names with its trace -------------------------------

"$ZXS" record --in-process -q -o "$T/inproc.fxt" -- "$TARGET" "$T" 2 >"$T/inproc.out" 2>"$T/inproc.err"
status=$?
check "record --in-process of jit_target exits 0 ($(tr '\n' ' ' <"$T/inproc.err"))" [ $status -eq 0 ]
pid=$(head -n 1 "$T/inproc.out")
rm -f "/tmp/perf-$pid.map" "$T/jit-$pid.dump"
"$ZXS" report "$T/inproc.fxt" >"$T/inproc.txt" 2>&1
"$ZXS" report -f folded -o "$T/inproc.folded" "$T/inproc.fxt"
for name in hot_jit_perfmap hot_jit_dump; do
  check "in process: top: $name is one row ($(rows_naming "$T/inproc.txt" "$name") rows)" \
    [ "$(rows_naming "$T/inproc.txt" "$name")" -eq 1 ]
  check "in process: folded: $name is a leaf of samples ($(leaf_samples "$T/inproc.folded" "$name"))" \
    [ "$(leaf_samples "$T/inproc.folded" "$name")" -ge 50 ]
done

# --- 4. node --perf-basic-prof, out of process and in process ----------------------------------

# node_check LABEL RECORD_ARGS...: records node running hot.js and checks the names.
node_check() {
  local label=$1
  shift
  # (node writes a V8 log into its working directory: $T.)
  (cd "$T" && "$ZXS" record "$@" -o "$T/$label.fxt" -- node --perf-basic-prof "$T/hot.js" \
    >"$T/$label.out" 2>"$T/$label.err")
  local status=$?
  check "$label: record of node exits 0 ($(tr '\n' ' ' <"$T/$label.err"))" [ $status -eq 0 ]
  "$ZXS" report "$T/$label.fxt" >"$T/$label.txt" 2>&1
  local pid
  pid=$(sed -nE 's/^Process: .*\(pid ([0-9]+)\).*/\1/p' "$T/$label.txt" | head -n 1)
  rm -f "/tmp/perf-$pid.map"
  "$ZXS" report -f folded -o "$T/$label.folded" "$T/$label.fxt"
  # node 18 writes "LazyCompile:*hotFunction FILE:LINE", newer ones "JS:*hotFunction ...". V8
  # compiles the function several times: each tier (~ interpreted, ^ baseline, * optimized) is
  # its own name, and how many samples the early tiers catch depends on the machine's speed. So:
  # the hottest row is hotFunction, and no name is split over two rows (V8 writes several code
  # objects with the same name).
  local rows hottest
  rows=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /%$/ && /:[*~^]*hotFunction / { $1 = $2 = $3 = $4 = ""; print }' "$T/$label.txt")
  hottest=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /%$/ { print; exit }' "$T/$label.txt")
  check "$label: top: the hottest row is hotFunction ($hottest)" \
    grep -q ':[*~^]*hotFunction ' <<<"$hottest"
  check "$label: top: each name of hotFunction is one row ($(grep -c . <<<"$rows") rows)" \
    [ -z "$(sort <<<"$rows" | uniq -d)" ]
  # Leaves outside every module: named JIT code, or a bare address.
  local named bare
  read -r named bare < <(awk '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";");
      if (f[k] ~ /^(JS|LazyCompile|Function|Builtin|BytecodeHandler|Stub|RegExp|Eval|Script|Handler):/) j += n;
      else if (f[k] ~ /^0x[0-9a-f]+$/) b += n } END { print j + 0, b + 0 }' "$T/$label.folded")
  echo "$label: $named samples in named JIT code, $bare at bare addresses"
  check "$label: most JIT samples are named ($named named, $bare bare)" \
    [ "$named" -ge 100 ] && [ $((named * 10)) -ge $(((named + bare) * 9)) ]
}

if command -v node >/dev/null 2>&1; then
  cat >"$T/hot.js" <<'EOF'
function hotFunction(n) {
  let s = 0;
  for (let i = 0; i < n; i++) s = (s + i * i) % 1000003;
  return s;
}
let total = 0;
const end = Date.now() + 1500;
while (Date.now() < end) total += hotFunction(100000);
console.log(total > 0 ? "ok" : "no");
EOF
  node_check node
  # node crashes at start with the sanitized preload library (the sanitizer runtime loaded
  # after node's own libraries), profiling or not.
  if [ "$sanitized" = 1 ]; then
    echo "node in process skipped: the sanitized preload library does not load into node"
  else
    node_check node-inprocess --in-process -q
  fi
else
  echo "node not installed: its part skipped"
fi

finish
