#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (-fsanitize=fuzzer,address,undefined) straight from the
# sources (core + fake backend, no meson needed) and runs each for SECONDS, then merges the inputs
# that add coverage into the committed corpus (tests/fuzz/corpus/<target>/). A crash is minimized
# and saved under tests/fuzz/crashes/ (outside the replay corpus) for a human to look at.
#
#   tests/fuzz/run_fuzzers.sh [SECONDS] [TARGET...]    # default 60 s, all targets
#   tests/fuzz/run_fuzzers.sh --seeds                  # rebuild make_seeds, rewrite the seeds
#
# Environment: CC (default clang-14, else clang), BUILD_DIR (default build-fuzz in the repo),
# JOBS (fuzzers run at once, default 2), FUZZ_ARGS (extra libFuzzer flags), NO_MERGE=1 (leave the
# committed corpus alone).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${BUILD_DIR:-$repo/build-fuzz}"
jobs="${JOBS:-2}"
if [[ -z "${CC:-}" ]]; then
  CC=clang
  command -v clang-14 >/dev/null && CC=clang-14
fi

# target name -> corpus directory
declare -A corpus_of=([region_reader]=region [trace_reader]=trace [sampler_api]=api
                      [perfmon_reader]=perfmon [alert_reader]=alert [recorder_api]=recorder
                      [demangle]=demangle)

mkdir -p "$build/cfg"
# The configuration header meson would generate (sampling compiled in, no libunwind, no libdw),
# with the project's version from meson.build.
version=$(sed -n "s/^  version: '\([0-9]*\.[0-9]*\.[0-9]*\)',$/\1/p" "$repo/meson.build" | head -1)
[[ -n $version ]] || { echo "run_fuzzers: no version in meson.build" >&2; exit 1; }
IFS=. read -r major minor patch <<<"$version"
cat >"$build/cfg/zxs_config.h" <<EOF
#define ZXS_SAMPLER_ENABLED 1
#define ZXS_HAVE_LIBUNWIND 0
#define ZXS_HAVE_LIBDW 0
#define ZXS_VERSION "$version"
#define ZXS_PROJECT_VERSION_MAJOR $major
#define ZXS_PROJECT_VERSION_MINOR $minor
#define ZXS_PROJECT_VERSION_PATCH $patch
EOF

common=(-std=c11 -g -O1 -fno-omit-frame-pointer -I"$repo/include" -I"$repo/src/core"
        -I"$repo/src/perfmon" -I"$repo/src/backend/fake" -I"$build/cfg")
