#!/usr/bin/env bash
# Symbolizes our markup export with LLVM's own reader, `llvm-symbolizer --filter-markup`
# (LLVM >= 15; Debian 12: llvm-15 or llvm-16): a sample of test_export_write_markup must come
# back as its two known functions.
#   check_markup_with_llvm.sh PATH/TO/test_export_write_markup
# Exits 77 (skipped) when no llvm-symbolizer with --filter-markup is installed.
set -euo pipefail

writer=${1:?usage: $0 PATH/TO/test_export_write_markup}

symbolizer=""
for candidate in llvm-symbolizer-19 llvm-symbolizer-18 llvm-symbolizer-17 llvm-symbolizer-16 \
  llvm-symbolizer-15 /usr/lib/llvm-{19,18,17,16,15}/bin/llvm-symbolizer llvm-symbolizer; do
  # (help text read whole: grep -q closing the pipe early would fail it under pipefail)
  if command -v "$candidate" >/dev/null 2>&1 &&
    [[ "$("$candidate" --help 2>/dev/null || true)" == *--filter-markup* ]]; then
    symbolizer=$candidate
    break
  fi
done
if [ -z "$symbolizer" ]; then
  echo "SKIP: no llvm-symbolizer with --filter-markup (install llvm-16 or llvm-15)"
  exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset DEBUGINFOD_URLS  # never look anything up on the network

status=0
build_id=$("$writer" "$tmp/markup.txt") || status=$?
if [ "$status" -eq 3 ]; then
  echo "SKIP: the test binary was linked without a build ID"
  exit 77
elif [ "$status" -ne 0 ]; then
  echo "FAIL: $writer exited with $status"
  exit 1
fi
# The symbolizer finds binaries by build ID under DIR/.build-id/xx/rest.debug.
mkdir -p "$tmp/debug/.build-id/${build_id:0:2}"
ln -s "$(readlink -f "$writer")" "$tmp/debug/.build-id/${build_id:0:2}/${build_id:2}.debug"

"$symbolizer" --filter-markup --debug-file-directory="$tmp/debug" <"$tmp/markup.txt" \
  >"$tmp/out.txt" 2>"$tmp/err.txt" || true
echo "--- $symbolizer --filter-markup (input: $(wc -l <"$tmp/markup.txt") lines)"
grep -v '^\[\[\[ELF module' "$tmp/out.txt" || true

failures=0
if ! grep -Eq '^ +#0 +0x[0-9a-f]+ +(in )?zxs_export_test_leaf( |$)' "$tmp/out.txt"; then
  echo "FAIL: frame 0 is not zxs_export_test_leaf"
  failures=$((failures + 1))
fi
if ! grep -Eq '^ +#1 +0x[0-9a-f]+ +(in )?zxs_export_test_caller( |$)' "$tmp/out.txt"; then
  echo "FAIL: frame 1 is not zxs_export_test_caller"
  failures=$((failures + 1))
fi
if ! grep -Eq '^pid:[0-9]+ tid:1$' "$tmp/out.txt"; then
  echo "FAIL: the sample's pid/tid line did not pass through"
  failures=$((failures + 1))
fi
if [ "$failures" -ne 0 ]; then
  echo "--- markup"
  cat "$tmp/markup.txt"
  echo "--- stderr"
  cat "$tmp/err.txt"
  echo "check_markup_with_llvm: $failures check(s) failed"
  exit 1
fi
echo "check_markup_with_llvm: all checks passed"
