#!/usr/bin/env bash
# The serving gateway driven by the official OpenAI client for node (npm `openai` 4.x, pinned in
# tests/serve_client/package-lock.json), issue 17: idlepool-gateway-harness in front of 2
# idlepool-fake-engine replicas, all on 127.0.0.1, and openai_client_test.js calling it as an
# application would: models.list, a chat completion (text and usage checked against what the
# engines are told to answer), the same streamed (one delta per token, joined), a completion,
# embeddings (dimension), a wrong key (AuthenticationError, 401), an unknown model
# (NotFoundError, 404), concurrent requests over both replicas, and a replica SIGKILLed with
# requests in flight (every non-streamed request still answered; the client itself never
# retries). The npm package is installed into the build tree with `npm ci` on first use, as
# tests/browser does. Skips (77) only when node/npm or the test tools are missing or the npm
# registry cannot be reached; any other failed npm install fails the test.
source "$(dirname "$0")/../integration/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(dirname "$IDLEPOOL")
ENGINE=$BIN/idlepool-fake-engine
GATEWAY=$BIN/idlepool-gateway-harness
[ -x "$ENGINE" ] && [ -x "$GATEWAY" ] || { echo "SKIP: no $ENGINE or $GATEWAY"; exit 77; }
command -v node >/dev/null && command -v npm >/dev/null || { echo "SKIP: no node/npm"; exit 77; }

source "$HERE/install_openai.sh"  # sets NODE_DIR

MODEL=org/fake-chat-1b  # the harness splits --service on ":"
TOKENS=6
DIM=24
echo "key-$$-$RANDOM" >"$T/key"
port_in() { sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$1" | head -1; }
# Each answer takes TOKENS x 150 ms: a burst of requests is still in flight when one replica is
# killed, and a stream's tokens arrive as separate chunks.
for r in r1 r2; do
  "$ENGINE" --listen 127.0.0.1:0 --model "$MODEL" --id "$r" --tokens "$TOKENS" --token-ms 150 \
    --embedding-dim "$DIM" >"$T/$r.log" 2>&1 &
  PIDS+=($!)
  printf -v "PID_$r" '%s' "$!"
  wait_until 10 grep -q "listening on" "$T/$r.log"
  printf -v "PORT_$r" '%s' "$(port_in "$T/$r.log")"
done
# The harness reads control commands on stdin: an open fifo keeps it from seeing an end.
mkfifo "$T/gateway.ctl"
"$GATEWAY" --key-file "$T/key" --service "llm:openai:$MODEL:4" \
  --replica "llm:1:127.0.0.1:$PORT_r1" --replica "llm:2:127.0.0.1:$PORT_r2" --health-poll \
  <"$T/gateway.ctl" >"$T/gateway.log" 2>&1 &
PIDS+=($!)
exec {CTL}>"$T/gateway.ctl"
wait_until 10 grep -q "listening on" "$T/gateway.log"
wait_until 10 grep -qx "ready 1" "$T/gateway.log"
wait_until 10 grep -qx "ready 2" "$T/gateway.log"
GPORT=$(port_in "$T/gateway.log")

IDLEPOOL_BASE_URL=http://127.0.0.1:$GPORT/v1 IDLEPOOL_API_KEY=$(cat "$T/key") \
  IDLEPOOL_MODEL=$MODEL FAKE_TOKENS=$TOKENS FAKE_REPLICAS=r1,r2 EMBEDDING_DIM=$DIM \
  KILL_PID=$PID_r1 KILL_STATS_URL=http://127.0.0.1:$PORT_r1/stats BURST=8 \
  NODE_PATH=$NODE_DIR/node_modules node "$HERE/openai_client_test.js" | tee "$T/client.log" ||
  fail "the openai client test failed"
grep -q "all checks passed" "$T/client.log" || fail "the client script stopped early"
# The victim is gone; the other replica answered the rest.
if kill -0 "$PID_r1" 2>/dev/null; then fail "replica r1 survived its SIGKILL"; fi
[ "$(curl -s "http://127.0.0.1:$PORT_r2/stats" | jq -r .errors)" = 0 ] || fail "r2 counted errors"
pass "the official openai client (npm $(jq -r .version "$NODE_DIR/node_modules/openai/package.json")): chat, stream, completions, embeddings, models, 401, 404, SIGKILL of a replica"
