#!/usr/bin/env bash
# Serving keys of a shared pool: every gateway request is accounted to its key's user, and a key
# made with `token create --rate N/s --concurrency N` gets 429 with Retry-After past its limit,
# before any replica is touched (the replicas' request counts equal the 200s); a flooding key
# does not make another key's requests fail. `idlepool usage` counts requests and the tokens
# the answers reported, by user, and keeps them across a coordinator restart.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
need_engine
start_serving 1

cat >"$T/chat.toml" <<TOML
name = "chat"
command = ["$ENGINE", "--port", "{port}", "--model", "tiny", "--load-seconds", "1", "--tokens", "4", "--token-ms", "1"]
[service]
protocol = "openai"
model = "tiny"
replicas = 1
max_concurrent = 8
TOML
"$IDLEPOOL" submit "$T/chat.toml" >/dev/null
sed -e 's/"chat"/"slow"/' -e 's/"tiny"/"slow"/g' -e 's/"--tokens", "4", "--token-ms", "1"/"--tokens", "60", "--token-ms", "50"/' "$T/chat.toml" >"$T/slow.toml"
"$IDLEPOOL" submit "$T/slow.toml" >/dev/null
wait_until 60 ready_is 1
slow_ready() { [ "$(services | jq '[.services[] | select(.name=="slow") | .replica_status[] | select(.state=="ready")] | length')" = 1 ]; }
wait_until 60 slow_ready

key() {  # key USER FLAGS...: a submit token for USER
  local user=$1
  shift
  "$IDLEPOOL" token create --role submit --name "$user-app" --user "$user" "$@" --data-dir "$T/coord" 2>/dev/null
}
ALICE=$(key alice --rate 2/s)
BOB=$(key bob)
CAROL=$(key carol --concurrency 1)
"$IDLEPOOL" token list --data-dir "$T/coord" >"$T/tokens"
grep -q 'alice-app .* 2/s ' "$T/tokens" || fail "token list does not show alice's rate: $(cat "$T/tokens")"
grep -q 'carol-app .* x1 ' "$T/tokens" || fail "token list does not show carol's concurrency: $(cat "$T/tokens")"
out=$("$IDLEPOOL" token create --role submit --rate fast --data-dir "$T/coord" 2>&1) && fail "--rate fast was taken"
grep -q -- "--rate: 'fast' is not a rate" <<<"$out" || fail "unclear --rate error: $out"
out=$("$IDLEPOOL" token create --role worker --rate 1/s --data-dir "$T/coord" 2>&1) && fail "a join token took --rate"
grep -q "for access tokens" <<<"$out" || fail "unclear error for a join token's --rate: $out"
pass "token create --rate/--concurrency kept and listed; bad values refused naming the flag"

# ask KEY NAME [BODY-EXTRA]: a chat completion; headers in $T/NAME.h, body in $T/NAME.b; prints the code.
ask() {
  curl -sS --cacert "$CA" -D "$T/$2.h" -o "$T/$2.b" -w '%{http_code}' -H "Authorization: Bearer $1" \
    -H 'Content-Type: application/json' "$GW/v1/chat/completions" \
    -d "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]${3:-}}"
}
served_by_replica() { replicas | jq '[.[].requests] | add'; }
before=$(served_by_replica)

# Alice floods (20 at once, over her 2/s) while Bob asks 10 times: Bob gets 10 answers.
floods=()
for i in $(seq 1 20); do
  (ask "$ALICE" "a$i" >"$T/a$i.code") &
  floods+=($!)
done
bob_ok=0
for i in $(seq 1 10); do
  code=$(ask "$BOB" "b$i")
  [ "$code" = 200 ] || fail "bob's request $i while alice floods: HTTP $code: $(cat "$T/b$i.b")"
  bob_ok=$((bob_ok + 1))
