#!/usr/bin/env bash
# `idlepool plan JOB.toml` and the predicted-vs-actual makespan of `idlepool status --json`, on a
# real coordinator and 3 real workers (1 slot each). Tasks sleep 1 s and write an output of known
# size from one input of known size, so the profile's figures are known exactly (bytes) or bounded
# below (a measured task time is at least the sleep). Nothing here asserts how long our code takes:
# only relations between the reported figures (speedup = single / pool, the terms add up to the
# makespan, error = (predicted - actual) / actual) and what must or must not have happened
# (a calibration job and its size, no job submitted by a refused or repeated plan, a prediction
# kept across a coordinator restart).
source "$(dirname "$0")/lib.sh"

INPUT_BYTES=3000
head -c $INPUT_BYTES /dev/urandom >"$T/scene.dat"
# Each output differs (its one-digit task index first, tasks < 10 here), so every one is uploaded:
# 2 + 20000 bytes.
OUT_BYTES=20002
job() {  # job FILE NAME COUNT COMMAND-PREFIX
  cat >"$1" <<TOML
name = "$2"
command = ["sh", "-c", "$4; (printf '%d\\\\n' {index}; head -c 20000 /dev/zero) > out-{index}.bin"]
count = $3
inputs = ["$T/scene.dat"]
outputs = ["out-*.bin"]
TOML
}
# close A B: |A - B| <= 1e-6 |B| (+ 1e-9 absolute, for B = 0).
close() {
  awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b;
                                   exit !(a != "" && b != "" && d <= 1e-6 * m + 1e-9) }'
}
njobs() { "$IDLEPOOL" status --json | jq '.jobs | length'; }
plan_rc() {  # plan_rc OUT-PREFIX ARGS...: runs plan, stdout/stderr in $T/PREFIX.{json,err}; sets RC
  local out=$1; shift
  RC=0; "$IDLEPOOL" plan "$@" >"$T/$out.json" 2>"$T/$out.err" || RC=$?
}

job "$T/job.toml" render 8 "sleep 1"
start_coordinator
for w in w1 w2 w3; do start_worker $w --slots 1; done
is_ready() { is_connected "$1" && [ "$("$IDLEPOOL" workers --json | jq -r --arg w "$1" '.workers[] | select(.worker==$w) | .accepting')" = true ]; }
for w in w1 w2 w3; do wait_until 20 is_ready $w; done
NW=3

# 1. No history: plan calibrates on one task per available worker (3), then predicts.
plan_rc plan1 "$T/job.toml" --json
[ $RC = 0 ] || fail "plan (calibrating): rc $RC: $(cat "$T/plan1.err")"
P="$T/plan1.json"
grep -q "no history for this job: calibrating on $NW of its 8 tasks" "$T/plan1.err" \
  || fail "plan did not say it calibrates: $(cat "$T/plan1.err")"
CAL=$(jq -r .calibration_job "$P")
[[ "$CAL" =~ ^[0-9]+$ ]] || fail "calibration_job '$CAL'"
"$IDLEPOOL" status "$CAL" --json >"$T/cal.json"
jq -e --argjson n $NW '.name == "render.calibrate" and .state == "succeeded" and .tasks == $n
                       and .succeeded == $n' "$T/cal.json" >/dev/null \
  || fail "calibration job: $(jq -c '{name, state, tasks, succeeded}' "$T/cal.json")"
jq -e '.job == "render" and .tasks == 8 and (.profile_key | test("^[0-9a-f]{64}$"))' "$P" >/dev/null \
  || fail "plan header: $(jq -c '{job, tasks, profile_key}' "$P")"
jq -e '.pool.makespan_s > 0 and .single.makespan_s > 0' "$P" >/dev/null \
  || fail "makespans: $(jq -c '{pool: .pool.makespan_s, single: .single.makespan_s}' "$P")"
