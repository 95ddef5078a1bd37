has_gpu_events() { [ "$(gpu_events)" = "$want" ]; }
wait_until 10 has_gpu_events || fail "gpu worker events: $(gpu_events), want $want"#!/usr/bin/env bash
# GPU owner signals on a worker with two fake NVIDIA GPUs (tests/fake_nvml; its state file is
# re-read on every NVML call). The pool's own task listed on its device is not the owner: no
# suspension. A foreign process (a real `sleep` this test starts) listed on device 0 freezes the
# task on device 0 only: the task on device 1 and a CPU-only task keep running; it resumes when
# the process goes. Device 0 over the temperature threshold (85 C by default) freezes it again,
# and it resumes once cool. While the owner uses device 0, no new GPU attempt gets it.
FAKE=$(dirname "${IDLEPOOL:?set IDLEPOOL to the idlepool binary}")
FAKE=$FAKE/tests/fake_nvml/libidlepool-fake-nvml.so
[ -f "$FAKE" ] || { echo "SKIP: no fake NVML library at $FAKE"; exit 77; }
source "$(dirname "$0")/lib.sh"
# The worker runs --no-sandbox: these tasks talk to the test through files in $T, which a
# sandbox hides (GPU variables and device nodes inside the sandbox: sandbox_test (h)).

# nvml_state PIDS0 TEMP0 UTIL0 PIDS1: rewrites the fake NVML state atomically.
nvml_state() {
  printf '%s\n' \
    "name=FakeGPU uuid=GPU-0001 pci=0000:01:00.0 memory_mb=16384 temp=$2 util=$3 pids=$1" \
    "name=FakeGPU uuid=GPU-0002 pci=0000:02:00.0 memory_mb=16384 temp=40 util=0 pids=$4" \
    >"$T/nvml.tmp"
  mv "$T/nvml.tmp" "$T/nvml.state"
}
nvml_state "" 40 0 ""
start_coordinator
IDLEPOOL_NVML_LIBRARY=$FAKE IDLEPOOL_FAKE_NVML_STATE=$T/nvml.state start_worker gpubox --slots 4 --no-sandbox
wait_until 20 is_connected gpubox

gpu() {  # gpu INDEX FIELD: a field of the worker's device as workers --json shows it
  "$IDLEPOOL" workers --json |
    jq -r --argjson i "$1" ".workers[] | select(.worker==\"gpubox\") | .gpu_devices[] |
      select(.index==\$i) | .$2"
}
gpu_is() { [ "$(gpu "$1" "$2")" = "$3" ]; }   # gpu_is INDEX FIELD VALUE

mkdir -p "$T/release" "$T/run"
# Each task records its PID and ticks every 50 ms until released; named by its GPU ("cpu": none).
cat >"$T/task.sh" <<'SH'
name=${IDLEPOOL_GPUS:-cpu}
echo $$ >"$1/run/pid-$name"
while [ ! -e "$1/release/$name" ]; do echo . >>"$1/run/ticks-$name"; sleep 0.05; done
SH
for kind in gpu cpu; do
  cat >"$T/$kind.toml" <<TOML
name = "$kind"
command = ["sh", "$T/task.sh", "$T"]
count = $([ $kind = gpu ] && echo 2 || echo 1)
TOML
done
printf '[resources]\ngpus = 1\n' >>"$T/gpu.toml"
GPU=$("$IDLEPOOL" submit "$T/gpu.toml")
CPU=$("$IDLEPOOL" submit "$T/cpu.toml")
ticks() { wc -l <"$T/run/ticks-$1" 2>/dev/null || echo 0; }
ticking() { [ "$(ticks "$1")" -gt "$2" ]; }   # ticking NAME ABOVE
for n in 0 1 cpu; do wait_until 30 ticking "$n" 0; done
TASK0=$(cat "$T/run/pid-0")

# The pool's own task listed on its device (and a new utilisation, to see the worker read it).
nvml_state "$TASK0" 40 50 ""
wait_until 20 gpu_is 0 utilization 0.5
gpu_is 0 unavailable "" || fail "device 0 held for the pool's own task: $(gpu 0 unavailable)"
n=$(ticks 0); wait_until 10 ticking 0 "$n"
[ "$(job_field "$GPU" suspensions)" = 0 ] || fail "the pool's own process suspended its task"
pass "the pool's own task on device 0 (pid $TASK0) is not the owner: nothing suspended"

