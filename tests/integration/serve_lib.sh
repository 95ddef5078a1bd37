# Helpers of the serving tests through the real pool (source after lib.sh): a coordinator
# serving its gateway and workers, `idlepool services --json` queries about the service "chat",
# and OpenAI requests to model "tiny" through the gateway (HTTPS, the pool CA, $TOKEN).

# need_engine: ENGINE is idlepool-fake-engine, next to idlepool; skips (77) without it or curl.
need_engine() {
  ENGINE=$(dirname "$IDLEPOOL")/idlepool-fake-engine
  [ -x "$ENGINE" ] || { echo "SKIP: no $ENGINE"; exit 77; }
  command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: no curl or jq"; exit 77; }
}
# start_serving N: a coordinator with its gateway (sets GW, CA) and workers w1..wN of 2 slots.
start_serving() {
  local i
  start_coordinator --serve-listen 127.0.0.1:0
  GW=$(gateway_url)
  [ -n "$GW" ] || fail "the coordinator did not start its gateway"
  for i in $(seq 1 "$1"); do start_worker "w$i" --slots 2; done
  for i in $(seq 1 "$1"); do wait_until 20 is_connected "w$i"; done
  CA=$T/coord/ca.pem
}

services() { "$IDLEPOOL" services --json; }
replicas() { services | jq -c '[.services[] | select(.name=="chat") | .replica_status[]]'; }
ready_is() { [ "$(replicas | jq '[.[] | select(.state=="ready")] | length')" = "$1" ]; }
draining_attempt() { replicas | jq -r '.[] | select(.state=="draining") | .attempt' | head -1; }
has_draining() { [ -n "$(draining_attempt)" ]; }

# chat: a one-token chat completion; prints the HTTP status, the body in $T/answer.
chat() {
  curl -sS --cacert "$CA" -o "$T/answer" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' "$GW/v1/chat/completions" \
    -d '{"model":"tiny","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}'
}
chat_200() { [ "$(chat)" = 200 ]; }
# stream N: a streamed chat completion (as many tokens as the engine gives), into $T/stream.N.
stream() {
  curl -sS -N --cacert "$CA" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    "$GW/v1/chat/completions" \
    -d '{"model":"tiny","stream":true,"messages":[{"role":"user","content":"hi"}]}' >"$T/stream.$1" 2>&1
}
streams_flowing() {  # streams_flowing N...: every stream has sent its first event
  local i
  for i in "$@"; do grep -q '^data: {' "$T/stream.$i" 2>/dev/null || return 1; done
}
