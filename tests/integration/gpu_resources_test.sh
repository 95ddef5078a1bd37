#!/usr/bin/env bash
# GPU discovery end to end: `idlepool worker --print-resources [--json]` with nothing (no NVML,
# no OpenCL GPU), with the fake NVML (tests/fake_nvml: names, memory, uuid, readings, --gpus),
# with NVML's init failing, with PoCL's CPU device (--opencl-cpu; where an ICD is installed);
# and a worker on the fake NVML joining a pool with its GPUs counted in its capacity.
source "$(dirname "$0")/lib.sh"
: "${FAKE_NVML:?set FAKE_NVML to libidlepool-fake-nvml.so}"
R() { "$IDLEPOOL" worker --print-resources "$@" 2>"$T/stderr.log"; }

# 1. Nothing: no NVML library, and OpenCL GPU-type devices only (PoCL's is a CPU).
export IDLEPOOL_NVML_LIBRARY="$T/no-such-libnvidia-ml.so.1"
unset IDLEPOOL_OPENCL_CPU IDLEPOOL_FAKE_NVML_STATE
R >"$T/none.txt" || fail "--print-resources with nothing exited $?"
grep -q "^gpus      0 offered$" "$T/none.txt" || fail "nothing: $(cat "$T/none.txt")"
grep -q "^  NVML      not found" "$T/none.txt" || fail "nothing: NVML line"
grep -q "^  ROCm SMI  unsupported in this build$" "$T/none.txt" || fail "ROCm SMI line"
grep -q "^  Metal     unsupported in this build$" "$T/none.txt" || fail "Metal line"
grep -q "^  OpenCL    " "$T/none.txt" || fail "OpenCL line"
grep -q "^cores     [1-9]" "$T/none.txt" || fail "cores line"
R --json --slots 3 --memory-mb 2048 >"$T/none.json" || fail "--json exited $?"
[ "$(jq '.gpus | length' "$T/none.json")" = 0 ] || fail "nothing: gpus in JSON"
[ "$(jq -r '.slots' "$T/none.json")" = 3 ] || fail "slots in JSON"
[ "$(jq -r '.memory_offered_mb' "$T/none.json")" = 2048 ] || fail "memory_offered_mb"
[ "$(jq -r '[.backends[].backend] | join(",")' "$T/none.json")" = "NVML,OpenCL,ROCm SMI,Metal" ] \
  || fail "backends: $(jq -c .backends "$T/none.json")"
[ "$(jq -r '.backends[2].supported' "$T/none.json")" = false ] || fail "ROCm SMI supported?"
pass "nothing found: no GPUs, every backend says why"

# 2. The fake NVML: two GPUs.
export IDLEPOOL_NVML_LIBRARY="$FAKE_NVML" IDLEPOOL_FAKE_NVML_STATE="$T/gpus.txt"
cat >"$T/gpus.txt" <<'STATE'
name="NVIDIA GeForce RTX 3080" uuid=GPU-11111111-2222-3333-4444-555555555555 pci=0000:01:00.0 memory_mb=10240 memory_used_mb=300 temp=45 util=12 pids=4242
name="NVIDIA RTX A4000" uuid=GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee pci=0000:02:00.0 memory_mb=16376 temp=61 util=0
STATE
R >"$T/fake.txt" || fail "fake NVML exited $?"
grep -q "^gpus      2 offered$" "$T/fake.txt" || fail "fake: $(cat "$T/fake.txt")"
grep -q "^  gpu 0: nvidia  NVIDIA GeForce RTX 3080, 10240 MiB, apis cuda, uuid GPU-11111111-2222-3333-4444-555555555555, cuda 0, temperature 45 C, utilization 12%$" "$T/fake.txt" \
  || fail "gpu 0 line: $(grep 'gpu 0' "$T/fake.txt")"
grep -q "^  gpu 1: nvidia  NVIDIA RTX A4000, 16376 MiB" "$T/fake.txt" || fail "gpu 1 line"
grep -q "^  NVML      loaded 2 devices" "$T/fake.txt" || fail "NVML line: $(grep NVML "$T/fake.txt")"
R --json >"$T/fake.json"
g0() { jq -r ".gpus[0].$1" "$T/fake.json"; }
[ "$(g0 name)" = "NVIDIA GeForce RTX 3080" ] || fail "name"
[ "$(g0 vendor)" = nvidia ] || fail "vendor"
[ "$(g0 memory_mb)" = 10240 ] || fail "memory_mb"
[ "$(g0 memory_used_mb)" = 300 ] || fail "memory_used_mb"
[ "$(g0 uuid)" = GPU-11111111-2222-3333-4444-555555555555 ] || fail "uuid"
[ "$(g0 temperature_c)" = 45 ] || fail "temperature_c $(g0 temperature_c)"
[ "$(g0 utilization)" = 0.12 ] || fail "utilization $(g0 utilization)"
[ "$(g0 'apis | join(",")')" = cuda ] || fail "apis"
[ "$(g0 'pids | join(",")')" = 4242 ] || fail "pids"
[ "$(g0 pci_bus_id)" = 0000:01:00.0 ] || fail "pci_bus_id"
[ "$(jq -r '.gpus[1].index' "$T/fake.json")" = 1 ] || fail "index 1"
pass "fake NVML: two GPUs with memory, uuid, temperature, utilization, processes"