close "$(jq -r .speedup "$P")" "$(jq -r '.single.makespan_s / .pool.makespan_s' "$P")" \
  || fail "speedup $(jq -r .speedup "$P") != single / pool ($(jq -c '[.single.makespan_s, .pool.makespan_s]' "$P"))"
close "$(jq -r .pool.speedup "$P")" "$(jq -r .speedup "$P")" || fail "pool.speedup differs from speedup"
jq -e '.verdict | IN("pool", "single machine", "pool with only these workers")' "$P" >/dev/null \
  || fail "verdict '$(jq -r .verdict "$P")'"
jq -e --argjson a $INPUT_BYTES --argjson o $OUT_BYTES \
  '.shared_asset_bytes == $a and .output_bytes_per_task == $o' "$P" >/dev/null \
  || fail "bytes: $(jq -c '{shared_asset_bytes, output_bytes_per_task}' "$P")"
# The samples are the calibration's attempts: one success per task.
jq -e --argjson n $NW '.samples == $n and (.basis | test("history")) and .pool.workers == $n
                       and (.workers | length) == $n' "$P" >/dev/null \
  || fail "samples/basis/workers: $(jq -c '{samples, basis, pool: .pool.workers, workers: [.workers[].worker]}' "$P")"
[ "$(jq -c '[.workers[].worker] | sort' "$P")" = '["w1","w2","w3"]' ] || fail "workers: $(jq -c '[.workers[].worker]' "$P")"
# A worker's measured time is at least the task's sleep; every worker has a positive time, and
# the workers' own samples are the calibration's.
jq -e 'all(.workers[]; .task_s > 0 and (.task_s_source != "measured" or .task_s >= 1))
       and any(.workers[]; .task_s_source == "measured")
       and ([.workers[].samples] | add) == .samples' "$P" >/dev/null \
  || fail "worker task times: $(jq -c '[.workers[] | {worker, task_s, task_s_source, samples}]' "$P")"
# The predicted schedule runs every task once.
jq -e '([.workers[].tasks] | add) == .tasks' "$P" >/dev/null \
  || fail "scheduled tasks: $(jq -c '[.workers[].tasks]' "$P")"
jq -e '(.what_if | length) > 0 and all(.what_if[]; (.what | length) > 0)' "$P" >/dev/null \
  || fail "what_if: $(jq -c .what_if "$P")"
close "$(jq -r '[.pool.terms[]] | add' "$P")" "$(jq -r .pool.makespan_s "$P")" \
  || fail "terms $(jq -c .pool.terms "$P") do not add up to $(jq -r .pool.makespan_s "$P")"
jq -e '.pool.bottleneck | IN("compute", "coordinator_uplink", "coordinator_downlink",
                             "worker_links", "churn", "tail")' "$P" >/dev/null \
  || fail "bottleneck '$(jq -r .pool.bottleneck "$P")'"
KEY=$(jq -r .profile_key "$P")
"$IDLEPOOL" profile --spec "$T/job.toml" --json | jq -e --arg k "$KEY" '.profile_key == $k' >/dev/null \
  || fail "plan's profile key differs from profile --spec's"
pass "plan without history: calibration job $CAL of $NW tasks, then a consistent prediction"

# 2. Again: the calibration's attempts are the history; nothing is submitted.
before=$(njobs)
plan_rc plan2 "$T/job.toml" --json
[ $RC = 0 ] || fail "plan (history): rc $RC: $(cat "$T/plan2.err")"
jq -e --argjson n $NW '.calibration_job == null and (.basis | test("history")) and .samples == $n' \
  "$T/plan2.json" >/dev/null || fail "second plan: $(jq -c '{calibration_job, basis, samples}' "$T/plan2.json")"
