#!/usr/bin/env bash
# The serving gateway (src/serve/gateway.h) through idlepool-gateway-harness, in front of
# idlepool-fake-engine replicas, all real processes on 127.0.0.1 (issue 17's tests):
#   1. bad input: no or wrong key 401, unknown model 404 with the list, malformed JSON and a
#      missing model 400, an oversized body 413; /v1/models lists the model;
#   2. balance: 4 replicas x max_concurrent 1, 4 simultaneous slow requests: all 4 engines busy;
#   3. a loading replica (503 on /health) gets nothing until it is ready, then gets requests;
#   4. a replica answering 500 is ejected: every request still succeeds (retried), and its
#      request count stops growing (at most one probation probe);
#   5. SIGKILL of a replica under load: no failed non-streamed request; a stream broken after
#      its first byte ends with an error event and the chunked body's proper end;
#   6. a client that leaves mid-stream: the engine counts its request cancelled;
#   7. drain: no new request reaches the drained replica, its in-flight one finishes, "drained";
#      remove: an in-flight request that sent nothing yet is retried on another replica;
#   8. /services/NAME/... passes any request to an http service; a full queue answers 503 with
#      Retry-After at once, and the queued request is served when a slot frees;
#   9. 300 streams held through the gateway: its descriptors and memory (VmRSS) measured, and
#      back down once they close;
#  10. 16 replicas at a steady rate (1920 requests at 160/s): max/min requests per replica <= 1.2.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gateway_lib.sh"

# 1. Bad input.
start_engine e0 --tokens 3
start_gateway g1 2 e0
[ "$(code "$(gw /v1/models)")" = 401 ] || fail "no key: not 401"
jq -e '.error.type == "authentication_error"' "$T/body" >/dev/null || fail "401 body: $(cat "$T/body")"
[ "$(code -H 'Authorization: Bearer nope' "$(gw /v1/models)")" = 401 ] || fail "wrong key: not 401"
[ "$(code "${H[@]}" "$(gw /v1/models)")" = 200 ] || fail "/v1/models"
[ "$(jq -r '.data[0].id' "$T/body")" = m1 ] || fail "/v1/models: $(cat "$T/body")"
[ "$(code "${H[@]}" "$(gw /v1/chat/completions)" -d '{"model":"gpt-9","messages":[]}')" = 404 ] ||
  fail "unknown model: not 404"
jq -e '.error.param == "model" and (.error.message | contains("models: m1"))' "$T/body" \
  >/dev/null || fail "404 body lacks the model list: $(cat "$T/body")"
[ "$(code "${H[@]}" "$(gw /v1/chat/completions)" -d '{"model":"m1","messages":[')" = 400 ] ||
  fail "malformed JSON: not 400"
[ "$(code "${H[@]}" "$(gw /v1/embeddings)" -d '{"input":"x"}')" = 400 ] || fail "no model: not 400"
head -c $((9 << 20)) /dev/zero | tr '\0' x >"$T/big"
[ "$(code "${H[@]}" "$(gw /v1/chat/completions)" --data-binary @"$T/big")" = 413 ] ||
  fail "9 MiB body: not 413"
[ "$(code "${H[@]}" "$(gw /nothing)")" = 404 ] || fail "unknown route: not 404"
[ "$(chat '' | jq -r .choices[0].message.content)" = "replica=e0 tok1 tok2" ] || fail "a chat"
stat_is e0 requests 1 || fail "the refused requests reached the engine"
pass "401 without or with a wrong key, 404 with the models, 400, 413; a chat goes through"

# Pipelining: 3 requests sent back to back on one connection before any answer: 3 answers, in
# order (the third one used to wait for the idle timeout).
cat >"$T/pipeline.py" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
req = ("GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n" % sys.argv[2]).encode()
s.sendall(req * 3)
got = b""
while got.count(b"HTTP/1.1 200") < 3 or not got.endswith(b"}"):
    chunk = s.recv(65536)
    if not chunk:
        break
    got += chunk
print(got.count(b"HTTP/1.1 200"))
PY
[ "$(timeout 20 python3 "$T/pipeline.py" "$GPORT" "$KEY")" = 3 ] || fail "3 pipelined requests: not 3 answers"
pass "3 pipelined requests on one connection: 3 answers"

