#!/usr/bin/env bash
#
# The OpenCL example job (examples/opencl/job.toml) through a real pool: one worker offering
# PoCL's CPU device (--opencl-cpu), the job's 8 tasks (gpus = 1, gpu_api = "opencl") each
# verified by the program on the device the worker named in IDLEPOOL_OPENCL_DEVICES. Skips (77)
# without an OpenCL device.
source "$(dirname "$0")/lib.sh"
: "${OPENCL_EXAMPLE:?set OPENCL_EXAMPLE to build/idlepool-opencl-example}"
export IDLEPOOL_NVML_LIBRARY="$T/no-nvml.so"   # this machine's GPUs: PoCL's only
"$IDLEPOOL" worker --print-resources --opencl-cpu --json >"$T/res.json" 2>/dev/null
CL_ID=$(jq -r '[.gpus[] | select(.apis | index("opencl"))][0].opencl_id // empty' "$T/res.json")
[ -n "$CL_ID" ] || { echo "SKIP: no OpenCL device"; exit 77; }

# The example's job, with the program's path made absolute and each task also recording the
# devices it was given.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$T/job"
sed -e "s|\"../../build/idlepool-opencl-example\"|\"$OPENCL_EXAMPLE\"|" \
    -e 's|^command = \[|command = ["sh", "-c", "echo \\"$IDLEPOOL_GPUS $IDLEPOOL_OPENCL_DEVICES\\" > {task_dir}/devices-{index}.txt \&\& exec \\"$@\\"", "sh",|' \
    -e 's|^outputs = \["collatz-\*.txt"\]|outputs = ["collatz-*.txt", "devices-*.txt"]|' \
    "$REPO/examples/opencl/job.toml" >"$T/job/job.toml"
start_coordinator
start_worker w1 --opencl-cpu --slots 2
wait_until 20 is_connected w1
JOB=$("$IDLEPOOL" submit "$T/job/job.toml")
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "job $JOB did not succeed: $("$IDLEPOOL" status "$JOB")"
"$IDLEPOOL" fetch "$JOB" --out "$T/out" >/dev/null
for i in 0 1 2 3 4 5 6 7; do
  f=$(find "$T/out" -name "collatz-$i.txt")
  [ -n "$f" ] || fail "no output of task $i"
  grep -qx "verified on the CPU" "$f" || fail "task $i not verified"
  grep -qx "range $((1 + i * 1000000))..$(((i + 1) * 1000000))" "$f" || fail "task $i range"
  grep -q "^device .* ($CL_ID)\$" "$f" || fail "task $i ran on $(head -1 "$f"), want $CL_ID"
  d=$(find "$T/out" -name "devices-$i.txt")
  [ "$(cat "$d")" = "0 $CL_ID" ] || fail "task $i was given '$(cat "$d")', want '0 $CL_ID'"
done
grep -q "longest 524 steps at 837799" "$(find "$T/out" -name collatz-0.txt)" || fail "task 0 result"
# One device, two slots: the attempts never overlapped on it.
overlap=$(sql "SELECT COUNT(*) FROM attempts a JOIN attempts b ON a.job_id=b.job_id AND a.id<b.id
               WHERE a.job_id=$JOB AND a.started_ms < b.ended_ms AND b.started_ms < a.ended_ms")
[ "$overlap" = 0 ] || fail "$overlap pairs of attempts overlapped on the one device"
pass "OpenCL example job: 8 tasks verified on $CL_ID"
