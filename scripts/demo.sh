#!/usr/bin/env bash
# Installs what is missing, builds, and profiles the demo workload: a program that samples its
# own threads through the Fuchsia calls and prints where their time went.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
[ -d build ] || meson setup build -Dwerror=true >/dev/null
meson compile -C build >/dev/null
./build/examples/profile_self "$@"
