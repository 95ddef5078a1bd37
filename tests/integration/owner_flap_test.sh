#!/usr/bin/env bash
# An owner who cannot sit still: battery and keyboard flip every few tens of milliseconds while
# 400 short tasks run on 4 slots, so vacates and suspensions land in every phase of an attempt
# (staging, starting, running, uploading). Every task still succeeds exactly once, no
# preemption counts as a failure, and the worker keeps reacting (no deadlock).
source "$(dirname "$0")/lib.sh"
owner_config "$T/owner.toml"
S=$T/sensors
sense "$S" idle_seconds 1000
sense "$S" on_ac_power 1
cat >"$T/job.toml" <<'TOML'
name = "flap"
command = ["sh", "-c", "echo {index} > out-{index}.txt"]
count = 400
outputs = ["out-*.txt"]
[retry]
max_attempts = 1
TOML
start_coordinator --lease-timeout-ms 600000   # a stuck attempt must not be rescued by its lease
start_worker flappy --slots 4 --config "$T/owner.toml" --sensors-dir "$S"
wait_until 20 is_owner_state flappy run
JOB=$("$IDLEPOOL" submit "$T/job.toml")
# Flip for a few seconds, at uneven intervals.
end=$(( $(date +%s) + 6 ))
i=0
while [ "$(date +%s)" -lt "$end" ]; do
  i=$((i + 1))
  sense "$S" on_ac_power $((i % 2))
  [ $((i % 3)) = 0 ] && sense "$S" idle_seconds $(( (i % 2) * 1000 ))
  sleep 0.0$(( (i * 37) % 9 + 1 ))
done
sense "$S" idle_seconds 1000
sense "$S" on_ac_power 1
# The worker must still react: back to run, and the job must finish.
wait_until 20 is_owner_state flappy run
timeout 120 "$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "job did not finish after the flapping: $("$IDLEPOOL" status "$JOB")"
[ "$(job_field "$JOB" succeeded)" = 400 ] || fail "succeeded $(job_field "$JOB" succeeded)"
[ "$(job_field "$JOB" failures)" = 0 ] || fail "failures $(job_field "$JOB" failures)"
assert_outputs_once "$JOB" 400
pass "400 tasks under $i owner flips: all succeeded once; $(job_field "$JOB" preemptions) preemptions, $(job_field "$JOB" suspensions) suspensions, 0 failures"
