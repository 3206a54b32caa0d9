#!/usr/bin/env bash
# Modules without a GNU build ID and code mapped a second time are named (issue 27, items 1
# and 4), in every format, on programs built the default way:
#   - Go: `go build` (only Go's build ID note) and `go build -ldflags=-buildid=` (no ID at all):
#     report, folded, pprof (read by `go tool pprof`) and markup (read by llvm-symbolizer) name
#     main.spin and main.main;
#   - C linked with -Wl,--build-id=none: main and remapped_spin named;
#   - remap_target, which runs remapped_spin through a second mapping of its own file at an
#     offset inside the text segment: the samples there are named remapped_spin, by `record` and
#     by `record --in-process` (the library's own module capture).
#
#   test_record_names.sh ZXSAMPLER GO_SOURCE_DIR REMAP_TARGET REMAP_TARGET_NOID
#
# The Go checks are skipped without `go` (Debian: golang-go), the markup ones without an
# llvm-symbolizer with --filter-markup (llvm-16). Works offline.
set -u

if [ $# -ne 4 ]; then
  echo "usage: $0 ZXSAMPLER GO_SOURCE_DIR REMAP_TARGET REMAP_TARGET_NOID" >&2
  exit 2
fi
ZXS=$1
GO_SOURCE=$2
REMAP=$3
REMAP_NOID=$4

if ldd "$ZXS" 2>/dev/null | grep -q libasan; then
  export ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
fi

# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"
unset DEBUGINFOD_URLS  # never look anything up on the network

symbolizer=""
for candidate in llvm-symbolizer-19 llvm-symbolizer-18 llvm-symbolizer-17 llvm-symbolizer-16 \
  llvm-symbolizer-15 llvm-symbolizer; do
  if command -v "$candidate" >/dev/null 2>&1 &&
    [[ "$("$candidate" --help 2>/dev/null || true)" == *--filter-markup* ]]; then
    symbolizer=$candidate
    break
  fi
done

# Shares of samples (percent, integer) from a folded file: leaf frames that are bare addresses,
# and stacks whose leaf is the function NAME.
unnamed_leaf_share() {
  awk '{c = $NF; sub(/ [0-9]+$/, ""); n = split($0, f, ";"); t += c; if (f[n] ~ /^0x[0-9a-f]+$/) u += c}
       END {print (t > 0 ? int(100 * u / t) : 100)}' "$1"
}
leaf_share() {
  awk -v name="$2" '{c = $NF; sub(/ [0-9]+$/, ""); n = split($0, f, ";"); t += c; if (f[n] == name) k += c}
       END {print (t > 0 ? int(100 * k / t) : 0)}' "$1"
}

# record_named NAME PROGRAM ARGS...: records with $record_args (--user-only unless changed) into
# $T/NAME.fxt, then writes its report, folded and markup forms beside it.
record_args=(-q --user-only)
record_named() {
  local name=$1
  shift
  if ! "$ZXS" record "${record_args[@]}" -o "$T/$name.fxt" -- "$@" >"$T/$name.out" 2>"$T/$name.err"; then
    fail "$name: record failed: $(tr '\n' ' ' <"$T/$name.err")"
    return 1
  fi
  "$ZXS" report "$T/$name.fxt" >"$T/$name.txt" 2>&1
  "$ZXS" report -f folded -o "$T/$name.folded" "$T/$name.fxt"
  "$ZXS" report -f markup -o "$T/$name.markup" "$T/$name.fxt"
}

# markup_names NAME: the markup symbolized by llvm-symbolizer, which finds modules by build ID
# only: one link per module under $T/NAME.ids/.build-id/.
markup_names() {
  local name=$1 id path
  sed -n 's/^{{{module:[0-9]*:\(\/[^:]*\):elf:\([0-9a-f]*\)}}}$/\2 \1/p' "$T/$name.markup" |
    while read -r id path; do
      mkdir -p "$T/$name.ids/.build-id/${id:0:2}"
      ln -sf "$path" "$T/$name.ids/.build-id/${id:0:2}/${id:2}.debug"
    done
  "$symbolizer" --filter-markup --debug-file-directory="$T/$name.ids" <"$T/$name.markup" \
    >"$T/$name.symbolized" 2>/dev/null || true
}

# check_names NAME PROGRAM LEAF CALLER: the profile names LEAF (mostly as the leaf) and CALLER in
# the report, folded and markup forms; the module of PROGRAM has an ID in the markup. CALLER may
# be one frame further out than LEAF's caller: a frame-pointer walk from a leaf that keeps no
# frame (Go's, which has no .eh_frame) skips the frame in between.
check_names() {
  local name=$1 program=$2 leaf=$3 caller=$4
  check "$name: report names $leaf ($(sed -n '/Self/,+1p' "$T/$name.txt" | tail -n 1))" \
    grep -qE " $leaf\$" "$T/$name.txt"
  check "$name: report names $caller" grep -qE " $caller\$" "$T/$name.txt"
  local unnamed share
  unnamed=$(unnamed_leaf_share "$T/$name.folded")
  share=$(leaf_share "$T/$name.folded" "$leaf")
  check "$name: at most 5% of leaf frames unnamed in folded (got $unnamed%)" [ "$unnamed" -le 5 ]
  check "$name: $leaf is the leaf of most samples in folded (got $share%)" [ "$share" -ge 50 ]
  check "$name: folded stacks go through $caller to $leaf" \
    grep -qE "(^|;)$caller;([^;]*;)?$leaf [0-9]+\$" "$T/$name.folded"
  check "$name: the markup has a module for $program" \
    grep -qE "^\{\{\{module:[0-9]+:$program:elf:[0-9a-f]{32,}\}\}\}$" "$T/$name.markup"
  if [ -n "$symbolizer" ]; then
    markup_names "$name"
    check "$name: $symbolizer --filter-markup names $leaf" \
      grep -qE "^ +#0 +0x[0-9a-f]+ +(in )?$leaf " "$T/$name.symbolized"
  fi
}

# --- Code mapped again at an offset inside its segment (item 4) ----------------------------------

for target in "$REMAP" "$REMAP_NOID"; do
  name=$(basename "$target")
  record_named "$name" "$target" 1 || continue
  check "$name: the program ran through its second mapping ($(cat "$T/$name.out"))" \
    grep -q '^remapped: ' "$T/$name.out"
  check_names "$name" "$(readlink -f "$target")" remapped_spin main
done
# The remapped copy is a module of its own (one segment at the mapping's file offset), the
# program's own mapping another.
remap_path=$(readlink -f "$REMAP")
check "remap_target: the markup has two modules of $remap_path" \
  [ "$(grep -c "^{{{module:[0-9]*:$remap_path:elf:" "$T/$(basename "$REMAP").markup")" -eq 2 ]
check "remap_target: the copy starts inside the text segment ($(cat "$T/$(basename "$REMAP").out"))" \
  grep -q '^remapped: 0x[0-9a-f]* (inside the segment at ' "$T/$(basename "$REMAP").out"
check "remap_target_noid: linked without a GNU build ID" \
  bash -c "! readelf -n '$REMAP_NOID' 2>/dev/null | grep -q NT_GNU_BUILD_ID"

# In process (record --in-process: the library's module capture). A frame-pointer walk from the
# frameless leaf goes past main to its caller.
record_args=(--in-process -q)
for target in "$REMAP" "$REMAP_NOID"; do
  name=inprocess-$(basename "$target")
  record_named "$name" "$target" 1 || continue
  check "$name: the program ran through its second mapping ($(cat "$T/$name.out"))" \
    grep -q '^remapped: ' "$T/$name.out"
  check_names "$name" "$(readlink -f "$target")" remapped_spin __libc_start_call_main
  check "$name: the markup has two modules of $(readlink -f "$target")" \
    [ "$(grep -c "^{{{module:[0-9]*:$(readlink -f "$target"):elf:" "$T/$name.markup")" -eq 2 ]
done
record_args=(-q --user-only)

# --- Go, built the default way (item 1) -----------------------------------------------------------

if ! command -v go >/dev/null 2>&1; then
  echo "SKIP: the Go checks (go is not installed; Debian: golang-go)"
else
  export HOME="$T" GOPATH="$T/go" GOCACHE="$T/go-cache" GOFLAGS="" GOPROXY=off GOTOOLCHAIN=local \
    GOTELEMETRY=off PPROF_TMPDIR="$T" PPROF_BINARY_PATH="$T/none"
  (cd "$GO_SOURCE" && go build -o "$T/go_target" main.go) >"$T/go-build.err" 2>&1
  (cd "$GO_SOURCE" && go build -ldflags=-buildid= -o "$T/go_target_noid" main.go) \
    >>"$T/go-build.err" 2>&1
  check "go build: both builds ($(tr '\n' ' ' <"$T/go-build.err"))" \
    test -x "$T/go_target" -a -x "$T/go_target_noid"
  check "go_target: no GNU build ID, as go build writes by default" \
    bash -c "! readelf -n '$T/go_target' | grep -q NT_GNU_BUILD_ID && readelf -n '$T/go_target' | grep -q 'Go '"
  for name in go_target go_target_noid; do
    [ -x "$T/$name" ] || continue
    record_named "$name" "$T/$name" 1 || continue
    check_names "$name" "$T/$name" main.spin main.main
    "$ZXS" report -f pprof -o "$T/$name.pb.gz" "$T/$name.fxt"
    go tool pprof -top -nodecount=10 "$T/$name.pb.gz" >"$T/$name.pprof" 2>"$T/$name.pprof.err"
    check "$name: go tool pprof -top names main.spin first ($(sed -n '/flat%/,+1p' "$T/$name.pprof" | tail -n 1))" \
      bash -c "sed -n '/flat%/,+1p' '$T/$name.pprof' | tail -n 1 | grep -qE ' main\.spin\$'"
    check "$name: go tool pprof shows no <unknown>" bash -c "! grep -q '<unknown>' '$T/$name.pprof'"
  done
fi

finish
