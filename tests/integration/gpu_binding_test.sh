#!/usr/bin/env bash
# GPUs end to end on a worker with two fake NVIDIA GPUs (the fake NVML library, tests/fake_nvml):
# two `gpus = 1` tasks run at once, each on its own device (IDLEPOOL_GPUS and
# CUDA_VISIBLE_DEVICES differ, and name the devices the worker lists); a third waits until one
# of them ends and then gets the freed device; a `gpus = 0` task sees no GPU
# (CUDA_VISIBLE_DEVICES empty, even though the worker's own environment sets it); a job needing 3
# GPUs, or an API no device has, fits no worker.
FAKE=$(dirname "${IDLEPOOL:?set IDLEPOOL to the idlepool binary}")
FAKE=$FAKE/tests/fake_nvml/libidlepool-fake-nvml.so
[ -f "$FAKE" ] || { echo "SKIP: no fake NVML library at $FAKE"; exit 77; }
source "$(dirname "$0")/lib.sh"
# The worker runs --no-sandbox: these tasks talk to the test through files in $T, which a
# sandbox hides (GPU variables and device nodes inside the sandbox: sandbox_test (h)).

cat >"$T/nvml.state" <<'STATE'
name=Fake A100 uuid=GPU-0001 memory_mb=40960 temp=40 util=0 pids=
name=Fake A100 uuid=GPU-0002 memory_mb=40960 temp=40 util=0 pids=
STATE
start_coordinator
# The worker's own CUDA_VISIBLE_DEVICES must never reach a task.
CUDA_VISIBLE_DEVICES=leaked IDLEPOOL_NVML_LIBRARY=$FAKE IDLEPOOL_FAKE_NVML_STATE=$T/nvml.state \
  start_worker gpubox --slots 4 --no-sandbox
wait_until 20 is_connected gpubox

gpu_devices() {
  "$IDLEPOOL" workers --json | jq -c '.workers[] | select(.worker=="gpubox") | .gpu_devices'
}
busy_gpus() { gpu_devices | jq '[.[] | select(.busy)] | length'; }
[ "$(gpu_devices | jq length)" = 2 ] || fail "worker lists $(gpu_devices) as its GPUs, want 2"
[ "$(gpu_devices | jq -r '[.[].memory_mb] | join(",")')" = "40960,40960" ] ||
  fail "GPU memory: $(gpu_devices)"
"$IDLEPOOL" workers | grep -q "gpubox .* 2: 40G,40G " ||
  fail "no GPUS column: $("$IDLEPOOL" workers)"
pass "the worker offers 2 GPUs (workers --json gpu_devices, GPUS column)"

mkdir -p "$T/env" "$T/release"
# Each task writes its GPU variables (only those set) and waits for its release file.
cat >"$T/task.sh" <<'SH'
out=$1/env/gpu-$IDLEPOOL_TASK_INDEX
vars='IDLEPOOL_GPUS|CUDA_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES|IDLEPOOL_OPENCL_DEVICES'
env | grep -E "^($vars)=" | sort >"$out.tmp"
mv "$out.tmp" "$out.env"
while [ ! -e "$1/release/$IDLEPOOL_TASK_INDEX" ]; do sleep 0.05; done
SH
cat >"$T/gpu.toml" <<TOML
name = "gpu"
command = ["sh", "$T/task.sh", "$T"]
count = 3
[resources]
gpus = 1
gpu_memory_mb = 40000
gpu_api = "cuda"
TOML
JOB=$("$IDLEPOOL" submit "$T/gpu.toml")
envs() { ls "$T/env"/gpu-*.env 2>/dev/null | wc -l; }
has_envs() { [ "$(envs)" -ge "$1" ]; }
wait_until 30 has_envs 2
wait_until 10 job_at_least "$JOB" running 2
var() { sed -n "s/^$2=//p" "$T/env/gpu-$1.env"; }   # var TASK NAME
has_var() { grep -q "^$2=" "$T/env/gpu-$1.env"; }
started=()
for i in 0 1 2; do [ -f "$T/env/gpu-$i.env" ] && started+=("$i"); done
[ "${#started[@]}" = 2 ] || fail "${#started[@]} GPU tasks started at once on 2 GPUs"
a=${started[0]} b=${started[1]}
ga=$(var "$a" IDLEPOOL_GPUS) gb=$(var "$b" IDLEPOOL_GPUS)
[ "$(printf '%s\n%s\n' "$ga" "$gb" | sort | tr '\n' ' ')" = "0 1 " ] ||
  fail "concurrent tasks got IDLEPOOL_GPUS '$ga' and '$gb', want 0 and 1"