# 2. Balance: 4 replicas of one slot, 4 slow requests at once -> every engine holds one.
for i in 1 2 3 4; do start_engine b$i --tokens 2 --ttft-ms 3000; done
start_gateway g2 1 b1 b2 b3 b4
JOBS=()
for i in 1 2 3 4; do chat '' >"$T/bal$i.json" & JOBS+=($!); done
all_busy() { for i in 1 2 3 4; do stat_is b$i in_flight 1 || return 1; done; }
wait_until 10 all_busy
wait "${JOBS[@]}"
for i in 1 2 3 4; do jq -e '.choices[0].message.content | startswith("replica=b")' "$T/bal$i.json" \
  >/dev/null || fail "balance: request $i: $(cat "$T/bal$i.json")"; done
pass "4 simultaneous requests on 4 replicas of 1 slot: all 4 engines busy at once"

# 3. A loading replica gets nothing until its /health answers 200.
start_engine l1 --tokens 2
start_engine l2 --tokens 2 --load-seconds 3
start_gateway g3 4 l1 l2 -- --health-poll
wait_until 10 grep -qx "ready 1" "$T/g3.log"
for i in $(seq 10); do chat '' | jq -e .choices >/dev/null || fail "loading: request $i failed"; done
grep -qx "ready 2" "$T/g3.log" && fail "l2 ready before its load ended (the test needs it loading)"
stat_is l2 requests 0 || fail "the loading replica got $(stat l2 requests) requests"
wait_until 20 grep -qx "ready 2" "$T/g3.log"
l2_served() { chat '' >/dev/null; [ "$(stat l2 requests)" -gt 0 ]; }
wait_until 20 l2_served
pass "a loading replica gets nothing until ready, then gets requests"

# 4. A replica answering 500s is ejected; no request fails.
start_engine ok1 --tokens 2
start_engine bad --tokens 2 --status 500
start_gateway g4 4 ok1 bad
for i in $(seq 20); do chat '' | jq -e '.choices[0].message.content | startswith("replica=ok1")' \
  >/dev/null || fail "ejection: request $i was not answered by ok1"; done
before=$(stat bad requests)
[ "$before" -ge 1 ] || fail "the bad replica got no request at all (nothing tested)"
for i in $(seq 20); do chat '' | jq -e .choices >/dev/null || fail "after ejection: request $i"; done
after=$(stat bad requests)
[ $((after - before)) -le 1 ] || fail "the ejected replica still gets requests: $before -> $after"
pass "a replica answering 500 ejected after $before requests (then $((after - before)) probe)"

# 5a. SIGKILL under load: the non-streamed requests on it are retried.
start_engine k1 --tokens 4 --token-ms 300
start_engine k2 --tokens 4 --token-ms 300
start_gateway g5 4 k1 k2
JOBS=()
for i in $(seq 8); do chat '' >"$T/kill$i.json" & JOBS+=($!); done
wait_until 10 stat_is k1 in_flight 4
kill -9 "$PID_k1"
wait "${JOBS[@]}"
for i in $(seq 8); do jq -e '.choices[0].message.content | startswith("replica=k2")' "$T/kill$i.json" \
  >/dev/null || fail "SIGKILL: request $i failed: $(cat "$T/kill$i.json")"; done
pass "SIGKILL of a replica with 4 requests in flight: all 8 requests answered (retried on k2)"

# 5b. A stream broken after its first bytes ends with an error event and a proper end.
start_engine c1 --tokens 10 --token-ms 50 --crash-after 3
start_gateway g6 4 c1
curl -sN --raw "${H[@]}" "$(gw /v1/chat/completions)" \
  -d '{"model":"m1","stream":true,"messages":[{"role":"user","content":"x"}]}' >"$T/broken.raw" ||
  fail "the broken stream did not end properly (curl $?)"
grep -q 'replica=c1' "$T/broken.raw" || fail "no first tokens: $(cat "$T/broken.raw")"
grep -q '^data: {"error":' "$T/broken.raw" || fail "no error event: $(cat "$T/broken.raw")"
tail -c 7 "$T/broken.raw" | od -c | grep -q '0  \\r  \\n  \\r  \\n' || fail "no last chunk"
grep -q 'data: \[DONE\]' "$T/broken.raw" && fail "a broken stream claims [DONE]"
pass "a stream cut after 3 tokens ends with an error event and the chunked end, no [DONE]"

# 6. A client that leaves mid-stream: the engine's request is cancelled.
start_engine s1 --tokens 1000 --token-ms 100
start_gateway g7 4 s1
curl -sN "${H[@]}" "$(gw /v1/chat/completions)" \
  -d '{"model":"m1","stream":true,"messages":[{"role":"user","content":"x"}]}' >"$T/left.txt" &
