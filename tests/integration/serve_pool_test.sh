#!/usr/bin/env bash
# Serving through the pool, end to end (issue 17, points 1, 2 and 4): the coordinator's gateway
# (HTTPS with the pool CA, access tokens of role submit as bearer keys) routes OpenAI requests
# to a service's replicas on real workers, reaching each through its worker's TLS tunnel (the
# replicas listen on loopback only: in their sandbox's own network where the machine has one).
# A replica is given requests only once its health check answers 200 (the fake engine loads
# for a moment first). `idlepool services --json` shows replicas, states, requests and the time
# to first token of recent answers (p50/p95, per service and replica). A replica killed with
# SIGKILL under load fails no request. When a worker's owner comes back (fake sensors), its
# replica drains: it gets no new request, requests keep succeeding, and it is restarted on
# another worker. Bad input: a wrong key (401), an unknown model (404 naming the model served),
# a second service of the same name (refused).
source "$(dirname "$0")/lib.sh"
ENGINE=$(dirname "$IDLEPOOL")/idlepool-fake-engine
[ -x "$ENGINE" ] || { echo "SKIP: no $ENGINE"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }

owner_config "$T/owner.toml"
S=$T/sensors
sense "$S" idle_seconds 1000
start_coordinator --serve-listen 127.0.0.1:0
GW=$(gateway_url)
[ -n "$GW" ] || fail "the coordinator did not start its gateway"
start_worker w1 --slots 2
start_worker w2 --slots 2 --config "$T/owner.toml" --sensors-dir "$S"
wait_until 20 is_connected w1
wait_until 20 is_connected w2
wait_until 20 is_owner_state w2 run

CA=$T/coord/ca.pem
# chat BODY...: POSTs a chat completion through the gateway; prints the HTTP status and body.
chat() {
  curl -sS --cacert "$CA" -o "$T/answer" -w '%{http_code}' -H "Authorization: Bearer ${KEY:-$TOKEN}" \
    -H 'Content-Type: application/json' "$GW/v1/chat/completions" \
    -d "{\"model\":\"${MODEL:-tiny}\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]${1:-}}"
}
services() { "$IDLEPOOL" services --json; }
ready_count() { services | jq '[.services[] | select(.name=="chat") | .replica_status[] | select(.state=="ready")] | length'; }
ready_is() { [ "$(ready_count)" = "$1" ]; }
state_is() { [ "$(replica_field "$1" state)" = "$2" ]; }
w1_served_more() { [ "$(replica_field w1 requests)" -gt "$1" ]; }
no_services() { [ "$(services | jq '.services | length')" = 0 ]; }
replica_field() {  # replica_field WORKER FIELD
  services | jq -r --arg w "$1" --arg f "$2" '.services[] | select(.name=="chat") | .replica_status[] | select(.worker==$w) | .[$f]' | head -1
}

cat >"$T/chat.toml" <<TOML
name = "chat"
command = ["$ENGINE", "--port", "{port}", "--model", "tiny", "--id", "r{replica}", "--load-seconds", "1", "--tokens", "8", "--token-ms", "5"]
[service]
protocol = "openai"
model = "tiny"
replicas = 2
drain_seconds = 3
TOML
JOB=$("$IDLEPOOL" submit "$T/chat.toml")
wait_until 60 ready_is 2
pass "2 replicas ready behind the gateway once their health checks answered 200"

# Every request succeeds; both replicas serve (least outstanding of two choices).
for i in $(seq 1 40); do
  code=$(chat) || fail "curl failed on request $i"
  [ "$code" = 200 ] || fail "request $i: HTTP $code: $(cat "$T/answer")"
done
jq -e '.choices[0].message.content | length > 0' "$T/answer" >/dev/null || fail "no content: $(cat "$T/answer")"
r1=$(replica_field w1 requests); r2=$(replica_field w2 requests)
[ "$r1" -gt 0 ] && [ "$r2" -gt 0 ] || fail "requests not spread over both replicas: w1 $r1, w2 $r2"
pass "40 chat completions through the worker tunnels, spread over both replicas ($r1 / $r2)"

# Streaming passes through as server-sent events, ending with [DONE].
curl -sS -N --cacert "$CA" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  "$GW/v1/chat/completions" -d '{"model":"tiny","stream":true,"messages":[{"role":"user","content":"hi"}]}' >"$T/stream"
[ "$(grep -c '^data: {' "$T/stream")" -ge 8 ] || fail "fewer than 8 events: $(cat "$T/stream")"
grep -q '^data: \[DONE\]' "$T/stream" || fail "the stream did not end with [DONE]"
pass "a streamed answer passes through event by event"

