#!/usr/bin/env bash
# Attacks on serving's drains through the real pool (issue 17, point 4), each a bug found once.
# The coordinator SIGKILLed while a scaled-down replica drains (drain_seconds 3600): the
# restarted coordinator knows nothing of that replica (its attempt ended, cancelled, before the
# crash), so it tells the worker the attempt is obsolete; the worker must stop it then. It used
# to ignore every kill but the coordinator's second CANCELLED one, which the restarted
# coordinator never sends: the replica ran on, unseen, for its whole hour of drain.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
need_engine
start_serving 2

# engines: how many fake engines (replica processes) run under this test's workers.
engines() {
  local e p n=0
  for e in $(grep -lz "^IDLEPOOL_WORK_DIR=$(readlink -f "$T")/" /proc/[0-9]*/environ 2>/dev/null); do
    p=${e#/proc/}; p=${p%/environ}
    { tr '\0' '\n' <"/proc/$p/cmdline"; } 2>/dev/null | head -1 | grep -q 'idlepool-fake-engine$' && n=$((n + 1))
  done
  echo "$n"
}
engines_are() { [ "$(engines)" = "$1" ]; }

cat >"$T/chat.toml" <<TOML
name = "chat"
command = ["$ENGINE", "--port", "{port}", "--model", "tiny", "--tokens", "100", "--token-ms", "100"]
[service]
protocol = "openai"
model = "tiny"
replicas = 2
max_concurrent = 2
drain_seconds = 3600
TOML
JOB=$("$IDLEPOOL" submit "$T/chat.toml")
wait_until 60 ready_is 2
engines_are 2 || fail "2 replicas ready but $(engines) engines run"

# Streams on both replicas keep the retired one draining (never idle) until the crash.
PIDS_S=()
for i in 1 2 3 4; do stream "$i" & PIDS_S+=($!); done
wait_until 20 streams_flowing 1 2 3 4
"$IDLEPOOL" scale chat 1 >/dev/null
wait_until 10 has_draining
RETIRED=$(draining_attempt)
wait_until 10 grep -q "attempt $RETIRED: retired by the coordinator" "$T/w1.log" "$T/w2.log"
kill -9 "$COORD_PID"
for p in "${PIDS_S[@]}"; do wait "$p" || true; done  # the gateway died with its coordinator
start_coordinator --serve-listen 127.0.0.1:0
GW=$(gateway_url)
wait_until 20 is_connected w1
wait_until 20 is_connected w2
wait_until 30 engines_are 1
grep -q "attempt $RETIRED: killed by the coordinator" "$T/w1.log" "$T/w2.log" ||
  fail "the retired replica $RETIRED ended, but not by the restarted coordinator's kill"
wait_until 30 ready_is 1
[ "$(services | jq -r '.services[] | select(.name=="chat") | .replica_status[] | select(.attempt=='"$RETIRED"') | .state')" = "" ] ||
  fail "the restarted coordinator shows the retired replica $RETIRED"
wait_until 30 chat_200
pass "coordinator SIGKILLed mid-drain: after its restart the retired replica was stopped (1 engine, 1 ready), requests answer"
"$IDLEPOOL" cancel "$JOB" >/dev/null
wait_until 30 engines_are 0
pass "cancelled: no replica process left"
