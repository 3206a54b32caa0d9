#!/usr/bin/env bash
# Kernel frames are marked as perf marks them: "_[k]" in folded stacks and the flame graph
# (stackcollapse-perf.pl --kernel), " [k]" in the top report; user frames never are.
#
#   test_kernel_marks.sh ZXSAMPLER
#
# Records dd copying one byte at a time (two system calls per byte: kernel time). Skips (77)
# where the host gives no kernel stacks (not root, no CAP_PERFMON, perf_event_paranoid >= 2).
set -u

if [ $# -ne 1 ]; then
  echo "usage: $0 ZXSAMPLER" >&2
  exit 2
fi
ZXS=$1

# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"

# (no LeakSanitizer in a sanitizer build: its tracer process at exit is sampled too)
ASAN_OPTIONS=detect_leaks=0 "$ZXS" record -o "$T/dd.fxt" -- \
  dd if=/dev/zero of=/dev/null bs=1 count=2000000 >/dev/null 2>"$T/record.err"
if ! grep -q '(user and kernel)' "$T/record.err"; then
  echo "SKIP: this host gives no kernel stacks ($(tr '\n' ' ' <"$T/record.err"))"
  exit 77
fi

"$ZXS" report -f folded "$T/dd.fxt" >"$T/dd.folded"
check "folded: dd's stacks have kernel frames marked _[k]" \
  grep -qE ';(entry_SYSCALL_64[a-z_]*|do_syscall_64|ksys_write|ksys_read|vfs_write|vfs_read)_\[k\]' \
  "$T/dd.folded"
# The kernel's frames are the innermost ones: after the first marked frame, all are marked.
check "folded: no user frame inside a kernel frame, none marked" \
  awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";"); k = 0
         for (i = 1; i <= n; i++) { if (f[i] ~ /_\[k\]$/) k = 1; else if (k) bad = 1 } }
       END { exit bad }' "$T/dd.folded"
check "folded: user functions are not marked" \
  sh -c "grep -qE ';__libc_start_main;' '$T/dd.folded' && ! grep -q '__libc_start_main_\\[k\\]' '$T/dd.folded'"

"$ZXS" report "$T/dd.fxt" >"$T/dd.txt"
check "top: kernel functions marked ' [k]'" grep -qE '%  [A-Za-z0-9_.]+ \[k\]$' "$T/dd.txt"
check "top: user functions not marked" grep -qE '%  (write|__GI___libc_write|__libc_write|read|__libc_read)$' "$T/dd.txt"

"$ZXS" report -f svg "$T/dd.fxt" >"$T/dd.svg"
check "svg: kernel frames marked _[k]" grep -qE '<title>[A-Za-z0-9_.]+_\[k\] \(' "$T/dd.svg"

finish
