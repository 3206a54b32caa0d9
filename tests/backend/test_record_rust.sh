#!/usr/bin/env bash
# Rust programs as their users build them (rustc -O -g; legacy and v0 symbol mangling):
# `zxsampler record` names every frame demangled (no `_R`, `_ZN`, `$LT$`, hash or `.llvm.`
# left) and shows inlined functions as frames of their own, with their own lines.
#
#   test_record_rust.sh ZXSAMPLER RUSTC SOURCE
#
# RUSTC is the compiler ("" when none: skipped), SOURCE tests/backend/rust_target.rs.
set -u

if [ $# -ne 3 ]; then
  echo "usage: $0 ZXSAMPLER RUSTC SOURCE" >&2
  exit 2
fi
ZXS=$1
RUSTC=$2
SOURCE=$3
if [ -z "$RUSTC" ] || ! "$RUSTC" --version >/dev/null 2>&1; then
  echo "SKIP: no rustc (Debian's rustc package)"
  exit 77
fi

# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"

# What a mangled name looks like in a report: v0 (`_RNv...`), legacy (`_ZN`, escapes, hash),
# ThinLTO's suffix.
raw_name='(^|[;( ])_R[A-Z]|_ZN|\$(LT|GT|RF|u[0-9a-f]+)\$|17h[0-9a-f]{16}E|::h[0-9a-f]{16}|\.llvm\.'

for mangling in legacy v0; do
  bin="$T/rust_$mangling"
  flags=(-O -g)  # legacy: rustc's default
  [ $mangling = v0 ] && flags+=(-C symbol-mangling-version=v0)
  if ! "$RUSTC" "${flags[@]}" -o "$bin" "$SOURCE" 2>"$T/rustc.err"; then
    fail "rustc ${flags[*]} builds the program: $(cat "$T/rustc.err")"
    continue
  fi
  check "$mangling: record runs the program" \
    "$ZXS" record -o "$T/$mangling.fxt" -- "$bin" 1 >"$T/$mangling.out" 2>"$T/$mangling.err"
  "$ZXS" report "$T/$mangling.fxt" >"$T/$mangling.txt" 2>&1
  "$ZXS" report -f folded "$T/$mangling.fxt" >"$T/$mangling.folded" 2>&1
  check "$mangling: samples in the profile" grep -qE '^Samples: [1-9]' "$T/$mangling.txt"

  # Names: the trait impl, the generic function and its closure, std's generic code.
  check "$mangling: no mangled name left ($(grep -oE ".{0,40}($raw_name).{0,20}" "$T/$mangling.folded" | head -n 2))" \
    bash -c "! grep -qE '$raw_name' '$T/$mangling.folded' '$T/$mangling.txt'"
  check "$mangling: the trait impl reads <rust_target::Xorshift as rust_target::Kernel>::run" \
    grep -qF '<rust_target::Xorshift as rust_target::Kernel>::run' "$T/$mangling.folded"
  check "$mangling: rust_target::main and rust_target::apply named" \
    bash -c "grep -qF 'rust_target::main;' '$T/$mangling.folded' && grep -qF 'rust_target::apply' '$T/$mangling.folded'"
  if [ $mangling = v0 ]; then
    check "v0: generics and closures in full: rust_target::apply::<rust_target::main::{closure#N}>" \
      grep -qE 'rust_target::apply::<rust_target::main::\{closure#[0-9]+\}>' "$T/v0.folded"
  else
    check "legacy: the closure reads rust_target::main::{{closure}}" \
      grep -qF 'rust_target::main::{{closure}}' "$T/legacy.folded"
  fi

  # Inline frames: mix_step (#[inline(always)]) under the trait impl that it is inlined into,
  # and std's inlined iterator code; stacks as deep as addr2line -i would make them.
  check "$mangling: the inlined mix_step is a frame under run" \
    grep -qF 'Kernel>::run;rust_target::mix_step (inlined)' "$T/$mangling.folded"
  inline_per_sample=$(awk '{ n = $NF; samples += n; $NF = ""; inl += n * gsub(/ \(inlined\)/, "") }
                           END { if (samples) printf "%d", inl / samples; else print 0 }' \
                        "$T/$mangling.folded")
  check "$mangling: several inline frames per sample (got $inline_per_sample)" \
    [ "$inline_per_sample" -ge 3 ]
done

# The inlined callee's lines are its own (pprof Line entries), not its caller's.
if command -v go >/dev/null && [ -s "$T/legacy.fxt" ]; then
  "$ZXS" report -f pprof -o "$T/legacy.pb" "$T/legacy.fxt"
  go tool pprof -lines -top "$T/legacy.pb" >"$T/lines.txt" 2>&1
  # mix_step's body is lines 15-21 of rust_target.rs
  check "pprof: mix_step's samples at its own lines ($(grep -m1 mix_step "$T/lines.txt"))" \
    grep -qE 'rust_target::mix_step .*rust_target\.rs:(1[5-9]|2[01]) \(inline\)' "$T/lines.txt"
fi

finish
