#!/usr/bin/env bash
# Reads our pprof export with Go's own pprof (`go tool pprof`): the hand-built profile of
# test_export_fixture.h must show its function names, counts, labels and mappings; with a
# second argument, the inline frames of test_inline_frames' profile must show as Go reads them.
#   check_pprof_with_go.sh PATH/TO/test_export_write_pprof [PATH/TO/test_inline_frames]
# Exits 77 (skipped) when `go` is not installed (Debian: golang-go). Works offline: everything
# Go might write or fetch is pointed at a temporary directory and the module proxy is off.
set -euo pipefail

writer=${1:?usage: $0 PATH/TO/test_export_write_pprof}
if ! command -v go >/dev/null 2>&1; then
  echo "SKIP: go is not installed"
  exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME="$tmp" GOPATH="$tmp/go" GOCACHE="$tmp/cache" GOFLAGS="" GOPROXY=off \
  GOTOOLCHAIN=local GOTELEMETRY=off PPROF_TMPDIR="$tmp" PPROF_BINARY_PATH="$tmp/none"
unset DEBUGINFOD_URLS

"$writer" "$tmp/profile.pb.gz"

failures=0
# expect NAME FILE REGEX: the output must have a line matching the extended regex.
expect() {
  if ! grep -Eq -- "$3" "$2"; then
    echo "FAIL ($1): no line matching: $3"
    failures=$((failures + 1))
  fi
}

go tool pprof -top -nodecount=20 "$tmp/profile.pb.gz" >"$tmp/top.txt" 2>"$tmp/top.err"
echo "--- go tool pprof -top -nodecount=20"
cat "$tmp/top.txt"
expect top "$tmp/top.txt" '^Type: cpu$'
expect top "$tmp/top.txt" '^Duration: 7ms, Total samples = 7ms \( *100%\)$'
expect top "$tmp/top.txt" '^Build ID: abcdef0123456789$'
# flat flat% sum% cum cum% name (pprof shows leaf<a&b> as "leaf": it drops template arguments)
expect top "$tmp/top.txt" '^ +4ms +57\.14% +57\.14% +4ms +57\.14% +leaf$'
expect top "$tmp/top.txt" '^ +1ms +14\.29% .* +1ms +14\.29% +foo_work$'
expect top "$tmp/top.txt" '^ +0 +0% .* +4ms +57\.14% +compute$'
expect top "$tmp/top.txt" '^ +0 +0% .* +6ms +85\.71% +main$'

go tool pprof -top -nodecount=20 -sample_index=samples "$tmp/profile.pb.gz" \
  >"$tmp/counts.txt" 2>/dev/null
echo "--- go tool pprof -top -nodecount=20 -sample_index=samples"
cat "$tmp/counts.txt"
expect counts "$tmp/counts.txt" '^Type: samples$'
expect counts "$tmp/counts.txt" '^ +4 +57\.14% +57\.14% +4 +57\.14% +leaf$'
expect counts "$tmp/counts.txt" '^ +0 +0% .* +6 +85\.71% +main$'

go tool pprof -raw "$tmp/profile.pb.gz" >"$tmp/raw.txt" 2>/dev/null
echo "--- go tool pprof -raw"
cat "$tmp/raw.txt"
expect raw "$tmp/raw.txt" '^samples/count cpu/nanoseconds\[dflt\]$'
expect raw "$tmp/raw.txt" '^Period: 1000000$'
expect raw "$tmp/raw.txt" '^ +2 +2000000: 1 2 3 $'
expect raw "$tmp/raw.txt" 'thread_name:\[main\]'
expect raw "$tmp/raw.txt" 'pid:\[100\] thread:\[101\]'
expect raw "$tmp/raw.txt" 'thread:\[103\]'
# Return addresses point into the call (address - 1); frame 0 is exact.
expect raw "$tmp/raw.txt" '^ +1: 0x555500001300 M=1 leaf app\.c:30 '
expect raw "$tmp/raw.txt" '^ +3: 0x555500001104 M=1 main app\.c:10 '
expect raw "$tmp/raw.txt" '^ +7: 0x7f0000001010 M=2 foo_work foo\.c:5 '
expect raw "$tmp/raw.txt" '^1: 0x555500001000/0x555500003000/0x1000 /usr/bin/app abcdef0123456789 \[FN\]\[FL\]\[LN\]$'
expect raw "$tmp/raw.txt" '^2: 0x7f0000001000/0x7f0000002000/0x1000 /lib/libfoo\.so 101112131415161718191a1b1c1d1e1f20212223 \[FN\]'
# A module whose functions we named says so, so go pprof shows our names, not the mapping's.
expect top "$tmp/top.txt" ' foo_work$'

# One Location with a Line per function, innermost first, each with its own line; the mapping
# says it has inline frames; -top marks the inlined ones. (No frames listed: built without libdw.)
inline_writer=${2:-}
if [ -n "$inline_writer" ]; then
  "$inline_writer" "$tmp/inline.pb.gz" >"$tmp/inline.expect"
  go tool pprof -raw "$tmp/inline.pb.gz" >"$tmp/inline.raw" 2>/dev/null
  go tool pprof -top "$tmp/inline.pb.gz" >"$tmp/inline.top" 2>/dev/null
  echo "--- go tool pprof -raw (inline frames)"
  cat "$tmp/inline.raw"
  mapfile -t frames <"$tmp/inline.expect"
  if [ "${#frames[@]}" -gt 1 ]; then
    # The location's first line, then the others, each "NAME FILE:LINE s=0".
    read -r name line <<<"${frames[0]}"
    grep -E -A $((${#frames[@]} - 1)) -- ": 0x[0-9a-f]+ M=1 $name [^ ]*inline_code\.c:$line s=0$" \
      "$tmp/inline.raw" >"$tmp/inline.found" || true
    for k in "${!frames[@]}"; do
      read -r name line <<<"${frames[$k]}"
      if ! sed -n "$((k + 1))p" "$tmp/inline.found" |
        grep -Eq -- " $name [^ ]*inline_code\.c:$line s=0$"; then
        echo "FAIL (inline raw): line $((k + 1)) of the location is not $name at line $line"
        failures=$((failures + 1))
      fi
    done
    expect inline "$tmp/inline.raw" '^1: .*test_inline_frames .*\[IN\]$'
    expect inline "$tmp/inline.top" ' inline_inner \(inline\)$'
    expect inline "$tmp/inline.top" ' inline_middle \(inline\)$'
  fi
fi

if [ "$failures" -ne 0 ]; then
  echo "--- stderr of go tool pprof -top"
  cat "$tmp/top.err"
  echo "check_pprof_with_go: $failures check(s) failed"
  exit 1
fi
echo "check_pprof_with_go: all checks passed"
