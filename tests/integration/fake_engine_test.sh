#!/usr/bin/env bash
# idlepool-fake-engine (tests/tools/fake_engine.cc), the stand-in for llama-server in the serving
# tests, checked against what those tests rely on:
#   1. /health answers 503 with a JSON body while loading, then 200; /v1/models lists the model;
#   2. a chat completion, a completion and embeddings, not streamed: OpenAI's JSON with usage,
#      the content naming the replica, max_tokens honoured; 400 on malformed JSON or a missing
#      field, with an OpenAI error body; several requests on one keep-alive connection; /stats'
#      last_request_ms (0, then the wall-clock time of the last request's arrival);
#   3. streamed: server-sent events, one HTTP chunk per token, a last chunk with finish_reason,
#      then [DONE]; the usage chunk when asked;
#   4. a client that leaves mid-stream, between two tokens a minute apart, is counted cancelled;
#   5. --crash-after ends the process mid-stream (the client sees a truncated stream) or at a
#      request; --hang-after stops a stream and keeps it open; --status and --error-rate (the
#      same draws for the same seed); --fixed; a non-loopback address refused; $IDLEPOOL_PORT;
#   6. 2000 streams held open at once: the engine's descriptors and memory (VmRSS) measured, all
#      counted cancelled once their clients close.
source "$(dirname "$0")/lib.sh"
ENGINE=$(dirname "$IDLEPOOL")/idlepool-fake-engine
HOLD=$(dirname "$0")/../tools/fake_engine/hold_streams.py
[ -x "$ENGINE" ] || { echo "SKIP: no $ENGINE"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }

# start_engine NAME ARGS...: an engine (on a free port unless ARGS has --listen); sets PORT_NAME
# and PID_NAME.
start_engine() {
  local name=$1; shift
  [[ " $* " == *" --listen "* ]] || set -- --listen 127.0.0.1:0 "$@"
  "$ENGINE" --verbose "$@" >"$T/$name.log" 2>&1 &
  PIDS+=($!)
  printf -v "PID_$name" '%s' "$!"
  wait_until 10 grep -q "listening on" "$T/$name.log"
  printf -v "PORT_$name" '%s' "$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$T/$name.log")"
}
url() { local p="PORT_$1"; echo "http://127.0.0.1:${!p}$2"; }
code() { curl -s -o "$T/body" -w '%{http_code}' "$@"; }  # the status; the body in $T/body
chat() {  # chat ENGINE JSON-EXTRA: a chat completion request with extra fields
  curl -s "$(url "$1" /v1/chat/completions)" -H 'Content-Type: application/json' \
    -d "{\"model\":\"m1\",\"messages\":[{\"role\":\"user\",\"content\":\"three small words\"}]$2}"
}
stat() { curl -s "$(url "$1" /stats)" | jq -r ".$2"; }
stat_is() { [ "$(stat "$1" "$2")" = "$3" ]; }
events() { grep '^data: {' "$1" | sed 's/^data: //'; }

# 1. Loading, then ready.
start_engine a --load-seconds 4 --tokens 5 --model m1 --id alpha
[ "$(stat a last_request_ms)" = 0 ] || fail "/stats last_request_ms before any request: not 0"
[ "$(code "$(url a /health)")" = 503 ] || fail "/health while loading: not 503"
[ "$(jq -r .error.message "$T/body")" = "Loading model" ] || fail "/health 503 body: $(cat "$T/body")"
[ "$(code "$(url a /v1/chat/completions)" -d '{}')" = 503 ] || fail "a request while loading: not 503"
health_ok() { [ "$(code "$(url a /health)")" = 200 ]; }
wait_until 30 health_ok
[ "$(jq -r .status "$T/body")" = ok ] || fail "/health 200 body: $(cat "$T/body")"
[ "$(code "$(url a /v1/models)")" = 200 ] || fail "/v1/models"
[ "$(jq -r '.object + " " + .data[0].id + " " + .data[0].object' "$T/body")" = "list m1 model" ] ||
  fail "/v1/models: $(cat "$T/body")"
pass "503 while loading, then 200; /v1/models lists m1"

# 2. Answers in full; /stats says when the last one arrived (wall-clock ms, as date says it).
before=$(date +%s%3N)
chat a '' >"$T/full.json"
after=$(date +%s%3N) last=$(stat a last_request_ms)
[ "$last" -ge "$before" ] && [ "$last" -le "$after" ] ||
  fail "/stats last_request_ms $last is not between $before and $after"
[ "$(jq -r .choices[0].message.content "$T/full.json")" = "replica=alpha tok1 tok2 tok3 tok4" ] ||
  fail "chat content: $(cat "$T/full.json")"
