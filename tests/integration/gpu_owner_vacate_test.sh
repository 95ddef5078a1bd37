#!/usr/bin/env bash
# A task frozen because the owner uses its GPU is not frozen forever: after the policy's
# vacate_after_suspend_seconds it is vacated (a preemption, never a failure) and runs again once
# the GPU is free, instead of holding the device's memory for the owner's whole session.
FAKE=$(dirname "${IDLEPOOL:?set IDLEPOOL to the idlepool binary}")
FAKE=$FAKE/tests/fake_nvml/libidlepool-fake-nvml.so
[ -f "$FAKE" ] || { echo "SKIP: no fake NVML library at $FAKE"; exit 77; }
source "$(dirname "$0")/lib.sh"
nvml_state() {
  printf '%s\n' "name=FakeGPU uuid=GPU-0001 pci=0000:01:00.0 memory_mb=16384 temp=40 util=0 pids=$1" \
    >"$T/nvml.tmp"
  mv "$T/nvml.tmp" "$T/nvml.state"
}
nvml_state ""
owner_config "$T/owner.toml"
sed -i 's/^vacate_after_suspend_seconds = .*/vacate_after_suspend_seconds = 1/' "$T/owner.toml"
grep -q '^vacate_after_suspend_seconds = 1$' "$T/owner.toml" || fail "could not set the policy"
mkdir -p "$T/no-sensors"
start_coordinator
IDLEPOOL_NVML_LIBRARY=$FAKE IDLEPOOL_FAKE_NVML_STATE=$T/nvml.state \
  start_worker gpubox --slots 2 --config "$T/owner.toml" --sensors-dir "$T/no-sensors" --dedicated
wait_until 20 is_connected gpubox
cat >"$T/job.toml" <<TOML
name = "gpu-long"
command = ["sh", "-c", "while [ ! -e go ]; do sleep 0.05; done"]
count = 1
[resources]
gpus = 1
[retry]
max_attempts = 1
TOML
JOB=$("$IDLEPOOL" submit "$T/job.toml")
wait_until 30 is_running_on "$JOB" gpubox
sleep 1000 &
OWNER=$!
PIDS+=($OWNER)
nvml_state "$OWNER"                     # the owner starts a program on the GPU
wait_until 30 job_at_least "$JOB" preemptions 1
[ "$(job_field "$JOB" failures)" = 0 ] || fail "the vacate counted as a failure"
sql "SELECT message FROM attempts WHERE job_id=$JOB AND outcome='preempted'" | grep -q "too long" \
  || fail "vacate reason: $(sql "SELECT outcome, message FROM attempts WHERE job_id=$JOB")"
pass "a task frozen for its GPU past vacate_after_suspend_seconds is vacated (preempted, not failed)"
kill "$OWNER"
nvml_state ""                           # the owner is done: the task runs again and finishes
wait_until 30 is_running_on "$JOB" gpubox
touch "$(attempt_task_dir gpubox "$(running_attempt "$JOB")")/go"  # in its (sandboxed) task dir
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "job did not succeed after the GPU was free"
pass "it runs again once the GPU is free"
