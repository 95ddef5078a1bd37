#!/usr/bin/env bash
# GPU check for a machine with an NVIDIA GPU (issue 8 point 5): the evidence that discovery,
# device binding and one-attempt-per-device hold on real hardware. Runs without root, in under
# 3 minutes, and builds nothing beyond `cmake --build build --target idlepool` (when the binary
# is missing). It:
#   1. shows `idlepool worker --print-resources` and fails unless it lists an NVIDIA GPU (API
#      "cuda") with its memory and temperature;
#   2. starts a local coordinator and a worker (127.0.0.1, a temporary directory) offering one
#      GPU (`--gpus 0`), runs a `gpus = 1` job whose task prints CUDA_VISIBLE_DEVICES,
#      IDLEPOOL_GPUS and `nvidia-smi -L` (when present), and checks CUDA_VISIBLE_DEVICES names
#      that device (its CUDA id, and its UUID among nvidia-smi's GPUs);
#   3. runs two `gpus = 1` jobs at once on that one GPU and checks from the tasks' start/end
#      times (and from the store's attempt rows, when sqlite3 is installed) that they never
#      overlapped.
# Prints PASS or FAIL per check and a summary; exits 0 only when every check passed.
#
# Environment: IDLEPOOL (the binary; default build/idlepool), GPU_CHECK_FAKE=1 (run against the
# fake NVML library, tests/fake_nvml, with two fake GPUs: how CI tests this script; FAKE_NVML
# names the library, default build/tests/fake_nvml/libidlepool-fake-nvml.so).
set -uo pipefail
cd "$(dirname "$0")/.."
IDLEPOOL=${IDLEPOOL:-build/idlepool}
if [ ! -x "$IDLEPOOL" ]; then
  echo "building $IDLEPOOL ..."
  if ! cmake --build build --target idlepool >/dev/null; then
    echo "FAIL: cannot build idlepool"
    exit 1
  fi
