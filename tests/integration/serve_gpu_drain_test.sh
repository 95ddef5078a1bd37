#!/usr/bin/env bash
# A replica whose GPU the owner takes drains instead of freezing (issue 17, point 4): a stream
# flowing on it finishes whole (a frozen replica would stall it until the gateway's gap deadline
# ends it with an error event), the gateway routes no new request to it, then it is vacated
# (preempted, never a failure), and a replica runs again once the GPU is free. The GPU is the
# fake NVML library's (tests/fake_nvml): the owner's program is a process listed on the device.
FAKE=$(dirname "${IDLEPOOL:?set IDLEPOOL to the idlepool binary}")
FAKE=$FAKE/tests/fake_nvml/libidlepool-fake-nvml.so
[ -f "$FAKE" ] || { echo "SKIP: no fake NVML library at $FAKE"; exit 77; }
source "$(dirname "$0")/lib.sh"
ENGINE=$(dirname "$IDLEPOOL")/idlepool-fake-engine
[ -x "$ENGINE" ] || { echo "SKIP: no $ENGINE"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
nvml_state() {
  printf '%s\n' "name=FakeGPU uuid=GPU-0001 pci=0000:01:00.0 memory_mb=16384 temp=40 util=0 pids=$1" \
    >"$T/nvml.tmp"
  mv "$T/nvml.tmp" "$T/nvml.state"
}
nvml_state ""
owner_config "$T/owner.toml"  # vacate_grace_seconds = 5: the drain's cap
mkdir -p "$T/no-sensors"
start_coordinator --serve-listen 127.0.0.1:0
GW=$(gateway_url)
[ -n "$GW" ] || fail "the coordinator did not start its gateway"
IDLEPOOL_NVML_LIBRARY=$FAKE IDLEPOOL_FAKE_NVML_STATE=$T/nvml.state \
  start_worker gpubox --slots 2 --config "$T/owner.toml" --sensors-dir "$T/no-sensors" --dedicated
wait_until 20 is_connected gpubox
CA=$T/coord/ca.pem

services() { "$IDLEPOOL" services --json; }
state_is() {
  [ "$(services | jq -r '.services[] | select(.name=="gpuchat") | .replica_status[0].state')" = "$1" ]
}
stream() {
  curl -sS -N --cacert "$CA" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    "$GW/v1/chat/completions" \
    -d '{"model":"tiny","stream":true,"messages":[{"role":"user","content":"hi"}]}' >"$T/stream" 2>&1
}
flowing() { grep -q '^data: {' "$T/stream" 2>/dev/null; }

cat >"$T/chat.toml" <<TOML
name = "gpuchat"
command = ["$ENGINE", "--port", "{port}", "--model", "tiny", "--tokens", "20", "--token-ms", "100"]
[resources]
gpus = 1
[service]
protocol = "openai"
model = "tiny"
replicas = 1
drain_seconds = 60
TOML
JOB=$("$IDLEPOOL" submit "$T/chat.toml")
wait_until 60 state_is ready

stream &
STREAM=$!
wait_until 20 flowing
sleep 1000 &
OWNER=$!
PIDS+=($OWNER)
nvml_state "$OWNER"  # the owner starts a program on the GPU
wait_until 10 state_is draining
wait "$STREAM" || fail "the stream's curl failed"
grep -q '"error"' "$T/stream" && fail "the stream ended with an error: $(tail -3 "$T/stream")"
grep -q '^data: \[DONE\]' "$T/stream" || fail "the stream was cut: $(tail -3 "$T/stream")"
[ "$(grep -c '^data: {' "$T/stream")" -ge 20 ] || fail "the stream is short"
grep -q "suspended (" "$T/gpubox.log" && fail "the replica was frozen"
pass "the owner took the GPU: its replica drained (not frozen) and the flowing stream finished whole"

wait_until 30 job_at_least "$JOB" preemptions 1
[ "$(job_field "$JOB" failures)" = 0 ] || fail "the drain counted as a failure"
pass "then it was vacated: a preemption, not a failure"

kill "$OWNER"
nvml_state ""  # the owner is done with the GPU: a replica runs there again
wait_until 60 state_is ready
pass "the GPU free again, the service has a ready replica"
"$IDLEPOOL" cancel "$JOB" >/dev/null