# Time to first token of the recent answers (41 so far, all 200), per service and per replica;
# and the table's columns.
svc_ttft() { services | jq -r --arg f "$1" '.services[] | select(.name=="chat") | .[$f]'; }
n=$(svc_ttft ttft_answers); p50=$(svc_ttft ttft_p50_ms); p95=$(svc_ttft ttft_p95_ms)
[ "$n" -ge 1 ] && [ "$n" -le 41 ] || fail "ttft_answers $n, want 1..41 (the answers of the last 60 s)"
awk "BEGIN { exit !($p50 > 0 && $p95 >= $p50) }" || fail "time to first token p50 $p50, p95 $p95 ms"
for w in w1 w2; do
  rn=$(replica_field $w ttft_answers); rp=$(replica_field $w ttft_p50_ms)
  [ "$rn" -ge 1 ] && awk "BEGIN { exit !($rp > 0) }" || fail "replica on $w: $rn answers, p50 $rp ms"
done
"$IDLEPOOL" services | grep -q 'TTFT_P50_MS' || fail "no TTFT_P50_MS column: $("$IDLEPOOL" services)"
pass "time to first token: p50 $p50 ms, p95 $p95 ms over $n answers; per replica; in the table"

# Bad input.
[ "$(KEY=ipt1_wrong chat)" = 401 ] || fail "a wrong key was not refused with 401"
[ "$(MODEL=nosuch chat)" = 404 ] || fail "an unknown model was not answered 404"
grep -q tiny "$T/answer" || fail "the 404 does not name the model served: $(cat "$T/answer")"
out=$("$IDLEPOOL" submit "$T/chat.toml" 2>&1) && fail "a second service named chat was accepted: $out"
echo "$out" | grep -q "is running" || fail "the refusal does not say why: $out"
pass "wrong key 401, unknown model 404 with the list, a duplicate service refused"

# SIGKILL a replica under load: no request fails (retried on the other replica).
engine_of() {  # the PID of worker W's replica
  local e p
  for e in $(grep -lz "^IDLEPOOL_WORK_DIR=$(readlink -f "$T/$1")\$" /proc/[0-9]*/environ 2>/dev/null); do
    p=${e#/proc/}; p=${p%/environ}
    tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q "idlepool-fake-engine" && { echo "$p"; return 0; }
  done
  return 1
}
P1=$(engine_of w1) || fail "no replica on w1"
(for i in $(seq 1 60); do c=$(chat); [ "$c" = 200 ] || echo "HTTP $c $(cat "$T/answer")"; done) >"$T/load1" 2>&1 &
LOAD=$!
wait_until 20 w1_served_more "$r1"
kill -9 "$P1"
wait "$LOAD"
[ ! -s "$T/load1" ] || fail "requests failed while a replica was killed: $(head -3 "$T/load1")"
wait_until 60 ready_is 2
pass "a replica SIGKILLed under load: 0 failed requests; it is restarted and ready again"

# The owner of w2 comes back: its replica drains (no new request from then on), requests keep
# succeeding, and once drained it is stopped and started again on w3.
start_worker w3 --slots 2
wait_until 20 is_connected w3
A2=$(services | jq -r '.services[] | select(.name=="chat") | .replica_status[] | select(.worker=="w2") | .attempt')
[ -n "$A2" ] || fail "no replica on w2"
sense "$S" idle_seconds 0
wait_until 10 state_is w2 draining
n2=$(services | jq -r --argjson a "$A2" '.services[] | select(.name=="chat") | .replica_status[] | select(.attempt==$a) | .requests')
for i in $(seq 1 30); do
  code=$(chat); [ "$code" = 200 ] || fail "request $i during the drain: HTTP $code: $(cat "$T/answer")"
done
after=$(services | jq -r --argjson a "$A2" '[.services[] | select(.name=="chat") | .replica_status[] | select(.attempt==$a) | .requests] | first // empty')
[ -z "$after" ] || [ "$after" = "$n2" ] || fail "the draining replica got new requests ($n2 -> $after)"
wait_until 60 state_is w3 ready
[ "$(job_field "$JOB" failed)" = 0 ] || fail "a replica's task failed"
pass "owner back on w2: its replica drained (no new request), 30 requests all 200, restarted on w3"

"$IDLEPOOL" cancel "$JOB" >/dev/null
wait_until 20 no_services
# Its replicas drain first (drain_seconds; at once here: nothing in flight), then it is gone.
answers_404() { [ "$(chat)" = 404 ]; }
wait_until 20 answers_404
pass "cancel removes the service from the gateway"