fi
IDLEPOOL=$(realpath "$IDLEPOOL")
T=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
PIDS=()
PASSED=0
FAILED=0
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$FAILED" -eq 0 ]; then rm -rf "$T"; else echo "logs kept in $T"; fi
}
trap cleanup EXIT
pass() { echo "PASS: $*"; PASSED=$((PASSED + 1)); }
check_fail() { echo "FAIL: $*"; FAILED=$((FAILED + 1)); }
summary() {
  echo
  if [ "$FAILED" -eq 0 ]; then
    echo "GPU CHECK PASSED ($PASSED checks)"
    exit 0
  fi
  echo "GPU CHECK FAILED ($FAILED of $((PASSED + FAILED)) checks failed)"
  exit 1
}
abort() { check_fail "$*"; summary; }
# wait_until SECONDS COMMAND...: polls until COMMAND succeeds; false after the deadline.
wait_until() {
  local end=$(($(date +%s) + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || return 1
    sleep 0.1
  done
}
command -v jq >/dev/null || abort "jq is needed"

NVSMI=0
if [ "${GPU_CHECK_FAKE:-0}" = 1 ]; then
  FAKE_NVML=$(realpath "${FAKE_NVML:-build/tests/fake_nvml/libidlepool-fake-nvml.so}")
  [ -f "$FAKE_NVML" ] || abort "GPU_CHECK_FAKE=1: no fake NVML library at $FAKE_NVML"
  cat >"$T/nvml.state" <<'STATE'
name="Fake GPU A" uuid=GPU-fake-0001 pci=0000:01:00.0 memory_mb=16384 temp=41 util=0 pids=
name="Fake GPU B" uuid=GPU-fake-0002 pci=0000:02:00.0 memory_mb=16384 temp=42 util=0 pids=
STATE
  export IDLEPOOL_NVML_LIBRARY=$FAKE_NVML IDLEPOOL_FAKE_NVML_STATE=$T/nvml.state
  echo "(GPU_CHECK_FAKE=1: the fake NVML library, two fake GPUs)"
elif command -v nvidia-smi >/dev/null; then
  NVSMI=1
fi

# 1. Discovery.
echo "== idlepool worker --print-resources"
"$IDLEPOOL" worker --print-resources || abort "--print-resources failed"
"$IDLEPOOL" worker --print-resources --json >"$T/res.json" 2>/dev/null ||
  abort "--print-resources --json failed"
# The tasks below run in the worker's sandbox (its own /dev with only the GPU's nodes); where
# this machine cannot make one (a chroot), the worker runs them unsandboxed and says so here.
if [ "$(jq -r '.sandbox // "none"' "$T/res.json")" = none ]; then
  echo "note: this machine cannot sandbox tasks; the check's worker runs --no-sandbox"
  export IDLEPOOL_NO_SANDBOX=1
else
  echo "sandbox tier: $(jq -r .sandbox "$T/res.json")"
fi
GPU=$(jq -c '[.gpus[] | select(.apis | index("cuda"))][0] // empty' "$T/res.json")
[ -n "$GPU" ] || abort "no NVIDIA (CUDA) GPU found"
MEM=$(jq -r '.memory_mb' <<<"$GPU")
TEMP=$(jq -r '.temperature_c // empty' <<<"$GPU")
INDEX=$(jq -r '.index' <<<"$GPU")
UUID=$(jq -r '.uuid' <<<"$GPU")
[ "$MEM" -gt 0 ] 2>/dev/null || abort "GPU $INDEX: memory unknown"
[ -n "$TEMP" ] || abort "GPU $INDEX: temperature unknown"
pass "discovery: GPU $INDEX $(jq -r .name <<<"$GPU"), $MEM MiB, $TEMP C, $UUID"

# 2. A local pool: a worker offering that one GPU, dedicated (neither owner input nor load
# stop work), ignoring other processes on the GPU (a desktop's X server, say).
printf '[gpu]\nowner_use = "ignore"\n' >"$T/policy.toml"
mkdir -p "$T/sensors"
"$IDLEPOOL" coordinator --listen 127.0.0.1:0 --data-dir "$T/coord" >"$T/coordinator.log" 2>&1 &
PIDS+=($!)
wait_until 20 grep -q "listening on" "$T/coordinator.log" || abort "coordinator did not start"
PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$T/coordinator.log" | tail -1)
# Credentials as a pool's admin hands them out (through the coordinator's admin socket), kept in
# files in $T and never in argv or the environment: a join token for the worker, and an access
# token this script logs in with (saved under $T/config, not in the user's own login).
export IDLEPOOL_COORDINATOR=127.0.0.1:$PORT XDG_CONFIG_HOME=$T/config
unset IDLEPOOL_TOKEN IDLEPOOL_JOIN_TOKEN
( umask 077
  "$IDLEPOOL" token create --role worker --data-dir "$T/coord" >"$T/join.token" &&
    "$IDLEPOOL" token create --role submit --name gpu-check --data-dir "$T/coord" >"$T/submit.token"
) 2>"$T/tokens.log" || abort "token create failed (see $T/tokens.log)"
"$IDLEPOOL" login "$IDLEPOOL_COORDINATOR" --token-file "$T/submit.token" >/dev/null ||
  abort "idlepool login failed"
"$IDLEPOOL" worker --name gpucheck --join "$IDLEPOOL_COORDINATOR" --token-file "$T/join.token" \
  --work-dir "$T/worker" --slots 4 --gpus "$INDEX" \
  --dedicated --config "$T/policy.toml" --sensors-dir "$T/sensors" >"$T/worker.log" 2>&1 &
PIDS+=($!)
connected() {
  "$IDLEPOOL" workers --json |
    jq -e '.workers[] | select(.worker=="gpucheck" and .state=="connected")' >/dev/null
}
wait_until 30 connected || abort "worker did not connect (see $T/worker.log)"
OFFERED=$("$IDLEPOOL" workers --json |
  jq -c '.workers[] | select(.worker=="gpucheck") | .gpu_devices')
[ "$(jq length <<<"$OFFERED")" = 1 ] || abort "the worker offers $OFFERED, want one GPU"
WANT_CUDA=$(jq -r '.[0] | if .cuda_id != "" then .cuda_id else .uuid end' <<<"$OFFERED")

cat >"$T/env.sh" <<SH
{
  echo "CUDA_VISIBLE_DEVICES=\$CUDA_VISIBLE_DEVICES"
  echo "IDLEPOOL_GPUS=\$IDLEPOOL_GPUS"
  if [ $NVSMI = 1 ]; then nvidia-smi -L; fi
} >out.txt 2>&1
SH
cat >"$T/env.toml" <<TOML
name = "gpu-check-env"
command = ["sh", "env.sh"]
inputs = ["env.sh"]   # staged into the task dir: the sandbox hides the script's own $T
count = 1
outputs = ["out.txt"]
[resources]
gpus = 1
TOML
JOB=$("$IDLEPOOL" submit "$T/env.toml" 2>/dev/null) || abort "submit failed"
if timeout 60 "$IDLEPOOL" wait "$JOB" --quiet >/dev/null; then
  "$IDLEPOOL" fetch "$JOB" --out "$T/env-out" >/dev/null
  OUT=$(find "$T/env-out" -name out.txt | head -1)
  echo "== the task's view"
  cat "$OUT"
  GOT_CUDA=$(sed -n 's/^CUDA_VISIBLE_DEVICES=//p' "$OUT")
  GOT_GPUS=$(sed -n 's/^IDLEPOOL_GPUS=//p' "$OUT")
  if [ "$GOT_CUDA" != "$WANT_CUDA" ] || [ "$GOT_GPUS" != 0 ]; then
    check_fail "the task got CUDA_VISIBLE_DEVICES='$GOT_CUDA' IDLEPOOL_GPUS='$GOT_GPUS'," \
      "want '$WANT_CUDA' and '0'"
  elif [ $NVSMI = 1 ] && ! grep -q "UUID: $UUID)" "$OUT"; then
    check_fail "nvidia-smi -L in the task does not list the GPU's UUID $UUID"
  else
    pass "a gpus = 1 task ran with CUDA_VISIBLE_DEVICES=$GOT_CUDA (GPU $INDEX, $UUID)"
  fi
else
  check_fail "the gpus = 1 job did not succeed: $("$IDLEPOOL" status "$JOB" 2>&1 | head -5)"
fi

# 3. Two gpus = 1 jobs at once on the one GPU: their attempts must not overlap.
cat >"$T/span.sh" <<'SH'
date +%s.%N >span.txt
sleep 2
date +%s.%N >>span.txt
SH
for n in a b; do
  cat >"$T/span-$n.toml" <<TOML
name = "gpu-check-$n"
command = ["sh", "span.sh"]
inputs = ["span.sh"]
count = 1
outputs = ["span.txt"]
[resources]
gpus = 1
TOML
done
JA=$("$IDLEPOOL" submit "$T/span-a.toml" 2>/dev/null)
JB=$("$IDLEPOOL" submit "$T/span-b.toml" 2>/dev/null)
if timeout 60 "$IDLEPOOL" wait "$JA" --quiet >/dev/null &&
   timeout 60 "$IDLEPOOL" wait "$JB" --quiet >/dev/null; then
  for j in "$JA" "$JB"; do "$IDLEPOOL" fetch "$j" --out "$T/span-$j" >/dev/null; done
  A=$(tr '\n' ' ' <"$(find "$T/span-$JA" -name span.txt | head -1)")
  B=$(tr '\n' ' ' <"$(find "$T/span-$JB" -name span.txt | head -1)")
  echo "== task spans (start end, seconds): job $JA: $A; job $JB: $B"
  if awk -v a="$A" -v b="$B" 'BEGIN { split(a, x, " "); split(b, y, " ");
                                      exit !(x[2] <= y[1] || y[2] <= x[1]) }'; then
    pass "two gpus = 1 jobs on one GPU ran one after the other (task spans)"
  else
    check_fail "two gpus = 1 jobs overlapped on one GPU: $A / $B"
  fi
  if command -v sqlite3 >/dev/null; then
    ROWS=$(sqlite3 -readonly "$T/coord/pool.db" \
      "SELECT job_id, started_ms, ended_ms FROM attempts WHERE job_id IN ($JA, $JB)" 2>/dev/null)
    if [ -z "$ROWS" ]; then
      echo "(store: no attempt rows read; the task spans above decide)"
    elif awk -F'|' '{ s[NR] = $2; e[NR] = $3 }
                END { exit !(NR == 2 && (e[1] <= s[2] || e[2] <= s[1])) }' <<<"$ROWS"; then
      pass "the store's attempt rows agree: no overlap ($(tr '\n' ' ' <<<"$ROWS"))"
    else
      check_fail "the store's attempt rows overlap or are missing: $ROWS"
    fi
  fi
else
  check_fail "the two gpus = 1 jobs did not both succeed"
fi
summary