ca=$(var "$a" CUDA_VISIBLE_DEVICES) cb=$(var "$b" CUDA_VISIBLE_DEVICES)
[ -n "$ca" ] && [ -n "$cb" ] && [ "$ca" != "$cb" ] || fail "CUDA_VISIBLE_DEVICES '$ca' and '$cb'"
for t in "$a" "$b"; do
  g=$(var "$t" IDLEPOOL_GPUS)
  want=$(gpu_devices | jq -r --argjson i "$g" \
    '.[] | select(.index==$i) | if .cuda_id != "" then .cuda_id else .uuid end')
  got=$(var "$t" CUDA_VISIBLE_DEVICES)
  [ "$got" = "$want" ] || fail "task $t on GPU $g: CUDA_VISIBLE_DEVICES '$got', want '$want'"
  has_var "$t" ROCR_VISIBLE_DEVICES && [ -z "$(var "$t" ROCR_VISIBLE_DEVICES)" ] ||
    fail "task $t: ROCR_VISIBLE_DEVICES not set empty"
done
[ "$(busy_gpus)" = 2 ] || fail "workers --json: busy GPUs $(gpu_devices)"
# The third task waits, though the worker has free slots.
[ "$(job_field "$JOB" pending)" = 1 ] || fail "pending $(job_field "$JOB" pending), want 1"
pass "two gpus = 1 tasks run at once on GPUs $ga and $gb (CUDA_VISIBLE_DEVICES $ca, $cb);" \
  "the third waits"

# A task without GPUs sees none, whatever the worker's environment says.
echo "env | grep -E '^(IDLEPOOL_GPUS|CUDA_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES)=' | sort >out.txt" \
  >"$T/cpu.sh"
cat >"$T/cpu.toml" <<TOML
name = "cpu"
command = ["sh", "$T/cpu.sh"]
count = 1
outputs = ["out.txt"]
TOML
CPU=$("$IDLEPOOL" submit "$T/cpu.toml")
"$IDLEPOOL" wait "$CPU" --quiet >/dev/null || fail "the gpus = 0 job failed"
"$IDLEPOOL" fetch "$CPU" --out "$T/cpu-out" >/dev/null
got=$(tr '\n' ' ' <"$(find "$T/cpu-out" -name out.txt)")
[ "$got" = "CUDA_VISIBLE_DEVICES= IDLEPOOL_GPUS= ROCR_VISIBLE_DEVICES= " ] ||
  fail "a gpus = 0 task saw: $got"
pass "a gpus = 0 task sees CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES and IDLEPOOL_GPUS empty"

# Jobs no worker can fit: 3 GPUs; an API no device offers.
cat >"$T/three.toml" <<TOML
name = "three"
command = ["true"]
count = 1
[resources]
gpus = 3
TOML
sed 's/gpus = 3/gpus = 1\ngpu_api = "rocm"/' "$T/three.toml" >"$T/rocm.toml"
THREE=$("$IDLEPOOL" submit "$T/three.toml")
ROCM=$("$IDLEPOOL" submit "$T/rocm.toml")
fits_none() { [ "$(job_field "$1" fits_no_worker)" = true ]; }
wait_until 10 fits_none "$THREE"
wait_until 10 fits_none "$ROCM"
"$IDLEPOOL" status "$THREE" | grep -q "waiting: no connected worker" ||
  fail "status does not say job $THREE waits"
[ "$(job_field "$JOB" fits_no_worker)" = false ] || fail "the gpus = 1 job says it fits no worker"
pass "a job needing 3 GPUs, and one needing ROCm, fit no worker"

# Task $a ends: its GPU goes to the waiting task.
touch "$T/release/$a"
wait_until 30 has_envs 3
c=$(for i in 0 1 2; do [ "$i" != "$a" ] && [ "$i" != "$b" ] && echo "$i"; done)
[ "$(var "$c" IDLEPOOL_GPUS)" = "$ga" ] ||
  fail "the third task got GPU '$(var "$c" IDLEPOOL_GPUS)', want the freed $ga"
[ "$(var "$c" CUDA_VISIBLE_DEVICES)" = "$ca" ] ||
  fail "the third task: CUDA_VISIBLE_DEVICES '$(var "$c" CUDA_VISIBLE_DEVICES)', want $ca"
touch "$T/release/$b" "$T/release/$c"
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "job $JOB failed"
[ "$(job_field "$JOB" attempts)" = 3 ] || fail "job $JOB took $(job_field "$JOB" attempts) attempts"
[ "$(busy_gpus)" = 0 ] || fail "GPUs still busy: $(gpu_devices)"
pass "the waiting task got the freed GPU $ga; every GPU is free when nothing runs"
"$IDLEPOOL" cancel "$THREE" >/dev/null
"$IDLEPOOL" cancel "$ROCM" >/dev/null
