#!/usr/bin/env bash
# The owner comes back: the task is frozen (whole tree, no progress), the coordinator counts a
# suspension and assigns nothing more there; the owner leaves again: the task resumes and
# finishes, with no preemption and no failure. A worker whose owner cannot be sensed takes no work
# unless its load says the machine is otherwise idle.
source "$(dirname "$0")/lib.sh"
owner_config "$T/owner.toml"
S=$T/sensors
sense "$S" idle_seconds 1000
start_coordinator
start_worker laptop --slots 2 --config "$T/owner.toml" --sensors-dir "$S"
wait_until 20 is_owner_state laptop run
# Ticks every 50 ms until the gate "stop" opens (after the owner left again; however slow the
# machine, it cannot finish before its suspension), from a grandchild that left the process
# group (setsid) where the worker has cgroups: only a freeze of the whole tree stops it.
# Without cgroups the ticker stays in the group (SIGSTOP to the group is what suspends it then).
if has_cgroups laptop; then DETACH="setsid "; else DETACH=""; fi
cat >"$T/job.toml" <<TOML
name = "ticks"
command = ["sh", "-c", "${DETACH}sh -c 'i=0; while [ ! -e stop ]; do echo \$i >> ticks; i=\$((i+1)); sleep 0.05; done; touch done' </dev/null >/dev/null 2>&1 & while [ ! -e done ]; do sleep 0.02; done; wc -l < ticks > out.txt"]
count = 1
outputs = ["out.txt"]
TOML
JOB=$("$IDLEPOOL" submit "$T/job.toml")
wait_until 30 is_busy laptop
A=$(running_attempt "$JOB")
TICKS=$(attempt_task_dir laptop "$A")/ticks
wait_until 30 test -s "$TICKS"

sense "$S" idle_seconds 0        # the owner touches the keyboard
wait_until 10 is_owner_state laptop suspend
wait_until 10 job_at_least "$JOB" suspensions 1
n1=$(wc -l <"$TICKS")
sleep 0.5                        # 10 ticks' worth of time: a running task would move
n2=$(wc -l <"$TICKS")
[ "$n1" = "$n2" ] || fail "task progressed while suspended ($n1 -> $n2 ticks)"
# Not accepting: a second job waits, though the worker has a free slot.
JOB2=$("$IDLEPOOL" submit "$T/job.toml")
[ "$(job_field "$JOB2" running)" = 0 ] || fail "a suspended worker was given new work"

sense "$S" idle_seconds 1000     # the owner leaves
wait_until 10 is_owner_state laptop run
open_gate stop                   # the ticker stops: its task and the later ones finish
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "job $JOB did not finish after resuming"
"$IDLEPOOL" wait "$JOB2" --quiet >/dev/null || fail "job $JOB2 did not finish"
[ "$(job_field "$JOB" suspensions)" = 1 ] || fail "suspensions $(job_field "$JOB" suspensions)"
[ "$(job_field "$JOB" preemptions)" = 0 ] || fail "a suspension counted as a preemption"
[ "$(job_field "$JOB" failures)" = 0 ] || fail "a suspension counted as a failure"
[ "$(job_field "$JOB" attempts)" = 1 ] || fail "the task ran more than once"
pass "owner active: task frozen at $n1 ticks, resumed and finished; 1 suspension, 0 preemptions"

# An owner who cannot be sensed (no input reading, no load reading) is never assumed away: the
# worker says so at start in one line (what is missing, what it does), `workers` shows the owner
# state "unknown", and it takes no work. With a load reading (and no input one) the load stands in:
# work starts once the machine's own load has stayed low for start_idle_minutes.
kill -TERM "$WPID_laptop"; wait "$WPID_laptop" || fail "laptop did not stop cleanly"
mkdir -p "$T/empty"
start_worker desktop --slots 1 --sensors-dir "$T/empty"
wait_until 20 is_owner_state desktop unknown
[ "$(grep -c "owner protection: the owner's activity cannot be sensed" "$T/desktop.log")" = 1 ] ||
  fail "no one line about the unsensed owner: $(cat "$T/desktop.log")"
grep "owner protection" "$T/desktop.log" | grep -q "no readable idle_seconds file in the sensors dir $T/empty.*taking no work.*--dedicated" ||
  fail "the line does not say what is missing and what it does: $(grep "owner protection" "$T/desktop.log")"
"$IDLEPOOL" workers | grep -q "^desktop .* unknown (.*owner activity unknown" ||
  fail "workers does not show the owner state unknown: $("$IDLEPOOL" workers --wide)"
cat >"$T/echo.toml" <<'TOML'
name = "echo"
command = ["sh", "-c", "echo hi > out.txt"]
count = 1
outputs = ["out.txt"]
TOML
JOB3=$("$IDLEPOOL" submit "$T/echo.toml")
[ "$(job_field "$JOB3" running)" = 0 ] || fail "a worker whose owner cannot be sensed was given work"
Q=$T/quiet
sense "$Q" owner_cpu_load 0.05   # no input reading, but the machine is otherwise idle
start_worker quiet --slots 1 --config "$T/owner.toml" --sensors-dir "$Q"
"$IDLEPOOL" wait "$JOB3" --quiet >/dev/null || fail "job $JOB3 did not finish on the quiet worker"
[ "$(sql "SELECT DISTINCT worker FROM attempts WHERE job_id=$JOB3")" = quiet ] ||
  fail "job $JOB3 ran on $(sql "SELECT worker FROM attempts WHERE job_id=$JOB3")"
[ "$(owner_state quiet)" = unknown ] || fail "quiet's owner state: $(owner_state quiet)"
pass "unsensed owner: one line at start, owner state unknown, no work; a low load lets work start"
