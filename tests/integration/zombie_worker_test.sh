#!/usr/bin/env bash
# (d) SIGSTOP a worker past the lease timeout, then SIGCONT it: its task was requeued, its late
# result is rejected (fencing) and no output is committed twice.
source "$(dirname "$0")/lib.sh"
cat >"$T/job.toml" <<'TOML'
name = "zombie"
command = ["sh", "-c", "sleep 1.5; echo done-by-$IDLEPOOL_WORKER > result.txt"]
count = 1
outputs = ["result.txt"]
TOML
start_coordinator --lease-timeout-ms 1000
start_worker zombie --slots 1 --heartbeat-ms 200
wait_until 20 is_connected zombie
JOB=$("$IDLEPOOL" submit "$T/job.toml")
wait_until 30 is_busy zombie
first=$(sql "SELECT id FROM attempts WHERE job_id=$JOB ORDER BY id LIMIT 1")
kill -STOP "$WPID_zombie"         # the task itself keeps running in its own process group
wait_until 30 is_lost zombie
start_worker rescuer --slots 1 --heartbeat-ms 200
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "job did not succeed on the rescuer"
kill -CONT "$WPID_zombie"
# The zombie wakes up holding a finished attempt; it reconnects and reports it: refused.
wait_until 30 grep -q "attempt $first: report refused" "$T/zombie.log"
assert_outputs_once "$JOB" 1
committed=$(sql "SELECT committed_attempt FROM tasks WHERE job_id=$JOB")
[ "$committed" != "$first" ] || fail "the stale attempt $first was committed"
outcome=$(sql "SELECT outcome FROM attempts WHERE id=$first")
by=$(sql "SELECT worker FROM attempts WHERE id=$committed")
[ "$by" = rescuer ] || fail "committed attempt ran on $by"
"$IDLEPOOL" fetch "$JOB" --out "$T/out" >/dev/null
[ "$(cat "$T/out/result.txt")" = done-by-rescuer ] || fail "committed output is not the rescuer's"
[ "$(job_field "$JOB" failures)" = 0 ] || fail "the lost attempt counted as a failure"
pass "late report of attempt $first (outcome $outcome) refused; output committed once, by rescuer"
