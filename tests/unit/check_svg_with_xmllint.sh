#!/usr/bin/env bash
# Checks that our flame graph is well-formed XML, with xmllint (Debian: libxml2-utils).
#   check_svg_with_xmllint.sh PATH/TO/test_export_write_pprof
# Exits 77 (skipped) when xmllint is not installed.
set -euo pipefail

writer=${1:?usage: $0 PATH/TO/test_export_write_pprof}
if ! command -v xmllint >/dev/null 2>&1; then
  echo "SKIP: xmllint is not installed"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$writer" "$tmp/flame.svg" svg
# --nonet: the SVG must need nothing from outside.
xmllint --noout --nonet "$tmp/flame.svg"
echo "check_svg_with_xmllint: all checks passed"
