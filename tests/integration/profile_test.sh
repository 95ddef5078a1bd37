#!/usr/bin/env bash
# Per-attempt timing and job profiles: a job of 4 tasks that each sleep 0.5 s and write an output
# of known size runs on 2 workers; GetProfile (`idlepool profile`) then returns its 4 succeeded
# attempts with run_ms >= the sleep, the output and input bytes the tasks moved, and stage + run +
# upload within the coordinator's wall time of the attempt. Resubmitting the same spec on the
# same input gives the same profile key; another command, or another input, gives another one.
source "$(dirname "$0")/lib.sh"
head -c 3000 /dev/urandom >"$T/scene.dat"
# Each output differs (its task index first), so every one is uploaded: 2 + 12340 bytes.
job() {  # job FILE COMMAND-PREFIX INPUT
  cat >"$1" <<TOML
name = "prof"
command = ["sh", "-c", "$2; (printf '%d\\\\n' {index}; head -c 12340 /dev/zero) > out-{index}.bin"]
count = 4
inputs = ["$3"]
outputs = ["out-*.bin"]
TOML
}
job "$T/job.toml" "sleep 0.5" "$T/scene.dat"
start_coordinator
for w in w1 w2; do start_worker $w --slots 1; done
wait_until 20 is_connected w1; wait_until 20 is_connected w2
JOB=$("$IDLEPOOL" submit "$T/job.toml")
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "job $JOB did not succeed: $("$IDLEPOOL" status "$JOB")"
"$IDLEPOOL" fetch "$JOB" --out "$T/out" >/dev/null
[ "$(stat -c %s "$T/out/out-3.bin")" = 12342 ] || fail "output size $(stat -c %s "$T/out/out-3.bin")"

KEY=$("$IDLEPOOL" status "$JOB" --json | jq -r .profile_key)
[[ "$KEY" =~ ^[0-9a-f]{64}$ ]] || fail "status profile_key '$KEY'"
# The CLI computes the same key from the spec file, without submitting it.
"$IDLEPOOL" profile --spec "$T/job.toml" --json >"$T/spec-profile.json" || fail "profile --spec failed"
[ "$(jq -r .profile_key "$T/spec-profile.json")" = "$KEY" ] || fail "profile --spec key differs: $(jq -r .profile_key "$T/spec-profile.json") vs $KEY"

"$IDLEPOOL" profile "$JOB" --json >"$T/profile.json" || fail "profile $JOB failed"
P="$T/profile.json"
jq -e --arg k "$KEY" '.profile_key == $k and (.samples | length) == 4' "$P" >/dev/null \
  || fail "profile: $(cat "$P")"
# Every task once, all of this job.
[ "$(jq -c '[.samples[].task] | sort' "$P")" = "[0,1,2,3]" ] || fail "tasks: $(jq -c '[.samples[].task]' "$P")"
jq -e --argjson j "$JOB" 'all(.samples[]; .job == $j)' "$P" >/dev/null || fail "jobs: $(cat "$P")"
# The task slept 0.5 s: its run time is at least that (measured from before the spawn).
jq -e 'all(.samples[]; .run_ms >= 500)' "$P" >/dev/null || fail "run_ms < 500: $(jq -c '[.samples[].run_ms]' "$P")"
# Bytes: each attempt uploaded its own output and staged the whole input.
jq -e 'all(.samples[]; .transfer.output_bytes == 12342 and .transfer.input_bytes == 3000)' "$P" \
  >/dev/null || fail "bytes: $(jq -c '[.samples[].transfer]' "$P")"
# The worker's stage + run + upload happen between the coordinator's recorded start (before the
# assignment is sent) and end (after the report came): within its wall time, give or take the
# one millisecond that rounding two clocks to whole milliseconds can cost.
jq -e 'all(.samples[]; .wall_ms + 1 >= .stage_ms + .run_ms + .upload_ms and .wall_ms >= .run_ms)' \
  "$P" >/dev/null || fail "wall: $(jq -c '[.samples[] | [.wall_ms, .stage_ms, .run_ms, .upload_ms]]' "$P")"
