#!/usr/bin/env bash
# A worker that takes work and never reports (issue 21, point 7): "rogue-stall"
# (tests/tools/rogue_worker.cc) offers 4 slots, heartbeats, and ignores its assignments. With
# the default policy and no timeout_s, its attempts used to stay running for as long as it
# heartbeated. Now an attempt with no report or checkpoint for max(10 s, 10 x the job's median
# attempt) is moved (core/stall.h): it ends lost with a "stalled: ..." message (never a failure),
# the rogue is killed out of it and gets no more work (`workers --json` .stalled says why), and
# the job, 40 tasks of 0.5 s on one honest slot (longer than the limit, so backups never start
# before it), completes with every output once. The coordinator's memory and fds are measured.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../../bench/attacks/stall.sh"
[ -x "$(dirname "$IDLEPOOL")/idlepool-rogue-worker" ] || { echo "SKIP: no rogue worker"; exit 77; }
kb() { awk -v k="$2:" '$1==k{print $2}' "/proc/$1/status"; }
fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 | wc -l; }

start_coordinator
start_worker w1 --slots 1
wait_until 20 is_connected w1
IDLE_RSS=$(kb "$COORD_PID" VmRSS)
IDLE_FDS=$(fds "$COORD_PID")

attack_stall
JOB=$(cat "$T/stall.job")
[ -n "$JOB" ] || fail "the job was not submitted"
sed 's/^/  /' "$T/rogue-stall.out"
[ "$(job_field "$JOB" state)" = succeeded ] || fail "job $JOB is $(job_field "$JOB" state)"
assert_outputs_once "$JOB" 40
grep -q "^stall: assigned 4 killed 4 " "$T/rogue-stall.out" \
  || fail "the rogue was not given exactly its 4 first attempts, each killed: $(cat "$T/rogue-stall.out")"
moved=$(sql "SELECT COUNT(*) FROM attempts WHERE job_id=$JOB AND worker='rogue-stall' AND outcome='lost' AND message LIKE 'stalled: no report or checkpoint for %'")
[ "$moved" = 4 ] || fail "$moved of the rogue's attempts ended lost as stalled"
echo "  $(sql "SELECT message FROM attempts WHERE job_id=$JOB AND worker='rogue-stall' LIMIT 1")"
[ "$(job_field "$JOB" failures)" = 0 ] || fail "stalled attempts counted as failures"
[ "$(job_field "$JOB" attempts_lost)" = 4 ] || fail "attempts_lost is $(job_field "$JOB" attempts_lost)"
stalled=$("$IDLEPOOL" workers --json | jq -r '.workers[] | select(.worker=="rogue-stall") | .stalled')
[[ "$stalled" == "stalled: "* ]] || fail "workers --json does not say the rogue stalled: '$stalled'"
[ "$("$IDLEPOOL" workers --json | jq -r '.workers[] | select(.worker=="w1") | .stalled')" = "" ] \
  || fail "the honest worker is marked stalled"
pass "the stalled attempts were moved (lost, not failed), the rogue got no more work, the job completed once"

echo "  coordinator: VmRSS $IDLE_RSS -> $(kb "$COORD_PID" VmRSS) kB, VmHWM $(kb "$COORD_PID" VmHWM) kB, fds $IDLE_FDS -> $(fds "$COORD_PID")"
near_idle() { [ "$(fds "$COORD_PID")" -le $((IDLE_FDS + 4)) ]; }
wait_until 20 near_idle
cat >"$T/after.toml" <<'TOML'
name = "after"
count = 6
command = ["sh", "-c", "echo {index} > out-{index}.txt"]
outputs = ["out-*.txt"]
TOML
AFTER=$("$IDLEPOOL" submit "$T/after.toml")
"$IDLEPOOL" wait "$AFTER" --quiet >/dev/null || fail "the job after the attack did not succeed"
assert_outputs_once "$AFTER" 6
pass "a normal job completes after the attack, outputs once"