done
wait "${floods[@]}"  # only these: the pool's processes are this shell's children too
a_ok=0 a_429=0
for i in $(seq 1 20); do
  case $(cat "$T/a$i.code") in
    200) a_ok=$((a_ok + 1)) ;;
    429)
      a_429=$((a_429 + 1))
      grep -qi '^retry-after: [1-9]' "$T/a$i.h" || fail "a 429 without Retry-After: $(cat "$T/a$i.h")"
      jq -e '.error.type == "rate_limit_error" and .error.code == "rate_limit_exceeded"' "$T/a$i.b" >/dev/null ||
        fail "a 429 without an OpenAI rate-limit error: $(cat "$T/a$i.b")"
      ;;
    *) fail "alice's request $i: HTTP $(cat "$T/a$i.code"): $(cat "$T/a$i.b")" ;;
  esac
done
[ "$a_429" -gt 0 ] && [ "$a_ok" -ge 2 ] || fail "20 requests at once over 2/s: $a_ok answered, $a_429 refused"
after=$(served_by_replica)
[ $((after - before)) = $((a_ok + bob_ok)) ] ||
  fail "the replica saw $((after - before)) requests for $a_ok + $bob_ok answered: a refused one reached it"
pass "alice over 2/s: $a_ok answered, $a_429 got 429 + Retry-After, none reached the replica; bob's 10 all answered"

# Carol may have one request at once: a second while her stream (60 tokens, 3 s) flows is refused.
curl -sS -N --cacert "$CA" -H "Authorization: Bearer $CAROL" -H 'Content-Type: application/json' \
  "$GW/v1/chat/completions" \
  -d '{"model":"slow","stream":true,"messages":[{"role":"user","content":"x"}]}' >"$T/c.stream" 2>&1 &
STREAM=$!
stream_flows() { grep -q '^data: {' "$T/c.stream"; }
wait_until 20 stream_flows
code=$(ask "$CAROL" c0)
[ "$code" = 429 ] || fail "carol's second request at once: HTTP $code: $(cat "$T/c0.b")"
grep -q "at once" "$T/c0.b" || fail "the 429 does not say why: $(cat "$T/c0.b")"
wait "$STREAM"
grep -q '^data: \[DONE\]' "$T/c.stream" || fail "carol's stream did not end whole: $(tail -3 "$T/c.stream")"
code=$(ask "$CAROL" c1)
[ "$code" = 200 ] || fail "carol's request after her stream ended: HTTP $code: $(cat "$T/c1.b")"
pass "carol's concurrency 1: refused (429) while her stream flows, answered once it ended"

# Usage: requests and tokens by user, as the answers reported them.
tokens_of() {  # the sum of usage.total_tokens over the 200 answers of files $T/PREFIX*.b
  local sum=0 f n
  for f in "$T"/"$1"*.b; do
    [ "$(cat "${f%.b}.code" 2>/dev/null || echo 200)" = 200 ] || continue
    n=$(jq '.usage.total_tokens // 0' "$f" 2>/dev/null || echo 0)
    sum=$((sum + n))
  done
  echo "$sum"
}
usage_of() { "$IDLEPOOL" usage --json | jq -r --arg u "$1" --arg f "$2" '.rows[] | select(.key==$u) | .[$f]'; }
[ "$(usage_of alice requests)" = "$a_ok" ] || fail "usage: alice $(usage_of alice requests) requests, $a_ok answered"
[ "$(usage_of bob requests)" = 10 ] || fail "usage: bob $(usage_of bob requests) requests, 10 answered"
bob_tokens=$(tokens_of b)
[ "$bob_tokens" -gt 0 ] || fail "the engine's answers report no usage: $(cat "$T/b1.b")"
[ "$(usage_of bob tokens)" = "$bob_tokens" ] || fail "usage: bob $(usage_of bob tokens) tokens, answers reported $bob_tokens"
"$IDLEPOOL" usage >"$T/usage.txt"
grep -q 'REQUESTS' "$T/usage.txt" || fail "usage has no REQUESTS column: $(cat "$T/usage.txt")"
pass "usage: requests (alice $a_ok, bob 10) and tokens ($bob_tokens for bob) by user, as answered"

# Kept in the store: the same after a restart.
kill "$COORD_PID"
wait "$COORD_PID" 2>/dev/null || true
start_coordinator --serve-listen 127.0.0.1:0
[ "$(usage_of bob requests)" = 10 ] || fail "after a restart: bob $(usage_of bob requests) requests"
pass "served usage survives a coordinator restart"
