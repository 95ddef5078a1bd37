#!/usr/bin/env bash
# `idlepool report` on a live pool (needs Pool.GetJobTimeline): a task is vacated on a laptop
# whose charger is pulled (fake sensors) and finishes on a desk. The HTML report shows both
# attempt bars, the preemption marker, the requeue arrow from the first attempt to the second,
# the laptop's owner vacate from its events, and the task's log tail; --svg writes the timeline
# alone (well-formed XML); --out - writes to stdout; an unknown job exits 1; an --out in a missing
# directory exits 2 and writes nothing.
source "$(dirname "$0")/lib.sh"
owner_config "$T/owner.toml"
A=$T/sensors-a
B=$T/sensors-b
sense "$A" idle_seconds 1000
sense "$A" on_ac_power 1
sense "$B" idle_seconds 0         # B's owner is at the keyboard: B takes no work yet
cat >"$T/job.toml" <<'TOML'
name = "report-me"
command = ["sh", "-c", "echo hello from $IDLEPOOL_WORKER; echo $IDLEPOOL_WORKER > out.txt; while [ ! -e go ]; do sleep 0.05; done"]
count = 1
outputs = ["out.txt"]
TOML
start_coordinator --lease-timeout-ms 600000
start_worker laptop --slots 1 --config "$T/owner.toml" --sensors-dir "$A"
start_worker desk --slots 1 --config "$T/owner.toml" --sensors-dir "$B"
wait_until 20 is_owner_state laptop run
wait_until 20 is_owner_state desk suspend
JOB=$("$IDLEPOOL" submit "$T/job.toml")
wait_until 30 is_running_on "$JOB" laptop
FIRST=$(running_attempt "$JOB")
sense "$B" idle_seconds 1000      # B becomes free
wait_until 20 is_owner_state desk run
sense "$A" on_ac_power 0          # the laptop's charger is pulled: vacate
wait_until 20 is_running_on "$JOB" desk
SECOND=$(running_attempt "$JOB")

# While it runs: the running attempt is drawn.
"$IDLEPOOL" report "$JOB" --out "$T/running.html" >"$T/report.out" || fail "report of a running job"
grep -q 'class="attempt outcome-running"' "$T/running.html" || fail "no running bar"

open_gate go
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "job did not finish on desk"

"$IDLEPOOL" report "$JOB" --out "$T/report.html" >"$T/report.out" || fail "report exited $?"
grep -q "job $JOB: report in $T/report.html" "$T/report.out" \
  || fail "report said: $(cat "$T/report.out")"
H=$T/report.html
head -c 15 "$H" | grep -q '<!DOCTYPE html>' || fail "not an HTML document"
[ "$(grep -o 'class="attempt outcome-preempted"' "$H" | wc -l)" = 1 ] || fail "preempted bars"
[ "$(grep -o 'class="attempt outcome-succeeded"' "$H" | wc -l)" = 1 ] || fail "succeeded bars"
grep -q "data-attempt=\"$FIRST\" data-task=\"0\" data-worker=\"laptop\"" "$H" || fail "first bar"
grep -q "data-attempt=\"$SECOND\" data-task=\"0\" data-worker=\"desk\"" "$H" || fail "second bar"
grep -q "class=\"preemption\" data-attempt=\"$FIRST\"" "$H" || fail "no preemption marker"
grep -q "class=\"requeue\" data-from=\"$FIRST\" data-to=\"$SECOND\"" "$H" || fail "no requeue arrow"
grep -q 'class="unavailable" data-worker="laptop" data-state="vacate" data-cause="battery"' "$H" \
  || fail "no vacate period on the laptop's lane"
grep -q '<pre>hello from desk' "$H" || fail "no log tail of the second attempt"
! grep -q '<script' "$H" || fail "the report has a script"
! ls "$T"/report.html.tmp.* >/dev/null 2>&1 || fail "a temp file was left behind"
pass "report: bars, preemption marker, requeue arrow, vacate period, log tail"

"$IDLEPOOL" report "$JOB" --out "$T/timeline.svg" --svg >/dev/null || fail "--svg exited $?"
head -c 5 "$T/timeline.svg" | grep -q '<svg' || fail "--svg did not write an SVG"
grep -q "class=\"preemption\" data-attempt=\"$FIRST\"" "$T/timeline.svg" || fail "svg: no marker"
if command -v xmllint >/dev/null; then
  xmllint --noout "$T/timeline.svg" || fail "the SVG is not well-formed XML"
fi
"$IDLEPOOL" report "$JOB" --out - >"$T/stdout.html" || fail "--out - exited $?"
grep -q "class=\"requeue\" data-from=\"$FIRST\"" "$T/stdout.html" || fail "--out - wrote no report"
pass "report --svg and --out -"

# --out through a symlink writes its target (the link stays); into a FIFO it writes, never
# replacing it (as root, a rename would turn /dev/full into a file).
echo old >"$T/target.html"
ln -s target.html "$T/link.html"
"$IDLEPOOL" report "$JOB" --out "$T/link.html" >/dev/null || fail "--out symlink exited $?"
[ -L "$T/link.html" ] || fail "--out replaced the symlink"
grep -q "class=\"requeue\"" "$T/target.html" || fail "--out symlink did not write its target"
mkfifo "$T/fifo"
cat "$T/fifo" >"$T/from-fifo.html" &
READER=$!
"$IDLEPOOL" report "$JOB" --out "$T/fifo" >/dev/null || fail "--out fifo exited $?"
wait "$READER"
[ -p "$T/fifo" ] || fail "--out replaced the FIFO with a file"
grep -q "class=\"requeue\"" "$T/from-fifo.html" || fail "nothing came through the FIFO"
pass "report --out through a symlink and into a FIFO"

rc=0; "$IDLEPOOL" report 999999 --out "$T/none.html" 2>"$T/err" || rc=$?
[ "$rc" = 1 ] || fail "unknown job: exit $rc, want 1 ($(cat "$T/err"))"
grep -q 999999 "$T/err" || fail "unknown job: $(cat "$T/err")"
[ ! -e "$T/none.html" ] || fail "a report was written for an unknown job"
rc=0; "$IDLEPOOL" report "$JOB" --out "$T/missing/r.html" 2>"$T/err" || rc=$?
[ "$rc" = 2 ] || fail "missing --out directory: exit $rc, want 2"
grep -q "no directory" "$T/err" || fail "missing --out directory: $(cat "$T/err")"
rc=0; "$IDLEPOOL" report "$JOB" 2>"$T/err" || rc=$?
[ "$rc" = 2 ] || fail "no --out: exit $rc, want 2"
pass "report: unknown job exits 1, bad --out exits 2"