# Newest first.
jq -e '[.samples[].ended_ms] as $e | $e == ($e | sort | reverse)' "$P" >/dev/null \
  || fail "order: $(jq -c '[.samples[].ended_ms]' "$P")"
jq -e --argjson j "$JOB" '.jobs == [{"job": $j, "name": "prof", "state": "succeeded", "tasks": 4,
       "input_bytes": 3000, "input_files": 1, "profile_key": .profile_key}]' "$P" >/dev/null \
  || fail "job-level: $(jq -c .jobs "$P")"
# The per-worker summary accounts for every attempt.
jq -e '([.workers[].tasks] | add) == 4 and all(.workers[]; .median_run_s >= 0.5)' "$P" >/dev/null \
  || fail "workers: $(jq -c .workers "$P")"
# The store has the same figures (attempts table).
[ "$(sql "SELECT COUNT(*) FROM attempts WHERE job_id=$JOB AND outcome='succeeded' AND run_ms >= 500")" = 4 ] \
  || fail "store timing: $(sql "SELECT id, stage_ms, run_ms, upload_ms FROM attempts WHERE job_id=$JOB")"
"$IDLEPOOL" profile "$JOB" >"$T/profile.txt" || fail "profile text failed"
grep -q "^w[12] " "$T/profile.txt" || fail "text: $(cat "$T/profile.txt")"

# The same spec again: the same key, and the key's history now spans both jobs.
JOB2=$("$IDLEPOOL" submit "$T/job.toml")
"$IDLEPOOL" wait "$JOB2" --quiet >/dev/null || fail "job $JOB2 did not succeed"
[ "$("$IDLEPOOL" status "$JOB2" --json | jq -r .profile_key)" = "$KEY" ] || fail "resubmission got another key"
"$IDLEPOOL" profile --key "$KEY" --json >"$T/key.json" || fail "profile --key failed"
jq -e '(.samples | length) == 8 and ([.jobs[].job] | length) == 2' "$T/key.json" >/dev/null \
  || fail "key history: $(jq -c '{n: (.samples | length), jobs: [.jobs[].job]}' "$T/key.json")"
"$IDLEPOOL" profile --key "$KEY" --max-samples 3 --json | jq -e '(.samples | length) == 3' >/dev/null \
  || fail "--max-samples 3 not respected"

# Another command, or another input: another key (known at submission; no need to run them).
job "$T/cmd.toml" "sleep 0.2" "$T/scene.dat"
head -c 3000 /dev/urandom >"$T/scene2.dat"
job "$T/input.toml" "sleep 0.5" "$T/scene2.dat"
for f in cmd input; do
  J=$("$IDLEPOOL" submit "$T/$f.toml")
  K=$("$IDLEPOOL" status "$J" --json | jq -r .profile_key)
  [[ "$K" =~ ^[0-9a-f]{64}$ && "$K" != "$KEY" ]] || fail "$f: key '$K' (first job's: $KEY)"
done

# Bad requests are refused clearly (exit 2), and the coordinator stays up.
rc=0; "$IDLEPOOL" profile >/dev/null 2>&1 || rc=$?; [ $rc = 2 ] || fail "profile without a target: rc $rc"
rc=0; "$IDLEPOOL" profile --key nothex >/dev/null 2>"$T/bad.out" || rc=$?
[ $rc = 2 ] || fail "bad key: rc $rc"; grep -q "64 lowercase hex" "$T/bad.out" || fail "bad key: $(cat "$T/bad.out")"
rc=0; "$IDLEPOOL" profile 999 >/dev/null 2>&1 || rc=$?; [ $rc = 1 ] || fail "unknown job: rc $rc"
is_connected w1 || fail "coordinator gone"
pass "profile: 4 samples with run >= sleep, exact bytes, times within wall time; keys match and differ as they should"
