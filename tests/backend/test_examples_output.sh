#!/usr/bin/env bash
# What the examples print and where they write, as a user runs them.
#
#   test_examples_output.sh ZXSAMPLER AUDIO_MIXER DEADLINE_RUNTIME
#
# Checks:
#   - audio_mixer -o DIR creates DIR and its missing parents (mkdir -p) and writes its alert
#     traces there; a DIR that cannot be created (a file in the way) or written (as nobody) exits
#     1 before the loop with a message naming DIR, not ZX_ERR_IO at the end;
#   - deadline_runtime shows a task-runtime field it does not measure as "-", never as a number,
#     and every field it measures as a number (as root, then as nobody, who may not time lock
#     contention and, at perf_event_paranoid 3, page faults);
#   - zxsampler report on an alert written as nobody: a field not measured has no row of its own
#     (no 0.000 ms) and is named as not measured.
# Which periods are late is up to the machine: the deadline checks look at every late period
# printed (usually several), and say so when none was. The audio_mixer runs use "-i work", whose
# period is late whatever the machine (25 ms of CPU time in a 10 ms period). Nothing is timed.
set -u

if [ $# -ne 3 ]; then
  echo "usage: $0 ZXSAMPLER AUDIO_MIXER DEADLINE_RUNTIME" >&2
  exit 2
fi
ZXS=$1
MIXER=$2
DEADLINE=$3

# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"

# --- audio_mixer -o DIR ---------------------------------------------------------------------

out="$T/new/alerts/here"
"$MIXER" -o "$out" -n 30 -i work >"$T/mixer.out" 2>"$T/mixer.err"
status=$?
check "audio_mixer -o a new folder: the folder and its parents were created" [ -d "$out" ]
if [ "$status" -ne 0 ] && grep -q "zxs_recorder_start" "$T/mixer.err"; then
  # (the folder is made before the recorder starts; this host refuses the recorder)
  echo "note: the recorder cannot start here: $(cat "$T/mixer.err"); alert checks skipped"
else
  check "audio_mixer -o a new folder: exit 0 (got $status: $(tr '\n' ' ' <"$T/mixer.err"))" \
    [ "$status" -eq 0 ]
  check "... the recorder wrote its alerts there ($(ls "$out" 2>/dev/null | tr '\n' ' '))" \
    sh -c "ls '$out'/late-work-*.fxt >/dev/null 2>&1"
  check "... and they read back" sh -c "'$ZXS' report -o /dev/null '$out'/late-work-*.fxt"
  "$MIXER" -o "$out" -n 1 >/dev/null 2>"$T/again.err"
  status=$?
  check "audio_mixer -o an existing folder: exit 0 (got $status)" [ "$status" -eq 0 ]
fi

: >"$T/file"
"$MIXER" -o "$T/file/alerts" -n 30 -i work >"$T/blocked.out" 2>"$T/blocked.err"
status=$?
check "audio_mixer -o under a file: exit 1 (got $status)" [ "$status" -eq 1 ]
check "... the message names the folder ($(cat "$T/blocked.err"))" \
  grep -qF "cannot create the output folder '$T/file/alerts'" "$T/blocked.err"
check "... not ZX_ERR_IO after the run" sh -c "! grep -q ZX_ERR_IO '$T/blocked.out' '$T/blocked.err'"
check "... and the loop did not run" sh -c "! grep -q periods '$T/blocked.out'"

# --- As nobody --------------------------------------------------------------------------------

# nobody may not reach the build tree: copies of the programs and the library in $T.
as_nobody=false
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  lib=$(ldd "$DEADLINE" 2>/dev/null | awk '/libzxsampler\.so/ { print $3; exit }')
  mkdir -p "$T/bin" && cp "$MIXER" "$DEADLINE" "$T/bin/"
  [ -n "$lib" ] && cp "$lib" "$T/bin/"
  chmod -R a+rX "$T/bin"
  mkdir -p "$T/nobody" "$T/readonly" && chmod 777 "$T/nobody" && chmod 755 "$T/readonly"
  nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env LD_LIBRARY_PATH="$T/bin" "$@"; }
  if nobody "$T/bin/$(basename "$DEADLINE")" 0 >/dev/null 2>&1; then
    as_nobody=true
  else
    echo "note: nobody cannot run the examples here: the unprivileged checks are skipped"
  fi
fi

if $as_nobody; then
  nobody "$T/bin/$(basename "$MIXER")" -o "$T/readonly/alerts" -n 30 -i work \
    >"$T/ro.out" 2>"$T/ro.err"
  status=$?
  check "as nobody, -o in a folder it may not write: exit 1 (got $status)" [ "$status" -eq 1 ]
  check "... the message names the folder ($(cat "$T/ro.err"))" \
    grep -qF "'$T/readonly/alerts'" "$T/ro.err"
  check "... not ZX_ERR_IO after the run" sh -c "! grep -q ZX_ERR_IO '$T/ro.out' '$T/ro.err'"
  nobody "$T/bin/$(basename "$MIXER")" -o "$T/readonly" -n 30 -i work >/dev/null 2>"$T/ro2.err"
  status=$?
  check "as nobody, -o an existing folder it may not write: exit 1 (got $status)" [ "$status" -eq 1 ]
  check "... the message says so and names the folder ($(cat "$T/ro2.err"))" \
    grep -qF "cannot write into the output folder '$T/readonly'" "$T/ro2.err"
