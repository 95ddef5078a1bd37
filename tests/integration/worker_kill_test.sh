#!/usr/bin/env bash
# (b) SIGKILL a worker mid-task: the job completes, outputs once, attempts > tasks.
source "$(dirname "$0")/lib.sh"
cat >"$T/job.toml" <<'TOML'
name = "slow-items"
command = ["sh", "-c", "sleep 1; echo {item} > out-{index}.txt"]
items = ["a", "b", "c", "d", "e", "f"]
outputs = ["out-*.txt"]
TOML
start_coordinator --lease-timeout-ms 1500
start_worker victim --slots 2 --heartbeat-ms 200
start_worker survivor --slots 1 --heartbeat-ms 200
wait_until 20 is_connected victim; wait_until 20 is_connected survivor
JOB=$("$IDLEPOOL" submit "$T/job.toml")
wait_until 30 is_busy victim
kill -9 "$WPID_victim"
wait_until 30 is_lost victim
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "job did not succeed after a worker died"
assert_outputs_once "$JOB" 6
attempts=$(job_field "$JOB" attempts); lost=$(job_field "$JOB" attempts_lost)
failures=$(job_field "$JOB" failures); wl=$(job_field "$JOB" workers_lost)
[ "$attempts" -gt 6 ] || fail "attempts $attempts, want > 6 tasks"
[ "$lost" -ge 1 ] || fail "no attempt recorded as lost"
[ "$failures" = 0 ] || fail "a lost worker counted as $failures failures"
[ "$wl" = 1 ] || fail "workers_lost $wl, want 1"
"$IDLEPOOL" fetch "$JOB" --out "$T/out" >/dev/null
for i in 0 1 2 3 4 5; do [ -f "$T/out/out-$i.txt" ] || fail "missing out-$i.txt"; done
[ "$(cat "$T/out/out-2.txt")" = c ] || fail "wrong content in out-2.txt"
pass "worker killed mid-task: 6 outputs once, $attempts attempts, $lost lost, 0 failures"
