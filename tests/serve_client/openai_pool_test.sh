#!/usr/bin/env bash
# The official OpenAI client for node (npm `openai`, pinned) against the coordinator's own
# gateway, through the pool (issue 17, points 2 and 8): HTTPS with the pool CA (a custom agent
# trusting DATA_DIR/ca.pem), an access token as the API key, two replicas of a service on two
# real workers reached through their workers' TLS tunnels. The same script as
# serve.openai_client: models.list, chat (text and usage), a stream (one delta per token),
# completions, embeddings, a wrong key (401), an unknown model (404), concurrent requests over
# both replicas.
source "$(dirname "$0")/../integration/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(dirname "$IDLEPOOL")
ENGINE=$BIN/idlepool-fake-engine
[ -x "$ENGINE" ] || { echo "SKIP: no $ENGINE"; exit 77; }
command -v node >/dev/null && command -v npm >/dev/null || { echo "SKIP: no node/npm"; exit 77; }
source "$HERE/install_openai.sh"  # sets NODE_DIR

start_coordinator --serve-listen 127.0.0.1:0
GW=$(gateway_url)
[ -n "$GW" ] || fail "the coordinator did not start its gateway"
start_worker w1 --slots 2
start_worker w2 --slots 2
wait_until 20 is_connected w1
wait_until 20 is_connected w2
MODEL=org/fake-chat-1b
cat >"$T/llm.toml" <<TOML
name = "llm"
command = ["$ENGINE", "--port", "{port}", "--model", "$MODEL", "--id", "r{replica}", "--tokens", "6", "--token-ms", "150", "--embedding-dim", "24", "--load-seconds", "1"]
[service]
protocol = "openai"
model = "$MODEL"
replicas = 2
TOML
"$IDLEPOOL" submit "$T/llm.toml" >/dev/null
ready() { [ "$("$IDLEPOOL" services --json | jq '[.services[].replica_status[] | select(.state=="ready")] | length')" = 2 ]; }
wait_until 60 ready

IDLEPOOL_BASE_URL=$GW/v1 IDLEPOOL_API_KEY=$TOKEN IDLEPOOL_CA=$T/coord/ca.pem \
  IDLEPOOL_MODEL=$MODEL FAKE_TOKENS=6 FAKE_REPLICAS=r0,r1 EMBEDDING_DIM=24 BURST=8 \
  NODE_PATH=$NODE_DIR/node_modules node "$HERE/openai_client_test.js" | tee "$T/client.log" ||
  fail "the openai client test failed"
grep -q "all checks passed" "$T/client.log" || fail "the client script stopped early"
pass "the official openai client over HTTPS through the pool's gateway and worker tunnels"
