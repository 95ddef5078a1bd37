#!/usr/bin/env bash
# A task that kills its own worker (issue 21): once it has killed 3 different workers in a row,
# it fails with the reason, and the job ends instead of crashing every worker that takes it.
# A killed worker restarted at once (as systemd does) does not get the task straight back. The
# coordinator stays up and the pool still runs a normal job, outputs once.
# The workers run --no-sandbox: a sandboxed task cannot reach its worker at all (sandbox_test,
# sandbox_test.sh); a worker can still die under a task in other ways (the kernel's OOM killer),
# and this is the coordinator's answer to that.
source "$(dirname "$0")/lib.sh"
cat >"$T/crash.toml" <<'TOML'
name = "crasher"
command = ["sh", "-c", "kill -9 $PPID"]
count = 1
TOML
cat >"$T/ok.toml" <<'TOML'
name = "after-the-crasher"
command = ["sh", "-c", "echo {index} > out-{index}.txt"]
count = 4
outputs = ["out-*.txt"]
TOML
start_coordinator --lease-timeout-ms 1500
for w in w1 w2 w3 w4; do start_worker $w --slots 1 --heartbeat-ms 200 --no-sandbox; done
for w in w1 w2 w3 w4; do wait_until 20 is_connected $w; done

JOB=$("$IDLEPOOL" submit "$T/crash.toml")
# Workers are taken in name order: w1 first. Restart it as soon as it is dead, as systemd would.
wait_until 30 dead "$WPID_w1"
start_worker w1 --slots 1 --heartbeat-ms 200 --no-sandbox
rc=0; "$IDLEPOOL" wait "$JOB" --quiet >/dev/null 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "the crashing job succeeded"
[ "$(job_field "$JOB" state)" = failed ] || fail "job state $(job_field "$JOB" state), want failed"
for w in w2 w3; do dead "$(eval echo "\$WPID_$w")" || fail "$w is alive: the task did not run there"; done
kill -0 "$WPID_w4" || fail "w4 died: the task ran on a fourth worker"
kill -0 "$COORD_PID" || fail "the coordinator is gone"
lost=$(job_field "$JOB" attempts_lost); failures=$(job_field "$JOB" failures)
[ "$lost" = 3 ] || fail "attempts_lost $lost, want 3"
[ "$failures" = 0 ] || fail "a lost worker counted as $failures failures"
# Where the task ran: w1, then not w1 again (restarted at once, but it killed the task's worker).
ran=$(sql "SELECT group_concat(worker, ',') FROM (SELECT worker FROM attempts WHERE job_id=$JOB ORDER BY id)")
[ "$ran" = w1,w2,w3 ] || fail "the task ran on $ran, want w1,w2,w3"
# The reason is stored with the last attempt and shown by status.
want="the task fails: lost with 3 different workers in a row (w1, w2, w3), each of which died while running it: a task that crashes its worker?"
msg=$(sql "SELECT message FROM attempts WHERE job_id=$JOB ORDER BY id DESC LIMIT 1")
grep -qF "$want" <<<"$msg" || fail "stored message: $msg"
"$IDLEPOOL" status "$JOB" >"$T/status.txt"
grep -qE "task 0 failed on [^:]+: " "$T/status.txt" || fail "status: $(cat "$T/status.txt")"
grep -qF "$want" "$T/status.txt" || fail "status does not say why: $(cat "$T/status.txt")"
pass "the task that kills its worker failed after w1, w2 and w3: $msg"

wait_until 20 is_connected w1
JOB2=$("$IDLEPOOL" submit "$T/ok.toml")
"$IDLEPOOL" wait "$JOB2" --quiet >/dev/null || fail "the job after the crasher did not succeed"
assert_outputs_once "$JOB2" 4
kill -0 "$COORD_PID" || fail "the coordinator is gone"
pass "the coordinator stayed up and a normal job then completed, 4 outputs once"
