#!/usr/bin/env bash
# A light idle worker: GPU discovery leaves no heavy runtime in it. OpenCL devices are listed by
# a short-lived child (`idlepool gpu-probe`), so the OpenCL ICD loader, PoCL, LLVM and clang are
# never mapped into the worker, while the device it found (PoCL's CPU device, --opencl-cpu) is
# still offered. NVML (small; live temperature, utilisation, processes) stays in the worker. With
# --gpus none nothing is loaded at all. Checked in /proc/PID/maps of the running workers.
source "$(dirname "$0")/lib.sh"
: "${FAKE_NVML:?set FAKE_NVML to libidlepool-fake-nvml.so}"
export IDLEPOOL_NVML_LIBRARY="$FAKE_NVML" IDLEPOOL_FAKE_NVML_STATE="$T/gpus.txt"
cat >"$T/gpus.txt" <<'STATE'
name="NVIDIA RTX A4000" uuid=GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee pci=0000:02:00.0 memory_mb=16376 temp=61 util=0
STATE
HEAVY='libOpenCL|libpocl|libLLVM|libclang'

# What this machine has: the fake NVML GPU, and PoCL's CPU device where PoCL is installed.
"$IDLEPOOL" worker --print-resources --opencl-cpu --json >"$T/res.json" 2>"$T/res.log" \
  || fail "--print-resources exited $?"
POCL=$(jq '[.gpus[] | select(.vendor=="pocl")] | length' "$T/res.json")
[ "$(jq -r '.gpus[0].name' "$T/res.json")" = "NVIDIA RTX A4000" ] || fail "NVML device: $(cat "$T/res.json")"
[ "$POCL" = 0 ] && echo "note: no PoCL device here; only the NVML half and --gpus none are checked"

start_coordinator
start_worker w1 --opencl-cpu
start_worker w0 --opencl-cpu --gpus none
wait_until 30 is_connected w1
wait_until 30 is_connected w0
gpus_of() { "$IDLEPOOL" workers --json | jq -r --arg w "$1" '.workers[] | select(.worker==$w) | .gpus'; }

# w1 offers every device found, the probed OpenCL one included, with the same numbering.
[ "$(gpus_of w1)" = $((1 + POCL)) ] || fail "w1 capacity gpus $(gpus_of w1), want $((1 + POCL))"
grep -q "offering gpu 0: nvidia NVIDIA RTX A4000" "$T/w1.log" || fail "w1: NVML gpu 0 not offered"
if [ "$POCL" -ge 1 ]; then
  grep -q "offering gpu 1: pocl .*apis opencl" "$T/w1.log" || fail "w1: the PoCL device not offered"
fi
maps=$(cat "/proc/$WPID_w1/maps")
if grep -Eq "$HEAVY" <<<"$maps"; then
  fail "w1 has the OpenCL runtime mapped: $(grep -Eo "[^ /]*($HEAVY)[^ ]*" <<<"$maps" | sort -u | tr '\n' ' ')"
fi
grep -q "$(basename "$FAKE_NVML")" <<<"$maps" || fail "w1: NVML not loaded (live readings need it)"
# The probe child is gone, reaped.
kids=$(ps -o stat=,args= --ppid "$WPID_w1" | grep -E '^Z|gpu-probe' || true)
[ -z "$kids" ] || fail "w1: the probe child is still there: $kids"
pass "OpenCL device offered, its runtime not in the worker"

# --gpus none: no GPU library at all, and every backend says it was not loaded.
[ "$(gpus_of w0)" = 0 ] || fail "w0 (--gpus none) capacity gpus $(gpus_of w0), want 0"
if grep -Eq "$HEAVY|$(basename "$FAKE_NVML")|libnvidia-ml" "/proc/$WPID_w0/maps"; then
  fail "w0 (--gpus none) loaded a GPU library: $(grep -Eo "[^ /]*($HEAVY|nvml|nvidia-ml)[^ ]*" "/proc/$WPID_w0/maps" | sort -u | tr '\n' ' ')"
fi
grep -q "gpu discovery: NVML: not loaded (--gpus none)" "$T/w0.log" || fail "w0: NVML line"
grep -q "gpu discovery: OpenCL: not loaded (--gpus none)" "$T/w0.log" || fail "w0: OpenCL line"
pass "--gpus none loads no GPU library"

# --print-resources --gpus none still shows what is there (as not offered).
"$IDLEPOOL" worker --print-resources --gpus none --json >"$T/none.json" 2>/dev/null
[ "$(jq '.gpus | length' "$T/none.json")" = 0 ] || fail "--gpus none offers GPUs"
[ "$(jq -r '.not_offered[0].name' "$T/none.json")" = "NVIDIA RTX A4000" ] \
  || fail "--print-resources --gpus none: $(jq -c .not_offered "$T/none.json")"
pass "--print-resources --gpus none lists the devices left out"
