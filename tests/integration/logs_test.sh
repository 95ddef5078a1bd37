#!/usr/bin/env bash
# Task logs (issue 18): `idlepool logs -f` shows a running task's lines before it ends, follows
# it across a preemption to its next attempt on another worker and ends with the task; then the
# kept log of the successful attempt (`idlepool logs JOB TASK`) and of the preempted one
# (`--attempt N`), stdout only on stdout; the exit code says whether the task succeeded; unknown
# tasks and attempts are refused, a job of several tasks needs TASK; the dashboard's API gives an
# attempt's kept log as text. A normal job completes after it all, every output exactly once.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
owner_config "$T/owner.toml"
A=$T/sensors-a
B=$T/sensors-b
sense "$A" idle_seconds 1000
sense "$A" on_ac_power 1
sense "$B" idle_seconds 0  # desk's owner is at the keyboard: desk takes no work yet
cat >"$T/job.toml" <<'TOML'
name = "chatty"
command = ["sh", "-c", "i=0; while [ ! -e go ]; do i=$((i+1)); echo \"line $i on $IDLEPOOL_WORKER\"; echo \"err $i on $IDLEPOOL_WORKER\" >&2; sleep 0.2; done; echo \"done on $IDLEPOOL_WORKER\" | tee out.txt"]
count = 1
outputs = ["out.txt"]
TOML
start_coordinator --lease-timeout-ms 600000 --http 127.0.0.1:0
wait_until 10 grep -q "dashboard at https://" "$T/coordinator.log"
HPORT=$(sed -n 's|.*dashboard at https://127.0.0.1:\([0-9]*\)/.*|\1|p' "$T/coordinator.log" | tail -1)
start_worker laptop --slots 1 --config "$T/owner.toml" --sensors-dir "$A" --no-probe --no-calibrate
start_worker desk --slots 1 --config "$T/owner.toml" --sensors-dir "$B" --no-probe --no-calibrate
wait_until 20 is_owner_state laptop run
wait_until 20 is_owner_state desk suspend
JOB=$("$IDLEPOOL" submit "$T/job.toml")
wait_until 30 is_running_on "$JOB" laptop
FIRST=$(running_attempt "$JOB")

# Following: lines arrive while the task runs.
"$IDLEPOOL" logs "$JOB" 0 -f >"$T/follow.out" 2>"$T/follow.err" &
FPID=$!
PIDS+=($FPID)
wait_until 30 grep -q "line 3 on laptop" "$T/follow.out"
[ "$(job_field "$JOB" state)" = running ] || fail "the job ended before its lines were seen"
grep -q "attempt $FIRST started on laptop" "$T/follow.err" || fail "no start line: $(cat "$T/follow.err")"
grep -q "err 2 on laptop" "$T/follow.out" && true  # stderr is output too (checked on the kept log)
pass "logs -f shows a running task's lines before it ends"

# A preemption: the follow moves to the next attempt, on desk.
sense "$B" idle_seconds 1000
wait_until 20 is_owner_state desk run
sense "$A" on_ac_power 0  # the laptop's charger is pulled
wait_until 30 is_running_on "$JOB" desk
SECOND=$(running_attempt "$JOB")
wait_until 30 grep -q "line 2 on desk" "$T/follow.out"
grep -q "attempt $FIRST ended: preempted" "$T/follow.err" || fail "no end line: $(cat "$T/follow.err")"
grep -q "attempt $SECOND started on desk" "$T/follow.err" || fail "no second start: $(cat "$T/follow.err")"
kill -0 "$FPID" || fail "logs -f ended at the preemption"
pass "logs -f follows the task across a preemption to its next attempt"

open_gate go
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "job $JOB: $("$IDLEPOOL" status "$JOB")"
close_gate go
rc=0; wait "$FPID" || rc=$?
[ "$rc" = 0 ] || fail "logs -f of a succeeded task exited $rc: $(cat "$T/follow.err")"
grep -q "done on desk" "$T/follow.out" || fail "logs -f missed the last line: $(tail -3 "$T/follow.out")"
grep -q "attempt $SECOND ended: succeeded" "$T/follow.err" || fail "no last end line: $(cat "$T/follow.err")"
if grep -q "idlepool:\|attempt $SECOND" "$T/follow.out"; then fail "event lines on stdout"; fi
pass "logs -f ends with the task, exit 0, its last line seen, events on stderr only"

