#!/usr/bin/env bash
# Replicas that must go drain first (issue 17, point 1's drain_seconds and point 4): a service
# scaled down, then cancelled, through real workers. Streams flowing on the retired replica
# (and, at cancel, on every replica) finish whole, ending with [DONE] and no error event; the
# retired replica gets no new request while it drains; once the gateway has nothing in flight on
# it, the coordinator tells its worker to stop it before drain_seconds are over. A replica
# removed at once (as before) would cut those streams with an error event.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
need_engine
start_serving 2

replicas_are() { [ "$(replicas | jq '[.[] | select(.state!="stopped")] | length')" = "$1" ]; }
no_services() { [ "$(services | jq '.services | length')" = 0 ]; }
requests_of() {  # requests_of ATTEMPT: the gateway's count of requests to that replica
  services | jq -r --argjson a "$1" '[.services[] | .replica_status[] | select(.attempt==$a) | .requests] | first // empty'
}
check_streams() {  # check_streams WHAT N...: each ended with [DONE], no error event, 30 tokens
  local what=$1 i; shift
  for i in "$@"; do
    grep -q '"error"' "$T/stream.$i" && fail "$what: stream $i ended with an error: $(tail -3 "$T/stream.$i")"
    grep -q '^data: \[DONE\]' "$T/stream.$i" || fail "$what: stream $i was cut: $(tail -3 "$T/stream.$i")"
    [ "$(grep -c '^data: {' "$T/stream.$i")" -ge 30 ] || fail "$what: stream $i is short"
  done
}

cat >"$T/chat.toml" <<TOML
name = "chat"
command = ["$ENGINE", "--port", "{port}", "--model", "tiny", "--id", "r{replica}", "--tokens", "30", "--token-ms", "100"]
[service]
protocol = "openai"
model = "tiny"
replicas = 2
max_concurrent = 2
drain_seconds = 60
TOML
JOB=$("$IDLEPOOL" submit "$T/chat.toml")
wait_until 60 ready_is 2

# Scale down while 4 streams flow, 2 on each replica (least outstanding, 2 slots each).
PIDS_S=()
for i in 1 2 3 4; do stream "$i" & PIDS_S+=($!); done
wait_until 20 streams_flowing 1 2 3 4
"$IDLEPOOL" scale chat 1 >/dev/null
wait_until 10 has_draining
RETIRED=$(draining_attempt)
n=$(requests_of "$RETIRED")
for i in $(seq 1 10); do
  code=$(chat); [ "$code" = 200 ] || fail "request $i during the drain: HTTP $code: $(cat "$T/answer")"
done
after=$(requests_of "$RETIRED")
[ -z "$after" ] || [ "$after" = "$n" ] || fail "the retiring replica got new requests ($n -> $after)"
for p in "${PIDS_S[@]}"; do wait "$p" || fail "a stream's curl failed"; done
check_streams "scale down" 1 2 3 4
pass "scaled down under 4 flowing streams: all 4 whole, 10 new requests 200, none to the retiring replica"

# Its streams done, the replica is stopped well before its 60 s of drain: the coordinator saw
# nothing in flight and told its worker, which stopped it.
wait_until 30 replicas_are 1
wait_until 10 grep -q "attempt $RETIRED: drained; stopping it now" "$T/w1.log" "$T/w2.log"
pass "the drained replica left the gateway and was stopped by its worker before drain_seconds"

# Cancel while 2 streams flow on the last replica: both finish whole, then the service goes.
"$IDLEPOOL" scale chat 1 >/dev/null
PIDS_S=()
for i in 5 6; do stream "$i" & PIDS_S+=($!); done
wait_until 20 streams_flowing 5 6
"$IDLEPOOL" cancel "$JOB" >/dev/null
for p in "${PIDS_S[@]}"; do wait "$p" || fail "a stream's curl failed"; done
check_streams "cancel" 5 6
wait_until 30 no_services
chat_404() { [ "$(chat)" = 404 ]; }  # once its last replica is drained, the service is gone
wait_until 30 chat_404
pass "cancelled under 2 flowing streams: both whole; then the service is gone (404)"

# Submitted again under the same name while the cancelled one still drains a stream: the new
# service takes the name at once (the old drain is cut short: its stream ends with an error
# event), and answers.
"$IDLEPOOL" submit "$T/chat.toml" >/dev/null
wait_until 60 ready_is 2
stream 7 &
S7=$!
wait_until 20 streams_flowing 7
JOB=$("$IDLEPOOL" services --json | jq -r '.services[] | select(.name=="chat") | .job')
"$IDLEPOOL" cancel "$JOB" >/dev/null
JOB=$("$IDLEPOOL" submit "$T/chat.toml")
wait_until 60 chat_200
wait "$S7" || true
grep -q '^data: \[DONE\]' "$T/stream.7" && ! grep -q '"error"' "$T/stream.7" &&
  echo "note: the old stream finished before the new service was submitted"
pass "a service submitted again while its cancelled namesake drains takes the name and answers"
"$IDLEPOOL" cancel "$JOB" >/dev/null