CURL=$!
wait_until 10 grep -q tok2 "$T/left.txt"
kill "$CURL"; wait "$CURL" 2>/dev/null || true
wait_until 5 stat_is s1 cancelled 1
stat_is s1 in_flight 0 || fail "the engine still generates for a client that left"
pass "a client that leaves mid-stream: its engine request cancelled"

# 7. Drain and remove.
start_engine d1 --tokens 2 --ttft-ms 1500
start_engine d2 --tokens 2
start_gateway g8 2 d1 d2
ctl g8 "weight 2 0"  # the slow request goes to d1
chat '' >"$T/draining.json" &
SLOW=$!
wait_until 10 stat_is d1 in_flight 1
ctl g8 "weight 2 1"
ctl g8 "drain 1"
d1_before=$(stat d1 requests)
for i in $(seq 10); do chat '' | jq -e '.choices[0].message.content == "replica=d2 tok1"' \
  >/dev/null || fail "drain: request $i not answered by d2"; done
[ "$(stat d1 requests)" = "$d1_before" ] || fail "the drained replica got a new request"
wait "$SLOW"
jq -e '.choices[0].message.content == "replica=d1 tok1"' "$T/draining.json" >/dev/null ||
  fail "the drained replica's in-flight request: $(cat "$T/draining.json")"
wait_until 10 grep -qx "drained 1" "$T/g8.log"
# Remove: a request in flight on a replica that sent nothing yet goes to another.
start_engine r1 --tokens 2 --ttft-ms 60000
start_engine r2 --tokens 2
start_gateway g9 2 r1
chat '' >"$T/moved.json" &
MOVED=$!
wait_until 10 stat_is r1 in_flight 1
ctl g9 "add llm 2 127.0.0.1 $PORT_r2"
ctl g9 "ready 2"
ctl g9 "remove 1"
wait "$MOVED"
jq -e '.choices[0].message.content == "replica=r2 tok1"' "$T/moved.json" >/dev/null ||
  fail "remove: the in-flight request was not retried on r2: $(cat "$T/moved.json")"
wait_until 5 stat_is r1 cancelled 1
pass "drain: no new request to the drained replica, its own finished; remove: retried elsewhere"

# 8. Pass-through to an http service; a full queue.
start_engine p1 --tokens 2 --ttft-ms 2000
mkfifo "$T/g11.ctl"
"$GATEWAY" --key-file "$T/key" --service raw:http::1 --replica "raw:1:127.0.0.1:$PORT_p1" \
  --max-queue 1 <"$T/g11.ctl" >"$T/g11.log" 2>&1 &
PIDS+=($!)
exec {GW_g11}>"$T/g11.ctl"
wait_until 10 grep -q "listening on" "$T/g11.log"
GPORT=$(port_in "$T/g11.log")
[ "$(code "${H[@]}" "$(gw /services/raw/health)")" = 200 ] || fail "pass-through GET /health"
[ "$(jq -r .status "$T/body")" = ok ] || fail "pass-through body: $(cat "$T/body")"
[ "$(code "${H[@]}" "$(gw /services/nope/health)")" = 404 ] || fail "unknown http service: not 404"
pass_chat() { curl -s "${H[@]}" "$(gw /services/raw/v1/completions)" -d '{"model":"x","prompt":"p"}'; }
pass_chat >"$T/first.json" &
FIRST=$!
wait_until 10 stat_is p1 in_flight 1
pass_chat >"$T/queued.json" &
QUEUED=$!
queue_holds_one() {
  ctl g11 "json $T/snap.json"
  jq -e '.services[0].queue_length == 1' "$T/snap.json"
}
wait_until 10 queue_holds_one
full() { [ "$(code -D "$T/full.head" "${H[@]}" "$(gw /services/raw/v1/completions)" -d '{}')" = 503 ]; }
full || fail "a request past a full queue: not 503: $(cat "$T/body")"
grep -qi '^Retry-After: [0-9]' "$T/full.head" || fail "503 without Retry-After: $(cat "$T/full.head")"
wait "$FIRST" "$QUEUED"
for f in first queued; do jq -e '.choices[0].text == "replica=p1 tok1"' "$T/$f.json" >/dev/null ||
  fail "pass-through $f: $(cat "$T/$f.json")"; done
pass "/services/raw/... passed through; a full queue answers 503 with Retry-After; the queued one served"

