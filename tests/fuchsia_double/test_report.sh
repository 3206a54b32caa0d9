#!/usr/bin/env bash
# `zxsampler report` (built for the Fuchsia backend) on a trace that backend wrote over the
# double: the top functions name the program's hot loop, and every format converts.
# Usage: test_report.sh ZXSAMPLER FX_RECORD (run in the directory of FX_RECORD, whose process
# name is the main module's path in the trace, as on Fuchsia).
set -euo pipefail
zxsampler=$(realpath "$1")
fx_record=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$fx_record" "$tmp/trace.fxt"
"$zxsampler" report "$tmp/trace.fxt" >"$tmp/top.txt"
grep -q 'fx_record_hot_loop' "$tmp/top.txt" || {
  echo "top report does not name fx_record_hot_loop:"
  cat "$tmp/top.txt"
  exit 1
}
for format in pprof folded svg markup fxt; do
  "$zxsampler" report -f "$format" -o "$tmp/out.$format" "$tmp/trace.fxt"
  [ -s "$tmp/out.$format" ] || { echo "empty $format output"; exit 1; }
done
grep -q 'fx_record_hot_loop' "$tmp/out.folded"
echo "ok: zxsampler report on a Fuchsia-backend trace"
