#!/usr/bin/env bash
# Autoscaling through the pool (issue 17, point 5): a service with min_replicas = 0 runs no
# replica until a request comes; the first request waits in the gateway's queue while the
# autoscaler asks for a replica, the core places it and its health check turns 200, then it
# succeeds. A burst of concurrent requests (more than 2 per replica) scales it up to its
# max_replicas, and every request of the burst succeeds. The scale-down delay (60 s, or twice a
# replica's start time) is the pure module's, tested in autoscaler_test.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
need_engine
start_serving 2

chat() {  # chat OUTFILE: one chat completion; prints its HTTP status
  curl -sS --cacert "$T/coord/ca.pem" -o "$1" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' "$GW/v1/chat/completions" \
    -d '{"model":"elastic","messages":[{"role":"user","content":"hi"}]}'
}
wanted() { "$IDLEPOOL" services --json | jq '.services[] | select(.name=="elastic") | .replicas'; }
wanted_is() { [ "$(wanted)" = "$1" ]; }

cat >"$T/svc.toml" <<TOML
name = "elastic"
command = ["$ENGINE", "--port", "{port}", "--model", "elastic", "--load-seconds", "1", "--tokens", "20", "--token-ms", "100"]
[service]
protocol = "openai"
model = "elastic"
min_replicas = 0
max_replicas = 2
max_concurrent = 4
TOML
JOB=$("$IDLEPOOL" submit "$T/svc.toml")
wait_until 10 wanted_is 0
[ "$(job_field "$JOB" running)" = 0 ] || fail "a replica runs before any request: $("$IDLEPOOL" services; "$IDLEPOOL" status "$JOB")"
pass "min_replicas = 0: no replica runs while nothing is asked"

code=$(chat "$T/first")
[ "$code" = 200 ] || fail "the first request: HTTP $code: $(cat "$T/first")"
[ "$(wanted)" -ge 1 ] || fail "the service did not scale up from 0"
pass "the first request waited while a replica started, then succeeded"

BURST=()
for i in $(seq 1 10); do (chat "$T/burst.$i" >"$T/code.$i") & BURST+=($!); done
wait "${BURST[@]}"
for i in $(seq 1 10); do
  [ "$(cat "$T/code.$i")" = 200 ] || fail "burst request $i: HTTP $(cat "$T/code.$i"): $(cat "$T/burst.$i")"
done
wait_until 30 wanted_is 2
grep -q "service $JOB 'elastic': 1 -> 2 replicas" "$T/coordinator.log" || fail "no logged reason for the scale-up"
pass "a burst of 10 requests: all succeed, the service scaled up to its max of 2 (reason logged)"