# 9. 300 streams held open through the gateway; descriptors and memory.
N=300
start_engine h1 --tokens 100000 --token-ms 1000
start_gateway g10 $N h1
fds() { ls "/proc/$1/fd" | wc -l; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
fds_idle=$(fds "$GPID")
cat >"$T/hold.py" <<'PY'
import socket, sys, time
port, n, key = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
body = b'{"model":"m1","stream":true,"messages":[{"role":"user","content":"hold"}]}'
req = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
       b"Content-Length: %d\r\n\r\n%s" % (key.encode(), len(body), body))
socks = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port)); s.sendall(req); socks.append(s)
for s in socks:
    got = b""
    while b"replica=h1" not in got:
        chunk = s.recv(65536)
        assert chunk, "closed before its first token"
        got += chunk
print("held", n, flush=True)
sys.stdin.read()  # until the test closes it
PY
exec {hold_in}> >(exec python3 "$T/hold.py" "$GPORT" "$N" "$KEY" >"$T/hold.txt" 2>&1)
wait_until 60 grep -q "held $N" "$T/hold.txt"
stat_is h1 in_flight $N || fail "the engine holds $(stat h1 in_flight) streams, not $N"
fds_held=$(fds "$GPID"); rss_held=$(rss_kb "$GPID")
# Each stream: the client's socket and the upstream's (2 per stream), plus a few.
[ "$fds_held" -le $((fds_idle + 2 * N + 16)) ] || fail "$fds_held descriptors for $N streams"
[ "$rss_held" -lt 65536 ] || fail "VmRSS $rss_held kB with $N streams"
exec {hold_in}>&-  # the holder closes every connection at once
wait_until 10 stat_is h1 cancelled $N
fds_back() { [ "$(fds "$GPID")" -le $((fds_idle + 4)) ]; }
wait_until 10 fds_back
pass "$N streams held: $fds_held descriptors (idle $fds_idle), VmRSS $rss_held kB; all cancelled, descriptors back"

# 10. 16 replicas at a steady rate: requests spread within 20 % (max/min per replica <= 1.2,
# counted by each engine). 1920 requests, one every 6.25 ms (160/s) from 8 client connections,
# each taking about 30 ms: about 5 in flight, so most picks are between idle replicas. (Each
# replica's measured speed, noisy here by 5-10 %, moves its share: 960 requests at 80/s gave
# 1.07 to 1.15, these 1.04 to 1.07.)
for i in $(seq 16); do start_engine q$i --tokens 2 --ttft-ms 30; done
start_gateway g12 2 $(for i in $(seq 16); do echo q$i; done)
cat >"$T/steady.py" <<'PY'
import http.client, json, sys, threading, time
port, key, total, rate, conns = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
body = json.dumps({"model": "m1", "messages": [{"role": "user", "content": "hi"}]})
start, lock, next_i, failed = time.monotonic() + 0.2, threading.Lock(), [0], []
def client():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    while True:
        with lock:
            i = next_i[0]; next_i[0] += 1
        if i >= total:
            return
        time.sleep(max(0.0, start + i / rate - time.monotonic()))  # request i leaves at i / rate
        c.request("POST", "/v1/chat/completions", body,
                  {"Authorization": "Bearer " + key, "Content-Type": "application/json"})
        r = c.getresponse(); data = r.read()
        if r.status != 200:
            failed.append("%d %s" % (r.status, data[:200]))
ts = [threading.Thread(target=client) for _ in range(conns)]
for t in ts: t.start()
for t in ts: t.join()
print("failed %d %s" % (len(failed), failed[:3]))
PY
out=$(timeout 60 python3 "$T/steady.py" "$GPORT" "$KEY" 1920 160 8) || fail "steady rate driver: $out"
[ "$out" = "failed 0 []" ] || fail "steady rate: $out"
counts=$(for i in $(seq 16); do stat q$i requests; done | sort -n)
min=$(echo "$counts" | head -1); max=$(echo "$counts" | tail -1)
sum=$(echo "$counts" | awk '{s += $1} END {print s}')
[ "$sum" = 1920 ] || fail "the engines counted $sum requests, not 1920"
ratio=$(awk -v a="$max" -v b="$min" 'BEGIN {printf "%.3f", a / (b > 0 ? b : 1)}')
[ "$min" -gt 0 ] && [ "$((max * 10))" -le "$((min * 12))" ] ||
  fail "16 replicas at a steady rate: max $max / min $min = $ratio > 1.2 (counts: $(echo $counts))"
pass "16 replicas, 1920 requests at 160/s: $min..$max per replica (max/min $ratio <= 1.2)"