grep -q calibrating "$T/plan2.err" && fail "second plan calibrated: $(cat "$T/plan2.err")"
[ "$(njobs)" = "$before" ] || fail "second plan submitted a job ($before -> $(njobs) jobs)"
# The text form says the same.
"$IDLEPOOL" plan "$T/job.toml" >"$T/plan2.txt" 2>&1 || fail "plan (text) failed: $(cat "$T/plan2.txt")"
grep -q "^plan for 'render': 8 tasks" "$T/plan2.txt" && grep -q "^verdict: " "$T/plan2.txt" \
  || fail "plan text: $(cat "$T/plan2.txt")"
[ "$(njobs)" = "$before" ] || fail "text plan submitted a job"
pass "plan with history: no calibration, no job submitted"

# 3. Submitted, the job is predicted from that history, and checked once it is over.
JOB=$("$IDLEPOOL" submit "$T/job.toml")
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "job $JOB did not succeed: $("$IDLEPOOL" status "$JOB")"
S="$T/status.json"
"$IDLEPOOL" status "$JOB" --json >"$S"
# Made from history only (the calibration's attempts), never from the job's own.
jq -e --argjson n $NW '.prediction.makespan_s > 0 and .prediction.single.makespan_s > 0
       and (.prediction.basis | test("history")) and .prediction.samples == $n
       and (.prediction.workers | length) == $n and .prediction.made_ms >= .submitted_ms' "$S" >/dev/null \
  || fail "prediction: $(jq -c '{prediction, submitted_ms}' "$S")"
close "$(jq -r .actual_makespan_s "$S")" "$(jq -r '(.finished_ms - .submitted_ms) / 1000' "$S")" \
  || fail "actual_makespan_s $(jq -r .actual_makespan_s "$S") vs $(jq -c '[.submitted_ms, .finished_ms]' "$S")"
close "$(jq -r .actual_makespan_s "$S")" "$(jq -r .makespan_s "$S")" || fail "actual_makespan_s != makespan_s"
ERR=$(awk -v p="$(jq -r .prediction.makespan_s "$S")" -v a="$(jq -r .actual_makespan_s "$S")" \
  'BEGIN { printf "%.17g", (p - a) / a }')
close "$(jq -r .prediction_error "$S")" "$ERR" || fail "prediction_error $(jq -r .prediction_error "$S"), want $ERR"
PRED=$(jq -c .prediction "$S")
"$IDLEPOOL" status "$JOB" >"$T/status.txt"
grep -q "predicted makespan .* on $NW workers .*history.*vs the actual" "$T/status.txt" \
  || fail "status text: $(cat "$T/status.txt")"
pass "job $JOB: predicted $(jq -r .prediction.makespan_s "$S") s from history, actual $(jq -r .actual_makespan_s "$S") s, error recomputed"

# 4. Another command (another profile key) without history: --no-calibrate refuses and submits
# nothing; --task-seconds plans without a profile.
job "$T/other.toml" other 8 "sleep 0.3"
before=$(njobs)
plan_rc nocal "$T/other.toml" --no-calibrate --json
[ $RC = 1 ] || fail "--no-calibrate without history: rc $RC: $(cat "$T/nocal.err")"
grep -q -- "calibrate" "$T/nocal.err" && grep -q -- "--task-seconds" "$T/nocal.err" \
  || fail "--no-calibrate message: $(cat "$T/nocal.err")"
[ -s "$T/nocal.json" ] && fail "--no-calibrate printed a plan: $(cat "$T/nocal.json")"
[ "$(njobs)" = "$before" ] || fail "--no-calibrate submitted a job"
plan_rc given "$T/other.toml" --no-calibrate --task-seconds 2 --output-bytes 1MiB --json
[ $RC = 0 ] || fail "--task-seconds 2: rc $RC: $(cat "$T/given.err")"
jq -e --argjson n $NW '.calibration_job == null and .tasks == 8 and .output_bytes_per_task == 1048576
       and (.workers | length) == $n and all(.workers[]; .task_s == 2 and .task_s_source == "given")
       and .single.makespan_s > 0 and .pool.makespan_s > 0' "$T/given.json" >/dev/null \
  || fail "--task-seconds plan: $(jq -c '{calibration_job, output_bytes_per_task, workers: [.workers[] | {worker, task_s, task_s_source}]}' "$T/given.json")"
