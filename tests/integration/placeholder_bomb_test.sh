#!/usr/bin/env bash
# A placeholder bomb (issue 21): "{frames}" of a 100,000-frame chunk, 2,000 times over, would
# render 1.1 GiB of argv on every worker that took it. It is refused at submit with the sizes,
# nothing is stored, and the pool then runs a normal job to the end, outputs once.
source "$(dirname "$0")/lib.sh"
{
  printf 'name = "bomb"\nframes = "1-100000"\nchunk = 100000\ncommand = ["echo"'
  for _ in $(seq 2000); do printf ', "{frames}"'; done
  printf ']\n'
} >"$T/bomb.toml"
[ "$(stat -c %s "$T/bomb.toml")" -lt 30000 ] || fail "the bomb spec is not small"
# A chunk whose frame list alone cannot be a variable (IDLEPOOL_FRAMES) is refused too.
printf 'name = "wide"\nframes = "1-30000"\nchunk = 30000\ncommand = ["true"]\n' >"$T/wide.toml"
cat >"$T/ok.toml" <<'TOML'
name = "after-the-bomb"
frames = "1-6"
chunk = 2
command = ["sh", "-c", "echo {frames} > out-{index}.txt"]
outputs = ["out-*.txt"]
TOML
start_coordinator
start_worker w1 --slots 2
wait_until 20 is_connected w1

rc=0; out=$("$IDLEPOOL" submit "$T/bomb.toml" 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "the bomb was submitted: $out"
echo "  bomb -> $out"
for want in "bomb.toml:4:" "key 'command'" "task 0 would start with 1.1 GiB of arguments" \
            "128 KiB per argument" "about 2 MiB in all"; do
  grep -qF "$want" <<<"$out" || fail "the refusal does not say '$want': $out"
done
rc=0; out=$("$IDLEPOOL" submit "$T/wide.toml" 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "a 30,000-frame chunk was submitted: $out"
grep -qF "key 'chunk'" <<<"$out" || fail "the refusal does not name the chunk: $out"
grep -qF "IDLEPOOL_FRAMES" <<<"$out" || fail "the refusal does not name the variable: $out"
[ "$(sql 'SELECT COUNT(*) FROM jobs')" = 0 ] || fail "a refused spec was stored"
pass "the bomb and an oversized chunk are refused at submit, with their sizes"

JOB=$("$IDLEPOOL" submit "$T/ok.toml")
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "the job after the bomb did not succeed"
assert_outputs_once "$JOB" 3
"$IDLEPOOL" fetch "$JOB" --out "$T/out" >/dev/null
[ "$(cat "$T/out/out-1.txt")" = "3,4" ] || fail "out-1.txt holds '$(cat "$T/out/out-1.txt")'"
is_connected w1 || fail "the worker is not connected any more"
kill -0 "$COORD_PID" || fail "the coordinator is gone"
pass "after the refusals a normal job completes, 3 outputs once, on the same worker"

# The worker's own check, for what the coordinator could not know: {task_dir} counts 256 bytes
# at submit, but this worker's work dir is over 600 bytes deep. 6,000 of them fit at submit
# (1.5 MiB) and not on the worker (3.8 MiB): the attempt fails saying why, nothing is rendered,
# and the worker stays up.
deep="$T/$(printf 'd%.0s' $(seq 200))/$(printf 'e%.0s' $(seq 200))/$(printf 'f%.0s' $(seq 200))"
mkdir -p "$deep"
{
  printf 'name = "deep"\ncount = 1\ncommand = ["true"'
  for _ in $(seq 6000); do printf ', "{task_dir}"'; done
  printf ']\n[retry]\nmax_attempts = 1\n'
} >"$T/deep.toml"
"$IDLEPOOL" worker --name deep --work-dir "$deep/work" --sensors-dir "$T/no-sensors" --dedicated \
  --join "$ADDR" --token-file "$JOIN_TOKEN_FILE" \
  >>"$T/deep.log" 2>&1 &
PIDS+=($!)
DEEP_PID=$!
wait_until 20 is_connected deep
kill -TERM "$WPID_w1"  # only the deep worker takes work now
wait_until 20 dead "$WPID_w1"
JOB=$("$IDLEPOOL" submit "$T/deep.toml")
rc=0; "$IDLEPOOL" wait "$JOB" --quiet >/dev/null 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "the deep job succeeded"
[ "$(job_field "$JOB" state)" = failed ] || fail "the deep job is $(job_field "$JOB" state)"
msg=$(sql "SELECT message FROM attempts WHERE job_id=$JOB")
grep -qF "command: task 0 would start with 3." <<<"$msg" || fail "attempt message: $msg"
grep -qF "(not rendered)" <<<"$msg" || fail "attempt message: $msg"
[ "$(sql "SELECT worker FROM attempts WHERE job_id=$JOB")" = deep ] || fail "ran elsewhere"
kill -0 "$DEEP_PID" || fail "the deep worker died"
pass "a command too big for a worker's real paths fails its attempt cleanly: $msg"