# The state is read live: a hotter GPU shows at the next look.
sed -i 's/temp=45/temp=93/' "$T/gpus.txt"
[ "$(R --json | jq -r '.gpus[0].temperature_c')" = 93 ] || fail "temperature not re-read"

# --gpus: only device 1, numbered 0 in what is offered; its CUDA id stays 1.
R --json --gpus 1 >"$T/one.json"
[ "$(jq '.gpus | length' "$T/one.json")" = 1 ] || fail "--gpus 1: $(jq -c .gpus "$T/one.json")"
[ "$(jq -r '.gpus[0].index' "$T/one.json")" = 0 ] || fail "--gpus 1: index"
[ "$(jq -r '.gpus[0].cuda_id' "$T/one.json")" = 1 ] || fail "--gpus 1: cuda_id"
[ "$(jq -r '.not_offered[0].name' "$T/one.json")" = "NVIDIA GeForce RTX 3080" ] || fail "not_offered"
[ "$(R --json --gpus none | jq '.gpus | length')" = 0 ] || fail "--gpus none"
[ "$(R --json --gpus 0,7 | jq -c '.missing')" = "[7]" ] || fail "--gpus 0,7: missing"
rc=0; R --gpus 'zero' >/dev/null || rc=$?
[ "$rc" = 2 ] || fail "--gpus zero: exit $rc, want 2"
grep -q "is not all, none or a list of GPU indexes" "$T/stderr.log" || fail "--gpus message"
pass "--gpus all|none|list"

# 3. nvmlInit fails (no driver): no NVIDIA GPUs, not an error.
IDLEPOOL_FAKE_NVML_STATE="$T/missing.txt" R >"$T/nodriver.txt" || fail "no driver exited $?"
grep -q "^gpus      0 offered$" "$T/nodriver.txt" || fail "no driver: gpus"
grep -q "^  NVML      no driver (nvmlInit_v2: Driver Not Loaded" "$T/nodriver.txt" \
  || fail "no driver: $(grep NVML "$T/nodriver.txt")"
pass "nvmlInit failure: no NVIDIA GPUs, exit 0"

# 4. PoCL's CPU device as an OpenCL GPU, only when asked.
if grep -q "^  OpenCL    [1-9][0-9]* platform" "$T/none.txt" && \
   R --json --opencl-cpu --gpus all >"$T/cl.json" && \
   [ "$(jq '[.gpus[] | select(.vendor=="pocl")] | length' "$T/cl.json")" -ge 1 ]; then
  [ "$(jq -r '[.gpus[] | select(.vendor=="pocl")][0].opencl_id' "$T/cl.json")" != "" ] || fail "opencl_id"
  [ "$(jq -r '[.gpus[] | select(.vendor=="pocl")][0].index' "$T/cl.json")" = 2 ] \
    || fail "OpenCL-only devices come after NVML's"
  [ "$(IDLEPOOL_OPENCL_CPU=1 R --json | jq '[.gpus[] | select(.vendor=="pocl")] | length')" -ge 1 ] \
    || fail "IDLEPOOL_OPENCL_CPU=1"
  [ "$(R --json | jq '[.gpus[] | select(.vendor=="pocl")] | length')" = 0 ] \
    || fail "PoCL CPU device offered without --opencl-cpu"
  pass "PoCL CPU device only with --opencl-cpu, after the NVML devices"
else
  echo "skip: no PoCL device here"
fi

# 5. A worker on the fake NVML joins with its GPUs in its capacity.
start_coordinator
start_worker w1
start_worker w0 --gpus none
wait_until 20 is_connected w1
wait_until 20 is_connected w0
gpus_of() { "$IDLEPOOL" workers --json | jq -r --arg w "$1" '.workers[] | select(.worker==$w) | .gpus'; }
[ "$(gpus_of w1)" = 2 ] || fail "w1 capacity gpus $(gpus_of w1), want 2"
[ "$(gpus_of w0)" = 0 ] || fail "w0 (--gpus none) capacity gpus $(gpus_of w0), want 0"
grep -q "offering gpu 0: nvidia NVIDIA GeForce RTX 3080" "$T/w1.log" || fail "w1 log"
pass "worker joins with its GPUs counted"
