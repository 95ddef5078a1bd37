#!/usr/bin/env bash
# An output the coordinator refuses for good (over its per-blob cap) ends the attempt as failed,
# once, with a message naming the output, its size and the cap; the worker neither retries the
# upload nor reads the output again. The cap is lowered to 1 MiB for the test
# (IDLEPOOL_FAULT_MAX_BLOB_BYTES); the output is 2 MiB. A 512 KiB output still goes up.
source "$(dirname "$0")/lib.sh"
export IDLEPOOL_FAULT_MAX_BLOB_BYTES=1048576
start_coordinator
unset IDLEPOOL_FAULT_MAX_BLOB_BYTES
grep -q "blobs over 1048576 bytes are refused" "$T/coordinator.log" || fail "the cap was not lowered"
start_worker w --slots 1
wait_until 20 is_connected w

cat >"$T/big.toml" <<'TOML'
name = "big-output"
command = ["sh", "-c", "head -c 2097152 /dev/zero > big.bin"]
count = 1
outputs = ["big.bin"]
[retry]
max_attempts = 2
TOML
JOB=$("$IDLEPOOL" submit "$T/big.toml")
# Bounded: the worker that retried a refused upload forever never ended this attempt.
wait_until 60 job_done "$JOB"
[ "$(job_field "$JOB" state)" = failed ] || fail "the job is $(job_field "$JOB" state), not failed"
msg=$("$IDLEPOOL" failures "$JOB")
for want in "output 'big.bin' (2097152 bytes) was refused by the coordinator" "limit of 1048576"; do
  echo "$msg" | grep -qF "$want" || fail "want '$want' in the failure: $msg"
done
attempts=$(sql "SELECT COUNT(*) FROM attempts WHERE job_id=$JOB")
failed=$(sql "SELECT COUNT(*) FROM attempts WHERE job_id=$JOB AND outcome='failed'")
[ "$attempts" = 2 ] && [ "$failed" = 2 ] || fail "want 2 failed attempts (max_attempts), got $failed of $attempts"
retries=$(grep -c "upload of big.bin failed" "$T/w.log" || true)
[ "$retries" = 0 ] || fail "the worker retried the refused upload $retries times"
pass "a 2 MiB output over a 1 MiB cap failed each attempt once, naming the output, its size and the cap; no upload retried"

cat >"$T/small.toml" <<'TOML'
name = "small-output"
command = ["sh", "-c", "head -c 524288 /dev/zero > small.bin"]
count = 1
outputs = ["small.bin"]
TOML
JOB=$("$IDLEPOOL" submit "$T/small.toml")
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "a 512 KiB output failed: $("$IDLEPOOL" failures "$JOB")"
pass "an output under the cap still goes up"