# The kept logs: the successful attempt's by default, the preempted one's with --attempt.
"$IDLEPOOL" logs "$JOB" 0 >"$T/kept.out" 2>"$T/kept.err" || fail "logs of a succeeded task failed"
grep -q "^line 1 on desk$" "$T/kept.out" || fail "kept log: $(head -3 "$T/kept.out")"
grep -q "^err 1 on desk$" "$T/kept.out" || fail "kept log has no stderr: $(head -3 "$T/kept.out")"
grep -q "^done on desk$" "$T/kept.out" || fail "kept log misses the last line: $(tail -3 "$T/kept.out")"
if grep -q laptop "$T/kept.out"; then fail "the newest attempt's log has the first one's lines"; fi
"$IDLEPOOL" logs "$JOB" >"$T/kept1.out" 2>/dev/null || fail "logs without TASK of a one-task job"
cmp -s "$T/kept.out" "$T/kept1.out" || fail "logs JOB and logs JOB 0 differ"
"$IDLEPOOL" logs "$JOB" 0 --attempt "$FIRST" >"$T/first.out" 2>/dev/null ||
  fail "logs --attempt $FIRST failed"
grep -q "^line 1 on laptop$" "$T/first.out" || fail "attempt $FIRST: $(head -3 "$T/first.out")"
if grep -q desk "$T/first.out"; then fail "attempt $FIRST's log has desk's lines"; fi
[ -s "$T/coord/logs/$JOB/$FIRST.log" ] && [ -s "$T/coord/logs/$JOB/$SECOND.log" ] ||
  fail "no kept files under DATA_DIR/logs/$JOB: $(ls -R "$T/coord/logs" 2>&1)"
pass "the kept logs of the successful and the preempted attempt, stdout and stderr"

# Refusals: unknown task and attempt, a job of several tasks without TASK.
rc=0; "$IDLEPOOL" logs "$JOB" 5 >/dev/null 2>"$T/e1" || rc=$?
[ "$rc" = 1 ] && grep -q "no task 5" "$T/e1" || fail "unknown task: rc $rc $(cat "$T/e1")"
rc=0; "$IDLEPOOL" logs "$JOB" 0 --attempt 999999 >/dev/null 2>"$T/e2" || rc=$?
[ "$rc" = 1 ] && grep -q "attempt 999999" "$T/e2" || fail "unknown attempt: rc $rc $(cat "$T/e2")"
cat >"$T/two.toml" <<'TOML'
name = "two"
command = ["sh", "-c", "echo {item} > out-{item}.txt; echo printed {item}; exit {item}"]
items = ["0", "3"]
outputs = ["out-*.txt"]
[retry]
max_attempts = 1
TOML
TWO=$("$IDLEPOOL" submit "$T/two.toml")
"$IDLEPOOL" wait "$TWO" --quiet >/dev/null 2>&1 || true
rc=0; "$IDLEPOOL" logs "$TWO" >/dev/null 2>"$T/e3" || rc=$?
[ "$rc" = 2 ] && grep -q "has 2 tasks" "$T/e3" || fail "no TASK in a two-task job: rc $rc $(cat "$T/e3")"
rc=0; out=$("$IDLEPOOL" logs "$TWO" 1 2>/dev/null) || rc=$?
[ "$rc" = 1 ] && [ "$out" = "printed 3" ] || fail "a failed task's log: rc $rc '$out'"
pass "unknown task or attempt: not found; several tasks need TASK; a failed task exits 1"

# The dashboard's API: an attempt's kept log as text, behind the same authentication.
URL=https://127.0.0.1:$HPORT/api/v1/jobs/$JOB/attempts/$FIRST/log
curl -sf --cacert "$T/coord/ca.pem" -H "Authorization: Bearer $TOKEN" "$URL" >"$T/http.out" ||
  fail "GET $URL failed"
cmp -s "$T/http.out" "$T/first.out" || fail "GET $URL differs from logs --attempt"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$T/coord/ca.pem" "$URL")
[ "$code" = 401 ] || fail "GET $URL without a token: HTTP $code"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$T/coord/ca.pem" \
  -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$HPORT/api/v1/jobs/$JOB/attempts/999999/log")
[ "$code" = 404 ] || fail "an unknown attempt's log: HTTP $code"
pass "GET /api/v1/jobs/N/attempts/A/log gives the kept log as text"

OK=$("$IDLEPOOL" submit "$T/job.toml")
open_gate go
"$IDLEPOOL" wait "$OK" --quiet >/dev/null || fail "job $OK: $("$IDLEPOOL" status "$OK")"
assert_outputs_once "$OK" 1
assert_outputs_once "$JOB" 1
pass "a normal job completed afterwards, every output exactly once"
