#!/usr/bin/env bash
# (c) SIGKILL the coordinator mid-job and restart it on the same data dir: the job completes and
# nothing is lost (every task once, earlier outputs kept, attempts re-adopted or requeued).
source "$(dirname "$0")/lib.sh"
cat >"$T/job.toml" <<'TOML'
name = "restart"
command = ["sh", "-c", "sleep 1; echo {index} > r-{index}.txt"]
count = 12
outputs = ["r-*.txt"]
TOML
start_coordinator
start_worker w1 --slots 2; start_worker w2 --slots 2
wait_until 20 is_connected w1; wait_until 20 is_connected w2
JOB=$("$IDLEPOOL" submit "$T/job.toml")
wait_until 30 job_at_least "$JOB" succeeded 2
wait_until 30 job_at_least "$JOB" running 1
before=$(sql "SELECT COUNT(*) FROM tasks WHERE job_id=$JOB AND state='succeeded'")
kill -9 "$COORD_PID"
wait "$COORD_PID" 2>/dev/null || true
start_coordinator
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "job did not succeed after coordinator restart"
assert_outputs_once "$JOB" 12
[ "$(job_field "$JOB" succeeded)" = 12 ] || fail "not all tasks succeeded"
[ "$(job_field "$JOB" failures)" = 0 ] || fail "restart caused failures"
# The workers came back within the lease timeout, so the attempts that were running during the
# restart were re-adopted, not lost and re-run.
[ "$(job_field "$JOB" attempts_lost)" = 0 ] || fail "attempts lost across the restart: $(job_field "$JOB" attempts_lost)"
[ "$(job_field "$JOB" attempts)" = 12 ] || fail "tasks re-ran: $(job_field "$JOB" attempts) attempts for 12 tasks"
"$IDLEPOOL" fetch "$JOB" --out "$T/out" >/dev/null
for i in $(seq 0 11); do [ "$(cat "$T/out/r-$i.txt")" = "$i" ] || fail "r-$i.txt wrong or missing"; done
# The job submitted before the crash is still listed, with its original id.
[ "$("$IDLEPOOL" status --json | jq '.jobs | length')" = 1 ] || fail "job list changed across restart"
# A second coordinator cannot take the same data dir, nor the same port.
rc=0; "$IDLEPOOL" coordinator --listen 127.0.0.1:0 --data-dir "$T/coord" >"$T/second.log" 2>&1 || rc=$?
[ $rc -ne 0 ] && grep -q "another coordinator is using this data dir" "$T/second.log" \
  || fail "second coordinator on the same data dir: rc $rc, $(cat "$T/second.log")"
rc=0; "$IDLEPOOL" coordinator --listen "$ADDR" --data-dir "$T/other" >"$T/third.log" 2>&1 || rc=$?
[ $rc -ne 0 ] && grep -q "cannot listen" "$T/third.log" || fail "second coordinator on the same port: rc $rc"
pass "coordinator killed with $before tasks committed; attempts re-adopted, 12 outputs once"
