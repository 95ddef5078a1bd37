#!/usr/bin/env bash
# A worker SIGKILLed mid-task leaves its task running (the task has its own process group);
# restarted on the same work dir, the worker kills that leftover before taking new work, and a
# second worker can never share its work dir.
source "$(dirname "$0")/lib.sh"
cat >"$T/job.toml" <<'TOML'
name = "leftover"
command = ["sh", "-c", "echo $$ >> $IDLEPOOL_WORK_DIR/../task-pids; sleep 600"]
count = 1
TOML
start_coordinator
start_worker w --slots 1
wait_until 20 is_connected w
# The work dir is locked while w runs.
rc=0; "$IDLEPOOL" worker --name w --work-dir "$T/w" >"$T/other.log" 2>&1 || rc=$?
[ $rc -ne 0 ] && grep -q "in use by another worker" "$T/other.log" || fail "work dir shared: rc $rc"
JOB=$("$IDLEPOOL" submit "$T/job.toml")
wait_until 30 test -s "$T/task-pids"
task_pid=$(head -1 "$T/task-pids")
kill -9 "$WPID_w"
wait "$WPID_w" 2>/dev/null || true
kill -0 "$task_pid" || fail "precondition: the task should have outlived its SIGKILLed worker"
start_worker w --slots 1
wait_until 30 dead "$task_pid"
"$IDLEPOOL" cancel "$JOB" >/dev/null
pass "leftover task $task_pid of the killed worker was killed by its restart"
