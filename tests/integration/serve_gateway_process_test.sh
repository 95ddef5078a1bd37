#!/usr/bin/env bash
# `idlepool gateway` (issue 17, point 2): the gateway as processes of their own in front of one
# coordinator. Each watches the coordinator (Jobs.WatchGateway with an access token), gets its
# tunnel certificate from it and reaches the replicas through their workers; clients' keys are
# checked with the coordinator. Two gateways serve the same service; a frozen coordinator
# (SIGSTOP) does not stop them routing to the replicas they know; a cancelled service leaves
# them. Bad input: a wrong key (401), an unknown model (404), a read-only token for the
# gateway itself (refused at start, exit 2).
source "$(dirname "$0")/lib.sh"
ENGINE=$(dirname "$IDLEPOOL")/idlepool-fake-engine
[ -x "$ENGINE" ] || { echo "SKIP: no $ENGINE"; exit 77; }
command -v openssl >/dev/null && command -v curl >/dev/null || { echo "SKIP: no openssl/curl"; exit 77; }

start_coordinator
start_worker w1 --slots 2
start_worker w2 --slots 2
wait_until 20 is_connected w1
wait_until 20 is_connected w2
cat >"$T/chat.toml" <<TOML
name = "chat"
command = ["$ENGINE", "--port", "{port}", "--model", "tiny", "--id", "r{replica}", "--load-seconds", "1"]
[service]
protocol = "openai"
model = "tiny"
replicas = 2
# Gateways of their own watch: a cancelled replica keeps its whole drain (serve_bridge.h).
drain_seconds = 3
TOML
JOB=$("$IDLEPOOL" submit "$T/chat.toml")

# The gateways' own HTTPS certificate, for the name clients use (not the pool CA's).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/gw.key" \
  -out "$T/gw.pem" -days 1 -subj /CN=gateway -addext "subjectAltName=IP:127.0.0.1" 2>/dev/null
start_gateway() {  # start_gateway NAME: sets GW_<NAME> to its base URL
  "$IDLEPOOL" gateway --listen 127.0.0.1:0 --tls-cert "$T/gw.pem" --tls-key "$T/gw.key" \
    --name "$1" >"$T/$1.log" 2>&1 &
  PIDS+=($!)
  printf -v "GWPID_$1" '%s' "$!"
  wait_until 20 grep -q "serving on" "$T/$1.log"
  printf -v "GW_$1" 'https://127.0.0.1:%s' "$(sed -n 's/.*serving on 127.0.0.1:\([0-9]*\).*/\1/p' "$T/$1.log")"
}
chat() {  # chat URL: prints the HTTP status; the answer in $T/answer
  curl -sS --cacert "$T/gw.pem" -o "$T/answer" -w '%{http_code}' -H "Authorization: Bearer ${KEY:-$TOKEN}" \
    -H 'Content-Type: application/json' "$1/v1/chat/completions" \
    -d "{\"model\":\"${MODEL:-tiny}\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
}
answers() { [ "$(chat "$1")" = 200 ]; }
start_gateway g1
start_gateway g2
wait_until 60 answers "$GW_g1"
wait_until 60 answers "$GW_g2"
for gw in "$GW_g1" "$GW_g2"; do
  seen=""
  for i in $(seq 1 12); do
    code=$(chat "$gw"); [ "$code" = 200 ] || fail "$gw request $i: HTTP $code: $(cat "$T/answer")"
    seen="$seen $(jq -r .choices[0].message.content "$T/answer" | grep -o 'replica=r[0-9]*')"
  done
  echo "$seen" | grep -q r0 && echo "$seen" | grep -q r1 || fail "$gw used one replica only:$seen"
done
pass "two gateway processes each serve the service through both replicas' tunnels"

[ "$(KEY=ipt1_nosuchid.nosecret chat "$GW_g1")" = 401 ] || fail "a wrong key was not refused with 401"
[ "$(KEY=nonsense chat "$GW_g1")" = 401 ] || fail "a malformed key was not refused with 401"
[ "$(MODEL=nope chat "$GW_g1")" = 404 ] || fail "an unknown model was not answered 404"
READ=$("$IDLEPOOL" token create --role read --data-dir "$T/coord" 2>/dev/null)
rc=0
out=$(IDLEPOOL_TOKEN=$READ "$IDLEPOOL" gateway --listen 127.0.0.1:0 --tls-cert "$T/gw.pem" \
  --tls-key "$T/gw.key" 2>&1) || rc=$?
[ "$rc" = 2 ] || fail "a gateway with a read token started (exit $rc): $out"
pass "wrong or malformed key 401, unknown model 404, a read-only token cannot run a gateway"

# The coordinator frozen: the gateways route on to the replicas they know (the key was checked
# within the last seconds).
kill -STOP "$COORD_PID"
for i in $(seq 1 10); do
  code=$(chat "$GW_g2"); [ "$code" = 200 ] || { kill -CONT "$COORD_PID"; fail "request $i with the coordinator frozen: HTTP $code"; }
done
kill -CONT "$COORD_PID"
pass "with the coordinator frozen, a gateway routes on (10 requests, all 200)"

"$IDLEPOOL" cancel "$JOB" >/dev/null
gone() { [ "$(chat "$GW_g1")" = 404 ] && [ "$(chat "$GW_g2")" = 404 ]; }
wait_until 30 gone
pass "a cancelled service leaves both gateways (404)"
