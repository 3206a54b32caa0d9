#!/usr/bin/env bash
# `zxsampler record` drains its rings on one thread and unwinds on another (the worker): every
# record drained is handled, once, whichever way recording ends. Under TSan (suite concurrency)
# a race between the two makes the tool report it, which fails the checks here.
#   - a program at 20000 samples/s: the summary's count is the file's, and the three threads
#     and the process are named;
#   - -p PID -d 1 (a running process, the duration ends it), and -p PID ended by SIGINT.
#
#   test_record_worker.sh ZXSAMPLER WORKLOAD
set -u

if [ $# -ne 2 ]; then
  echo "usage: $0 ZXSAMPLER WORKLOAD" >&2
  exit 2
fi
ZXS=$1
WORKLOAD=$2

# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"

# Nothing reported by a sanitizer, and no crash.
clean() {  # clean STATUS STDERR-FILE
  [ "$1" -lt 128 ] && ! grep -qE 'ThreadSanitizer|AddressSanitizer|runtime error' "$2"
}
# The samples the summary says were written, and those the report reads.
said() { sed -n 's/.*: \([0-9]*\) samples of .* written to .*/\1/p' "$1"; }
read_back() { "$ZXS" report "$1" 2>/dev/null | sed -n 's/^Samples: \([0-9]*\).*/\1/p'; }

"$ZXS" record -F 20000 -o "$T/fast.fxt" -- "$WORKLOAD" 1 >/dev/null 2>"$T/fast.err"
status=$?
check "record -F 20000 exits 0, cleanly ($status: $(tr '\n' ' ' <"$T/fast.err"))" \
  [ $status -eq 0 ] && clean $status "$T/fast.err"
check "every sample the summary counts is in the file ($(said "$T/fast.err") said, $(read_back "$T/fast.fxt") read)" \
  [ -n "$(said "$T/fast.err")" ] && [ "$(said "$T/fast.err")" = "$(read_back "$T/fast.fxt")" ]
"$ZXS" report "$T/fast.fxt" >"$T/fast.txt" 2>&1
check "the process is named" grep -q '^Process: workload' "$T/fast.txt"
# (a sanitizer's runtime may add a thread of its own)
threads=$(sed -n 's/.*Threads: \([0-9]*\).*/\1/p' "$T/fast.txt")
check "its three threads are in the profile (${threads:-none})" [ "${threads:-0}" -ge 3 ]

"$WORKLOAD" 4 >/dev/null &
BG=$!
sleep 0.3
"$ZXS" record -p "$BG" -d 1 -o "$T/attach.fxt" 2>"$T/attach.err"
status=$?
check "record -p -d 1 exits 0, cleanly ($status: $(tr '\n' ' ' <"$T/attach.err"))" \
  [ $status -eq 0 ] && clean $status "$T/attach.err"
check "-p -d 1: every sample counted is in the file" \
  [ -n "$(said "$T/attach.err")" ] && [ "$(said "$T/attach.err")" = "$(read_back "$T/attach.fxt")" ]

"$ZXS" record -p "$BG" -o "$T/int.fxt" 2>"$T/int.err" &
rec=$!
sleep 1
kill -INT "$rec"
wait "$rec"
status=$?
check "record -p ended by SIGINT exits 0, cleanly ($status: $(tr '\n' ' ' <"$T/int.err"))" \
  [ $status -eq 0 ] && clean $status "$T/int.err"
check "-p ended by SIGINT: every sample counted is in the file" \
  [ -n "$(said "$T/int.err")" ] && [ "$(said "$T/int.err")" = "$(read_back "$T/int.fxt")" ]

finish