# The owner's process appears on device 0.
sleep 1000 &
OWNER=$!
PIDS+=($OWNER)
nvml_state "$TASK0,$OWNER" 40 50 ""
wait_until 20 gpu_is 0 unavailable gpu_owner
wait_until 10 job_at_least "$GPU" suspensions 1
n1=$(ticks 0)
sleep 0.5                        # 10 ticks' worth of time: a running task would move
n2=$(ticks 0)
[ "$n1" = "$n2" ] || fail "the task on device 0 progressed while the owner used it ($n1 -> $n2)"
for n in 1 cpu; do m=$(ticks "$n"); wait_until 10 ticking "$n" "$m"; done
gpu_is 1 unavailable "" || fail "device 1 held: $(gpu 1 unavailable)"
[ "$(job_field "$CPU" suspensions)" = 0 ] || fail "the CPU-only task was suspended"
[ "$(owner_state gpubox)" = run ] || fail "owner state $(owner_state gpubox), want run"
pass "owner process $OWNER on device 0: its task frozen at $n1 ticks; device 1 and CPU tasks run"

nvml_state "$TASK0" 40 0 ""
wait_until 20 gpu_is 0 unavailable ""
wait_until 10 ticking 0 "$n2"
pass "the owner's process is gone: the task on device 0 resumes"

# Device 0 too hot.
nvml_state "$TASK0" 95 0 ""
wait_until 20 gpu_is 0 unavailable gpu_temperature
wait_until 10 job_at_least "$GPU" suspensions 2
[ "$(gpu 0 temperature_c)" = 95 ] || fail "workers --json temperature $(gpu 0 temperature_c)"
n1=$(ticks 0); sleep 0.5; n2=$(ticks 0)
[ "$n1" = "$n2" ] || fail "the task on a hot device 0 progressed ($n1 -> $n2)"
nvml_state "$TASK0" 60 0 ""
wait_until 20 gpu_is 0 unavailable ""
wait_until 10 ticking 0 "$n2"
pass "device 0 at 95 C: its task frozen; at 60 C it resumes"

touch "$T/release/0" "$T/release/1" "$T/release/cpu"
"$IDLEPOOL" wait "$GPU" --quiet >/dev/null || fail "GPU job failed"
"$IDLEPOOL" wait "$CPU" --quiet >/dev/null || fail "CPU job failed"
[ "$(job_field "$GPU" suspensions)" = 2 ] || fail "suspensions $(job_field "$GPU" suspensions)"
[ "$(job_field "$GPU" preemptions)" = 0 ] || fail "a GPU suspension counted as a preemption"
[ "$(job_field "$GPU" attempts)" = 2 ] || fail "GPU tasks ran more than once"
# The worker events (store) record each hold and release of device 0.
gpu_events() {
  sql "SELECT state || ':' || cause FROM worker_events WHERE kind='gpu' ORDER BY id" | tr '\n' ' '
}
want="held:gpu_owner free: held:gpu_temperature free: "
has_gpu_events() { [ "$(gpu_events)" = "$want" ]; }
wait_until 10 has_gpu_events    # the store is written by the book thread, a little later
pass "both GPU tasks and the CPU task finished: 2 suspensions, 0 preemptions"

# While the owner uses device 0, no new GPU attempt gets it.
rm -rf "$T/release" "$T/run"; mkdir -p "$T/release" "$T/run"
nvml_state "$OWNER" 40 0 ""
wait_until 20 gpu_is 0 unavailable gpu_owner
GPU2=$("$IDLEPOOL" submit "$T/gpu.toml")
wait_until 30 ticking 1 0
wait_until 10 job_at_least "$GPU2" running 1
[ ! -e "$T/run/pid-0" ] || fail "a new attempt got device 0 while the owner uses it"
[ "$(job_field "$GPU2" pending)" = 1 ] || fail "pending $(job_field "$GPU2" pending), want 1"
kill "$OWNER"
nvml_state "" 40 0 ""
wait_until 30 ticking 0 0
touch "$T/release/0" "$T/release/1"
"$IDLEPOOL" wait "$GPU2" --quiet >/dev/null || fail "job $GPU2 failed"
pass "while the owner used device 0 the new job ran on device 1 only; device 0 after it left"