[ "$(jq -r '[.object, .choices[0].message.role, .choices[0].finish_reason, .usage.prompt_tokens,
             .usage.completion_tokens, .usage.total_tokens] | join(" ")' "$T/full.json")" = \
  "chat.completion assistant stop 3 5 8" ] || fail "chat answer: $(cat "$T/full.json")"
chat a ',"max_tokens":2' | jq -e '.choices[0].message.content == "replica=alpha tok1" and
  .choices[0].finish_reason == "length" and .usage.completion_tokens == 2' >/dev/null ||
  fail "max_tokens 2 not honoured"
curl -s "$(url a /v1/completions)" -d '{"model":"m1","prompt":"say it"}' |
  jq -e '.object == "text_completion" and .choices[0].text == "replica=alpha tok1 tok2 tok3 tok4"' \
  >/dev/null || fail "completion"
embed() { curl -s "$(url a /v1/embeddings)" -d "{\"model\":\"m1\",\"input\":$1}"; }
embed '["one", "two", "one"]' >"$T/emb.json"
jq -e '(.data | length) == 3 and (.data[0].embedding | length) == 8 and
  .data[0].embedding == .data[2].embedding and .data[0].embedding != .data[1].embedding and
  (.data[1].embedding | map(. * .) | add) > 0.999' "$T/emb.json" >/dev/null ||
  fail "embeddings: $(cat "$T/emb.json")"
[ "$(embed '"one"' | jq -c .data[0].embedding)" = "$(jq -c .data[0].embedding "$T/emb.json")" ] ||
  fail "embeddings differ between requests"
# OpenAI clients ask for base64 (float32, little-endian) by default: the same vector.
embed '"one"' >"$T/emb-float.json"
curl -s "$(url a /v1/embeddings)" -d '{"model":"m1","input":"one","encoding_format":"base64"}' \
  >"$T/emb-b64.json"
