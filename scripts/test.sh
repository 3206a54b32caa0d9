#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors and runs every test suite.
# Used by the README and by CI.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
[ -d build ] || meson setup build -Dwerror=true >/dev/null
meson test -C build --print-errorlogs --num-processes 2