lib_sources=("$repo"/src/core/*.c "$repo"/src/perfmon/*.c "$repo/src/backend/fake/fake_platform.c")
# The targets over the library's features (the trace reader into a profile, the recorder) also
# build those (no libdw, no C++ demangler).
feature_flags=(-I"$repo/src/trace" -I"$repo/src/symbolize" -I"$repo/src/util" -I"$repo/src/recorder"
               -DZXS_HAVE_CXA_DEMANGLE=0)
feature_sources=("$repo"/src/trace/*.c "$repo"/src/symbolize/*.c)
declare -A extra_of=([alert_reader]="" [recorder_api]="$repo/src/recorder/recorder.c" [demangle]="")

if [[ "${1:-}" == "--seeds" ]]; then
  "$CC" "${common[@]}" -fsanitize=address,undefined "$here/make_seeds.c" "${lib_sources[@]}" \
    -lpthread -o "$build/make_seeds"
  for d in region trace api perfmon alert recorder demangle; do mkdir -p "$here/corpus/$d"; done
  "$build/make_seeds" "$here/corpus"
  echo "seeds written under $here/corpus"
  exit 0
fi

seconds="${1:-60}"
shift || true
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(region_reader trace_reader sampler_api perfmon_reader
                                       alert_reader recorder_api demangle)

for t in "${targets[@]}"; do
  [[ -n "${corpus_of[$t]:-}" ]] || { echo "unknown target: $t" >&2; exit 2; }
  echo "building fuzz_$t"
  extra=()
  if [[ -n "${extra_of[$t]+set}" ]]; then
    extra=("${feature_flags[@]}" "${feature_sources[@]}")
    [[ -n "${extra_of[$t]}" ]] && extra+=("${extra_of[$t]}")
  fi
  "$CC" "${common[@]}" -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    "$here/fuzz_$t.c" "${lib_sources[@]}" "${extra[@]}" -lpthread -ldl -o "$build/fuzz_$t"
done

# Rebuilds a committed corpus: its named seeds stay; libFuzzer's finds (named by their SHA-1)
# are re-chosen from the old ones and the new scratch inputs, edges only (no hit-count buckets),
# so the corpus stays small however often this runs.
merge_corpus() {
  local t="$1" committed="$2" scratch="$3" log="$4"
  local fresh="$build/merge/$t"
  rm -rf "$fresh"
  mkdir -p "$fresh"
  local hash=(-regextype posix-extended -regex '.*/[0-9a-f]{40}')
  find "$committed" -maxdepth 1 -type f -regextype posix-extended ! -regex '.*/[0-9a-f]{40}' \
    -exec cp {} "$fresh/" \;
  "$build/fuzz_$t" -merge=1 -use_counters=0 "$fresh" "$committed" "$scratch" >"$log" 2>&1
  grep -E 'MERGE-OUTER: [0-9]+ new files' "$log" | sed "s/^/[$t] /" || true
  find "$committed" -maxdepth 1 -type f "${hash[@]}" -delete
  find "$fresh" -maxdepth 1 -type f "${hash[@]}" -exec cp {} "$committed/" \;
}

# Runs one target: fuzz into a scratch corpus (the committed one is read too), then merge.
run_one() {
  local t="$1"
  local committed="$here/corpus/${corpus_of[$t]}"
  local scratch="$build/scratch/$t"
  local artifacts="$build/artifacts/$t"
  local log="$build/fuzz_$t.log"
  rm -rf "$artifacts"  # earlier runs' crashes were saved already: report only this run's
  mkdir -p "$committed" "$scratch" "$artifacts"
  local rc=0
  # shellcheck disable=SC2086
  "$build/fuzz_$t" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" ${FUZZ_ARGS:-} "$scratch" "$committed" >"$log" 2>&1 || rc=$?
  grep -E '^#[0-9]+[[:space:]]+DONE|^stat::' "$log" | sed "s/^/[$t] /" || true
  if [[ $rc -ne 0 ]]; then
    echo "[$t] FAILED (exit $rc), log: $log" >&2
    mkdir -p "$here/crashes"
    for a in "$artifacts"/crash-* "$artifacts"/leak-* "$artifacts"/timeout-* "$artifacts"/oom-*; do
      [[ -e "$a" ]] || continue
      local base
      base="$(basename "$a")"
      "$build/fuzz_$t" -minimize_crash=1 -runs=20000 -exact_artifact_path="$artifacts/min-$base" \
        "$a" >"$log.minimize" 2>&1 || true
      local keep="$a"
      [[ -s "$artifacts/min-$base" ]] && keep="$artifacts/min-$base"
      cp "$keep" "$here/crashes/$t-$base"
      echo "[$t] saved $here/crashes/$t-$base" >&2
    done
    return 1
  fi
  [[ "${NO_MERGE:-0}" == 1 ]] || merge_corpus "$t" "$committed" "$scratch" "$log.merge"
  echo "[$t] corpus: $(find "$committed" -type f | wc -l) files," \
       "$(find "$committed" -type f -exec cat {} + | wc -c) bytes"
}

status=0
running=0
for t in "${targets[@]}"; do
  if [[ $running -ge $jobs ]]; then
    wait -n || status=1
    running=$((running - 1))
  fi
  run_one "$t" &
  running=$((running + 1))
done
while [[ $running -gt 0 ]]; do
  wait -n || status=1
  running=$((running - 1))
done
exit $status
