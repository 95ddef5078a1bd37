#!/usr/bin/env bash
# A task's limits from the owner's policy (docs/guide/sandbox.md, "Limits inside"), with a
# worker whose policy says [sandbox] memory_mb = 64 and task_dir_mb = 32:
#   (a) a job that states no memory_mb and holds 200 MB is stopped, its attempt failed saying so;
#   (b) 128 MB written into /dev/shm count as its memory: stopped the same way;
#   (c) 96 MB written into its task dir pass the 32 MB quota: stopped, the message naming it;
# and the worker carries on: a normal job completes after them.
source "$(dirname "$0")/lib.sh"
sandbox_or_skip
start_coordinator
cat >"$T/owner.toml" <<'TOML'
[sandbox]
memory_mb = 64
task_dir_mb = 32
TOML
start_worker w --slots 1 --config "$T/owner.toml"
wait_until 20 is_connected w
grep -q "each task may hold 64 MB of memory (unless its job says) and 32 MB in its task dir" \
  "$T/w.log" || fail "the worker did not take the policy's limits"

# run_failing NAME SCRIPT WANT: a one-task job that must fail with WANT in its failure.
run_failing() {
  cat >"$T/$1.toml" <<TOML
name = "$1"
command = ["bash", "-c", $(jq -Rn --arg s "$2" '$s')]
count = 1
[retry]
max_attempts = 1
TOML
  local job rc=0
  job=$("$IDLEPOOL" submit "$T/$1.toml")
  "$IDLEPOOL" wait "$job" --quiet >/dev/null 2>&1 || rc=$?
  [ "$rc" != 0 ] || fail "$1: the job succeeded"
  "$IDLEPOOL" failures "$job" | grep -qF "$3" || fail "$1: want '$3' in: $("$IDLEPOOL" failures "$job")"
}

run_failing memory 'x=$(head -c 200000000 /dev/zero | tr "\0" a); sleep 100' \
  "stopped for using more memory than its limit"
pass "(a) a job stating no memory_mb was stopped at the policy's 64 MB"
run_failing shm 'head -c 134217728 /dev/zero > /dev/shm/big; sleep 100' \
  "stopped for using more memory than its limit"
pass "(b) 128 MB in /dev/shm counted as the task's memory"
run_failing disk 'head -c 100663296 /dev/zero > big.bin; sleep 100' \
  "its task dir grew past the worker's quota of 32 MB per task"
pass "(c) 96 MB in the task dir stopped at the 32 MB quota"

kill -0 "$WPID_w" || fail "the worker died"
cat >"$T/ok.toml" <<'TOML'
name = "ok"
command = ["sh", "-c", "head -c 1000000 /dev/zero > out.bin"]
count = 1
outputs = ["out.bin"]
TOML
JOB=$("$IDLEPOOL" submit "$T/ok.toml")
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "a normal job failed after them: $("$IDLEPOOL" failures "$JOB")"
pass "the worker carries on"