close "$(jq -r '[.pool.terms[]] | add' "$T/given.json")" "$(jq -r .pool.makespan_s "$T/given.json")" \
  || fail "--task-seconds terms do not add up"
[ "$(njobs)" = "$before" ] || fail "--task-seconds plan submitted a job"
# --calibrate K: a calibration run of exactly K tasks.
job "$T/k2.toml" ktwo 8 "sleep 0.2"
plan_rc k2 "$T/k2.toml" --calibrate 2 --json
[ $RC = 0 ] || fail "--calibrate 2: rc $RC: $(cat "$T/k2.err")"
grep -q "calibrating on 2 of its 8 tasks" "$T/k2.err" || fail "--calibrate 2: $(cat "$T/k2.err")"
K2=$(jq -r .calibration_job "$T/k2.json")
[[ "$K2" =~ ^[0-9]+$ ]] || fail "--calibrate 2: calibration_job '$K2'"
"$IDLEPOOL" status "$K2" --json | jq -e '.name == "ktwo.calibrate" and .state == "succeeded" and .tasks == 2' \
  >/dev/null || fail "--calibrate 2 job: $("$IDLEPOOL" status "$K2" --json | jq -c '{name, state, tasks}')"
jq -e '.samples == 2' "$T/k2.json" >/dev/null || fail "--calibrate 2 samples $(jq -r .samples "$T/k2.json")"
[ "$(njobs)" = $((before + 1)) ] || fail "--calibrate 2 submitted $(( $(njobs) - before )) jobs"
pass "no history: --no-calibrate refuses (rc 1, nothing submitted), --task-seconds/--output-bytes used as given, --calibrate 2 runs 2 tasks"

# 5. A job submitted without any history is predicted from its own first attempts (12 tasks of
# 1 s on 3 one-slot workers: still running after 3 successes).
job "$T/fresh.toml" fresh 12 "sleep 1.0"
FRESH=$("$IDLEPOOL" submit "$T/fresh.toml")
"$IDLEPOOL" wait "$FRESH" --quiet >/dev/null || fail "job $FRESH did not succeed: $("$IDLEPOOL" status "$FRESH")"
F="$T/fresh.json"
"$IDLEPOOL" status "$FRESH" --json >"$F"
jq -e '.prediction != null and .prediction.makespan_s > 0
       and (.prediction.basis | test("^this job.s first [0-9]+ attempts$"))
       and .prediction.samples >= 3' "$F" >/dev/null \
  || fail "fresh job's prediction: $(jq -c .prediction "$F")"
# Its samples are its own successes when it was predicted.
[ "$(jq -r '.prediction.basis | capture("first (?<n>[0-9]+)").n' "$F")" = "$(jq -r .prediction.samples "$F")" ] \
  || fail "basis and samples disagree: $(jq -c .prediction "$F")"
FERR=$(awk -v p="$(jq -r .prediction.makespan_s "$F")" -v a="$(jq -r .actual_makespan_s "$F")" \
  'BEGIN { printf "%.17g", (p - a) / a }')
close "$(jq -r .prediction_error "$F")" "$FERR" || fail "fresh prediction_error $(jq -r .prediction_error "$F"), want $FERR"
FPRED=$(jq -c .prediction "$F")
pass "job $FRESH without history: predicted from $(jq -r .prediction.basis "$F")"