python3 - "$T/emb-float.json" "$T/emb-b64.json" <<'PY' || fail "base64 embeddings differ from floats"
import base64, json, struct, sys
floats = json.load(open(sys.argv[1]))["data"][0]["embedding"]
raw = base64.b64decode(json.load(open(sys.argv[2]))["data"][0]["embedding"])
b64 = struct.unpack("<%df" % (len(raw) // 4), raw)
assert len(b64) == len(floats) == 8 and all(abs(a - b) < 1e-6 for a, b in zip(floats, b64))
PY
[ "$(code "$(url a /v1/chat/completions)" -d '{"model":"m1","messages":[')" = 400 ] ||
  fail "malformed JSON: not 400"
jq -e '.error.type == "invalid_request_error" and (.error.message | length) > 0' "$T/body" \
  >/dev/null || fail "malformed JSON: error body $(cat "$T/body")"
[ "$(code "$(url a /v1/chat/completions)" -d '{"model":"m1"}')" = 400 ] || fail "no messages: not 400"
[ "$(jq -r .error.param "$T/body")" = messages ] || fail "no messages: $(cat "$T/body")"
[ "$(code "$(url a /v1/completions)" -d '{"prompt":"x"}')" = 400 ] || fail "no model: not 400"
[ "$(code "$(url a /v1/chat/completions)" \
    -d '{"model":"m1","stream":"yes","messages":[{"role":"user"}]}')" = 400 ] ||
  fail "stream not a boolean: not 400"
[ "$(code "$(url a /v1/nothing)")" = 404 ] || fail "unknown route: not 404"
pass "chat, completion, embeddings in full; 400 on malformed JSON and missing fields"

# Three requests on one connection, the middle one streamed (python's http.client keeps it).
python3 - "$PORT_a" >"$T/keepalive.txt" <<'PY' || fail "keep-alive: $(cat "$T/keepalive.txt")"
import http.client, json, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
for stream in (False, True, False):
    body = json.dumps({"model": "m1", "stream": stream, "messages": [{"role": "user", "content": "x"}]})
    c.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    text = r.read().decode()
    assert r.status == 200 and "replica=alpha" in text, text
    assert stream == text.endswith("data: [DONE]\n\n"), text
    print("sock", c.sock.fileno() if c.sock else None)
PY
[ "$(sort -u "$T/keepalive.txt" | wc -l)" = 1 ] || fail "keep-alive: a new connection per request"
pass "keep-alive: three requests (one streamed) on one connection"

# 3. Streamed: the chunks as sent (--raw keeps the chunked framing), then the events.
curl -s --raw -D "$T/stream.head" "$(url a /v1/chat/completions)" \
  -d '{"model":"m1","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}' \
  >"$T/stream.raw"
grep -qi '^transfer-encoding: chunked' "$T/stream.head" || fail "stream: not chunked"
grep -qi '^content-type: text/event-stream' "$T/stream.head" || fail "stream: not text/event-stream"
# Chunk sizes are the lines of hex digits alone: 5 tokens, the end, the last (0) chunk.
[ "$(tr -d '\r' <"$T/stream.raw" | grep -cE '^[0-9a-f]+$')" = 7 ] ||
  fail "stream: $(tr -d '\r' <"$T/stream.raw" | grep -cE '^[0-9a-f]+$') chunks, want 7 (one per token)"
curl -sN "$(url a /v1/chat/completions)" \
  -d '{"model":"m1","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}' \
  >"$T/stream.sse"
# Every event is one "data: " line and a blank line; the last is [DONE].
awk 'NR % 2 == 1 && !/^data: / { exit 1 } NR % 2 == 0 && $0 != "" { exit 1 }' "$T/stream.sse" ||
  fail "stream: not SSE framing: $(head -c 600 "$T/stream.sse")"
[ "$(tail -2 "$T/stream.sse" | head -1)" = "data: [DONE]" ] || fail "stream: does not end in [DONE]"
[ "$(events "$T/stream.sse" | wc -l)" = 7 ] || fail "stream: want 5 token events, the end and usage"
[ "$(events "$T/stream.sse" | jq -j '.choices[0].delta.content // empty')" = \
  "replica=alpha tok1 tok2 tok3 tok4" ] || fail "stream: content"
events "$T/stream.sse" | head -1 | jq -e '.object == "chat.completion.chunk" and
  .choices[0].delta.role == "assistant" and .choices[0].finish_reason == null' >/dev/null ||
  fail "stream: first chunk"
events "$T/stream.sse" | sed -n 6p | jq -e '.choices[0].finish_reason == "stop" and
  .choices[0].delta == {}' >/dev/null || fail "stream: no finish_reason chunk"
events "$T/stream.sse" | sed -n 7p | jq -e '.choices == [] and .usage.completion_tokens == 5' \
  >/dev/null || fail "stream: no usage chunk"
curl -sN "$(url a /v1/completions)" -d '{"model":"m1","stream":true,"prompt":"x","max_tokens":3}' \
  >"$T/comp.sse"
[ "$(events "$T/comp.sse" | jq -j '.choices[0].text')" = "replica=alpha tok1 tok2" ] ||
  fail "completion stream: $(cat "$T/comp.sse")"
[ "$(events "$T/comp.sse" | tail -1 | jq -r .choices[0].finish_reason)" = length ] ||
  fail "completion stream: finish_reason"
pass "streams: SSE in one chunk per token, finish_reason, usage, [DONE]"

# 4. A client that leaves between two tokens a minute apart: only a read notices it.
start_engine slow --tokens 100 --token-ms 60000
curl -sN "$(url slow /v1/chat/completions)" \
  -d '{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}' >"$T/left.sse" &
CURL=$!
wait_until 20 grep -q 'replica=' "$T/left.sse"
stat_is slow in_flight 1 || fail "the stream is not in flight"
kill "$CURL"
wait_until 10 stat_is slow cancelled 1
stat_is slow in_flight 0 || fail "a cancelled stream still in flight"
stat_is slow completed 0 || fail "a cancelled stream completed"
pass "a client gone mid-stream is cancelled (between tokens)"

# 5. Failures. --crash-after 3: three tokens, then the process is gone, the stream cut short.
start_engine crash --tokens 10 --crash-after 3
rc=0
curl -sN "$(url crash /v1/chat/completions)" \
  -d '{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}' >"$T/crash.sse" || rc=$?
[ "$rc" != 0 ] || fail "curl saw a whole stream from a crashing engine"
[ "$(events "$T/crash.sse" | wc -l)" = 3 ] || fail "crash: $(events "$T/crash.sse" | wc -l) events, want 3"
! grep -q DONE "$T/crash.sse" || fail "crash: [DONE] sent"
wait_until 10 dead "$PID_crash"
rc=0; wait "$PID_crash" || rc=$?
[ "$rc" = 137 ] || fail "crash: exit status $rc, want 137 (SIGKILL)"
start_engine crash1 --crash-after 1
chat crash1 '' | jq -e '.choices[0].message.content | startswith("replica=")' >/dev/null ||
  fail "crash-after 1: the first request not answered"
rc=0; chat crash1 '' >/dev/null || rc=$?
[ "$rc" != 0 ] || fail "crash-after 1: the second request answered"
wait_until 10 dead "$PID_crash1"
pass "--crash-after: SIGKILL after 3 tokens (stream truncated), and at the second request"

start_engine hang --tokens 10 --hang-after 2
curl -sN "$(url hang /v1/chat/completions)" \
  -d '{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}' >"$T/hang.sse" &
CURL=$!
two_events() { [ "$(events "$T/hang.sse" | wc -l)" = 2 ]; }
wait_until 20 two_events
stat_is hang in_flight 1 || fail "hang: not in flight"
stat_is hang completed 0 || fail "hang: completed"
kill -0 "$CURL" || fail "hang: the connection was closed"
kill "$CURL"
wait_until 10 stat_is hang cancelled 1
[ "$(events "$T/hang.sse" | wc -l)" = 2 ] || fail "hang: more than 2 tokens"
pass "--hang-after 2: the stream stops, open, until its client leaves"

start_engine status --status 500
[ "$(code "$(url status /v1/chat/completions)" -d '{"model":"m","messages":[{"role":"user"}]}')" = 500 ] ||
  fail "--status 500: not 500"
jq -e '.error.message | length > 0' "$T/body" >/dev/null || fail "--status 500: no error body"
[ "$(code "$(url status /health)")" = 200 ] || fail "--status 500: /health not 200"
draws() {  # the statuses of 20 requests to engine $1
  local i
  for i in $(seq 20); do
    curl -s -o /dev/null -w '%{http_code} ' "$(url "$1" /v1/completions)" -d '{"model":"m","prompt":"x"}'
  done
}
start_engine rate1 --error-rate 0.5 --seed 7
start_engine rate2 --error-rate 0.5 --seed 7
first=$(draws rate1); second=$(draws rate2)
[ "$first" = "$second" ] || fail "--error-rate: draws differ with one seed: $first / $second"
fails=$(grep -o 500 <<<"$first" | wc -l)
[ "$fails" -ge 4 ] && [ "$fails" -le 16 ] || fail "--error-rate 0.5: $fails of 20 failed"
[ "$(stat rate1 errors)" = "$fails" ] || fail "--error-rate: /stats errors"
pass "--status 500; --error-rate 0.5 failed $fails of 20, the same ones for the same seed"

start_engine fixed --fixed --id fx
[ "$(code "$(url fixed /anything)" -d 'not even json')" = 200 ] || fail "--fixed: not 200"
[ "$(jq -r .choices[0].message.content "$T/body")" = replica=fx ] || fail "--fixed: $(cat "$T/body")"
stat_is fixed completed 1 || fail "--fixed: not counted"
rc=0; "$ENGINE" --listen 0.0.0.0:0 2>"$T/refused.txt" || rc=$?
[ "$rc" = 2 ] && grep -q "not a loopback address" "$T/refused.txt" || fail "0.0.0.0 not refused"
rc=0; "$ENGINE" --listen 192.168.1.1 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "192.168.1.1 not refused"
free_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
IDLEPOOL_PORT=$free_port start_engine env --listen 127.0.0.1
[ "$PORT_env" = "$free_port" ] || fail "IDLEPOOL_PORT $free_port: listening on $PORT_env"
chat env '' | jq -e --arg p "$free_port" '.choices[0].message.content | startswith("replica=" + $p + " ")' \
  >/dev/null || fail "--id does not default to the port"
pass "--fixed; non-loopback refused; IDLEPOOL_PORT; --id defaults to the port"

# 6. Many streams held open at once.
N=${FAKE_ENGINE_STREAMS:-2000}
start_engine many --tokens 1000000 --token-ms 2000
exec {hold_in}> >(exec python3 "$HOLD" "$PORT_many" "$N" >"$T/hold.txt" 2>&1)
PIDS+=($!)
wait_until 120 grep -q "held $N" "$T/hold.txt"
stat_is many in_flight "$N" || fail "$N streams: in flight $(stat many in_flight)"
# The connections open: the streams' and the one asking.
stat_is many connections $((N + 1)) || fail "$N streams: connections $(stat many connections)"
fds=$(ls "/proc/$PID_many/fd" | wc -l)
rss_kb=$(awk '/^VmRSS/ {print $2}' "/proc/$PID_many/status")
echo "$N open streams: engine VmRSS $((rss_kb / 1024)) MiB, $fds descriptors"
[ "$fds" -ge "$N" ] || fail "$N streams on $fds descriptors"
[ "$rss_kb" -le $((32 * 1024)) ] || fail "$N streams: VmRSS $rss_kb KiB over 32 MiB"
exec {hold_in}>&-  # the holder closes every connection
wait_until 60 stat_is many cancelled "$N"
wait_until 10 stat_is many connections 1
stat_is many in_flight 0 || fail "after $N clients left: in flight $(stat many in_flight)"
fds=$(ls "/proc/$PID_many/fd" | wc -l)
[ "$fds" -le 16 ] || fail "after $N clients left: $fds descriptors"
pass "$N streams held at once ($((rss_kb / 1024)) MiB), all cancelled when their clients left"
