#!/usr/bin/env bash
# (c) SIGKILL the coordinator mid-job and restart it on the same data dir: the job completes and
# nothing is lost (every task once, earlier outputs kept, attempts re-adopted or requeued).
source "$(dirname "$0")/lib.sh"
cat >"$T/job.toml" <<'TOML'
name = "restart"
command = ["sh", "-c", "sleep 0.5; echo {index} > r-{index}.txt"]
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
"$IDLEPOOL" fetch "$JOB" --out "$T/out" >/dev/null
for i in $(seq 0 11); do [ "$(cat "$T/out/r-$i.txt")" = "$i" ] || fail "r-$i.txt wrong or missing"; done
# The job submitted before the crash is still listed, with its original id.
[ "$("$IDLEPOOL" status --json | jq '.jobs | length')" = 1 ] || fail "job list changed across restart"
pass "coordinator killed with $before tasks committed; job finished, 12 outputs once"
