#!/usr/bin/env bash
# A worker stopped (SIGTERM) while its coordinator is gone and a task is running: it vacates the
# task and exits. The session's end and Stop both joined the runner threads; the second joiner
# used to reset the runners' exit flag, so a runner slept forever and the worker never exited.
# Run a few rounds: the race is between two threads of the worker.
source "$(dirname "$0")/lib.sh"
cat >"$T/job.toml" <<'TOML'
name = "offline-stop"
command = ["sh", "-c", "echo $$ > pid; exec sleep 600"]
count = 1
TOML
for round in 1 2 3; do
  PORT=0
  rm -rf "$T/coord" "$T/w$round"
  start_coordinator
  start_worker "w$round" --slots 1 --heartbeat-ms 100
  wait_until 20 is_connected "w$round"
  "$IDLEPOOL" submit "$T/job.toml" >/dev/null
  wait_until 30 is_busy "w$round"
  task_pid=$(host_pid "w$round" "$(cat "$(task_file "w$round" pid)")") || fail "task not found"
  kill -9 "$COORD_PID"
  wait_until 30 grep -q "ended (.*reconnecting in" "$T/w$round.log"
  pid_var=WPID_w$round
  kill -TERM "${!pid_var}"
  # A bound on a hang, not a timing assertion: the vacate grace is 10 s by default.
  wait_until 60 dead "${!pid_var}"
  kill -0 "$task_pid" 2>/dev/null && fail "round $round: task $task_pid survived the vacate"
  mv "$T/coordinator.log" "$T/coordinator-$round.log"
done
pass "SIGTERM with the coordinator gone: the worker vacated its task and exited, 3 rounds"