# 6. Bad input: exit 2, nothing submitted, the coordinator unharmed.
before=$(njobs)
plan_rc bad "$T/job.toml" --pattern allreduce --compute-ms 10
[ $RC = 2 ] || fail "JOB and --pattern: rc $RC"; grep -q "either" "$T/bad.err" || fail "JOB and --pattern: $(cat "$T/bad.err")"
plan_rc bad
[ $RC = 2 ] || fail "neither JOB nor --pattern: rc $RC"; grep -q "either" "$T/bad.err" || fail "neither: $(cat "$T/bad.err")"
# On a spec without history, so that a plan that went on would have calibrated.
job "$T/nohist.toml" nohist 4 "sleep 0.4"
plan_rc bad "$T/nohist.toml" --workers w1,nosuch --json
[ $RC = 2 ] || fail "--workers nosuch: rc $RC: $(cat "$T/bad.err")"
grep -q "nosuch" "$T/bad.err" || fail "--workers nosuch does not name the worker: $(cat "$T/bad.err")"
plan_rc bad "$T/missing.toml"
[ $RC = 2 ] || fail "missing spec: rc $RC"; grep -q "missing.toml" "$T/bad.err" || fail "missing spec: $(cat "$T/bad.err")"
plan_rc bad "$T/nohist.toml" --task-seconds -1
[ $RC = 2 ] || fail "--task-seconds -1: rc $RC: $(cat "$T/bad.err")"; grep -q -- "--task-seconds" "$T/bad.err" || fail "--task-seconds -1: $(cat "$T/bad.err")"
plan_rc bad "$T/nohist.toml" --output-bytes banana
[ $RC = 2 ] || fail "--output-bytes banana: rc $RC: $(cat "$T/bad.err")"; grep -q -- "--output-bytes" "$T/bad.err" || fail "--output-bytes banana: $(cat "$T/bad.err")"
printf 'name = "broken"\ncount = 3\n' >"$T/broken.toml"   # no command
plan_rc bad "$T/broken.toml"
[ $RC = 2 ] || fail "spec without a command: rc $RC: $(cat "$T/bad.err")"
[ "$(njobs)" = "$before" ] || fail "a refused plan submitted a job ($before -> $(njobs))"
"$IDLEPOOL" workers >/dev/null || fail "coordinator gone after bad plans"
is_connected w1 || fail "w1 not connected after bad plans"
# --workers with real names plans on those only.
plan_rc sub "$T/job.toml" --workers w1,w2 --json
[ $RC = 0 ] || fail "--workers w1,w2: rc $RC: $(cat "$T/sub.err")"
[ "$(jq -c '[.workers[].worker] | sort' "$T/sub.json")" = '["w1","w2"]' ] || fail "--workers w1,w2: $(jq -c '[.workers[].worker]' "$T/sub.json")"
pass "bad plans refused with exit 2, nothing submitted, coordinator up"

# 7. The predictions are stored: a restarted coordinator reports the same ones, and plans from
# the same history.
kill -9 "$COORD_PID"
wait_until 10 dead "$COORD_PID"
start_coordinator
for w in w1 w2 w3; do wait_until 30 is_ready $w; done
[ "$("$IDLEPOOL" status "$JOB" --json | jq -c .prediction)" = "$PRED" ] \
  || fail "job $JOB's prediction changed across the restart: $("$IDLEPOOL" status "$JOB" --json | jq -c .prediction) vs $PRED"
[ "$("$IDLEPOOL" status "$FRESH" --json | jq -c .prediction)" = "$FPRED" ] \
  || fail "job $FRESH's prediction changed across the restart"
"$IDLEPOOL" status "$JOB" --json | jq -e '.prediction_error != null' >/dev/null || fail "no prediction_error after restart"
before=$(njobs)
plan_rc plan3 "$T/job.toml" --json
[ $RC = 0 ] || fail "plan after restart: rc $RC: $(cat "$T/plan3.err")"
jq -e '.calibration_job == null and (.basis | test("history"))' "$T/plan3.json" >/dev/null \
  || fail "plan after restart: $(jq -c '{calibration_job, basis}' "$T/plan3.json")"
[ "$(njobs)" = "$before" ] || fail "plan after restart submitted a job"
pass "predictions kept across a coordinator restart"
