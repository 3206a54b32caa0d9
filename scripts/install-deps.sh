#!/usr/bin/env bash
# Installs the Debian 12 packages the build, the tests and the demo need (as root). Does
# nothing when they are all there already.
set -euo pipefail
# Build: compilers, meson, ninja, cmocka, zlib; optional: libunwind, libdw (file:line);
# clang-format (CI checks the tree's format).
# Independent consumers the tests check our formats with: go tool pprof, xmllint,
# llvm-symbolizer 16 (--filter-markup); spin for the protocol model; clang and its sanitizer
# runtimes (libclang-rt-14-dev, only a Recommends of clang) for TSan; debuginfod
# (a server the tests start on 127.0.0.1, and the client library libdw loads); lld-14's ld64.lld
# links the Mach-O dylib the symbolizer's macOS test reads; aarch64's C library headers stand in
# for Fuchsia's when the Fuchsia backend is compiled for aarch64-unknown-fuchsia, and lld
# (ld.lld) with llvm (llvm-ar) link and archive that build (scripts/check-fuchsia-compile.sh,
# cross/fuchsia-*.ini); valgrind (the
# memcheck stress test) and linux-perf (perfmon's counts checked against `perf stat`; the
# benchmarks compare with `perf record`); setpriv (util-linux) runs record's unprivileged
# checks and ps (procps) reads process groups in its process-tree test; nodejs (node
# --perf-basic-prof) is the JIT whose perf map record's JIT test reads; rustc builds the Rust
# program whose names (demangled) and inline frames record's Rust test checks.
packages=(build-essential g++ clang clang-format pkg-config meson ninja-build libcmocka-dev zlib1g-dev
          libunwind-dev libdw-dev golang-go libxml2-utils llvm-16 spin debuginfod lld-14 libclang-rt-14-dev
          libc6-dev-arm64-cross lld llvm valgrind linux-perf util-linux procps nodejs rustc)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
