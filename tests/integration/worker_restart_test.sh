#!/usr/bin/env bash
# A worker SIGKILLed mid-task: sandboxed, its task dies with it (the slot's agent sees its channel
# close, and the end of a PID namespace's init ends every process in it); with --no-sandbox the
# task outlives it (its own process group) and the worker, restarted on the same work dir, kills
# that leftover before taking new work. A second worker can never share a work dir.
source "$(dirname "$0")/lib.sh"
cat >"$T/job.toml" <<'TOML'
name = "leftover"
command = ["sh", "-c", "echo $$ > pid; exec sleep 600"]
count = 1
TOML
start_coordinator
start_worker w --slots 1
wait_until 20 is_connected w
# The work dir is locked while w runs.
rc=0; "$IDLEPOOL" worker --name w --work-dir "$T/w" >"$T/other.log" 2>&1 || rc=$?
[ $rc -ne 0 ] && grep -q "in use by another worker" "$T/other.log" || fail "work dir shared: rc $rc"

if [ "$SANDBOX_TIER" != none ]; then
  JOB=$("$IDLEPOOL" submit "$T/job.toml")
  task_pid=$(host_pid w "$(cat "$(task_file w pid)")") || fail "task not found"
  kill -9 "$WPID_w"
  wait "$WPID_w" 2>/dev/null || true
  wait_until 30 dead "$task_pid"
  "$IDLEPOOL" cancel "$JOB" >/dev/null
  echo "sandboxed: task $task_pid ended with its SIGKILLed worker"
else
  kill -9 "$WPID_w"; wait "$WPID_w" 2>/dev/null || true
  echo "skip the sandboxed part: this machine cannot sandbox tasks"
fi

start_worker u --slots 1 --no-sandbox
wait_until 20 is_connected u
grep -q "no-sandbox: tasks run as this worker's user" "$T/u.log" || fail "--no-sandbox did not warn"
JOB=$("$IDLEPOOL" submit "$T/job.toml")
task_pid=$(host_pid u "$(cat "$(task_file u pid)")") || fail "task not found"
kill -9 "$WPID_u"
wait "$WPID_u" 2>/dev/null || true
kill -0 "$task_pid" || fail "precondition: unsandboxed, the task outlives its SIGKILLed worker"
start_worker u --slots 1 --no-sandbox
wait_until 30 dead "$task_pid"
"$IDLEPOOL" cancel "$JOB" >/dev/null
pass "sandboxed, the task died with its worker; unsandboxed, the leftover $task_pid was killed by the restart"