fi

# --- deadline_runtime: a field not measured is "-" ----------------------------------------------

# check_deadline OUTPUT WHO: every late period's fields against the "measured here:" line.
check_deadline() {
  local file=$1 who=$2 measured word label lines
  measured=$(sed -n 's/^measured here://p' "$file")
  lines=$(grep -c '^period ' "$file")
  check "$who: deadline_runtime says what it measures" grep -q '^measured here:' "$file"
  for word in cpu queue page-faults lock-contention; do
    case $word in
      cpu) label="cpu" ;;
      queue) label="queue" ;;
      page-faults) label="page faults" ;;
      lock-contention) label="kernel locks" ;;
    esac
    # The values of this field in every late period, one a line.
    sed -n "s/^period .* $label  *\([^ ]*\).*/\1/p" "$file" >"$file.$word"
    if [ "$lines" -eq 0 ]; then continue; fi
    check "$who: '$label' in every late period ($lines)" [ "$(wc -l <"$file.$word")" -eq "$lines" ]
    sort -u -o "$file.$word" "$file.$word"
    if printf ' %s ' "$measured" | grep -q " $word "; then
      check "$who: $word measured: a number in every late period ($(tr '\n' ' ' <"$file.$word"))" \
        sh -c "! grep -qv '^[0-9][0-9]*\.[0-9][0-9]\$' '$file.$word'"
    else
      check "$who: $word not measured: said so" grep -q "^not measured, shown as -:.* $word" "$file"
      check "$who: $word not measured: '-' in every late period, never a number ($(tr '\n' ' ' <"$file.$word"))" \
        sh -c "[ \"\$(cat '$file.$word')\" = - ]"
    fi
  done
  if [ "$lines" -eq 0 ]; then
    echo "note: $who: no period was late on this machine: the per-period checks had nothing to check"
  fi
}

"$DEADLINE" 60 >"$T/deadline.out" 2>"$T/deadline.err"
status=$?
check "deadline_runtime: exit 0 (got $status: $(tr '\n' ' ' <"$T/deadline.err"))" [ "$status" -eq 0 ]
check_deadline "$T/deadline.out" "$(id -un)"
echo "$(id -un): $(grep -c '^period ' "$T/deadline.out") late periods; $(head -2 "$T/deadline.out" | tr '\n' ' ')"

if $as_nobody; then
  nobody "$T/bin/$(basename "$DEADLINE")" 60 >"$T/nobody-deadline.out" 2>"$T/nobody-deadline.err"
  status=$?
  check "as nobody, deadline_runtime: exit 0 (got $status)" [ "$status" -eq 0 ]
  check_deadline "$T/nobody-deadline.out" nobody
  echo "nobody: $(grep -c '^period ' "$T/nobody-deadline.out") late periods;" \
    "$(head -2 "$T/nobody-deadline.out" | tr '\n' ' ')"
  if ! grep -q '^not measured' "$T/nobody-deadline.out"; then
    echo "note: nobody measures every field here: no '-' to check"
  fi

  # --- An alert written as nobody: no row for what was not measured ---------------------------
  nobody "$T/bin/$(basename "$MIXER")" -o "$T/nobody/alerts" -n 30 -i work \
    >"$T/nobody-mixer.out" 2>"$T/nobody-mixer.err"
  status=$?
  alert=$(ls "$T"/nobody/alerts/late-work-*.fxt 2>/dev/null | head -1)
  if [ "$status" -ne 0 ] && grep -q zxs_recorder_start "$T/nobody-mixer.err"; then
    echo "note: nobody may not start the recorder here: $(cat "$T/nobody-mixer.err")"
  else
    check "as nobody, audio_mixer: exit 0 (got $status: $(tr '\n' ' ' <"$T/nobody-mixer.err"))" \
      [ "$status" -eq 0 ]
    check "as nobody, audio_mixer: an alert trace" [ -n "$alert" ]
  fi
  if [ -n "$alert" ]; then
    "$ZXS" report "$alert" >"$T/alert.txt" 2>&1
    check "report of nobody's alert: exit 0" [ $? -eq 0 ]
    table=$(sed -n '/^Why this period was late/,/^$/p' "$T/alert.txt")
    for field in cpu_time queue_time page_fault_time lock_contention_time; do
      if printf '%s\n' "$table" | grep -q "^  $field "; then
        check "alert: $field measured: a row in ms" \
          sh -c "printf '%s\n' \"\$1\" | grep -qE '^  $field +[0-9]+\.[0-9]{3} ms'" _ "$table"
      else
        check "alert: $field has no row: named as not measured ($(printf '%s\n' "$table" | tail -1))" \
          sh -c "printf '%s\n' \"\$1\" | grep -q '^  (not measured: .*$field'" _ "$table"
      fi
    done
  fi
fi

finish
