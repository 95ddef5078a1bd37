#!/usr/bin/env bash
# A worker frozen under load (SIGSTOP: a lid shut, no goodbye) while it runs a replica, through
# the pool (issue 17's tests): a real coordinator (lease 2 s) and 3 workers, a service of 2
# replicas (one per machine: the third worker is free), steady requests through the coordinator's
# gateway (HTTPS, the pool CA). Asserted:
#   - every request succeeds: those caught on the frozen replica (sent into its worker's tunnel,
#     nothing back yet) are retried on the other replica when its lease runs out and the replica
#     leaves the gateway (nothing had reached their clients);
#   - the frozen replica leaves the service's ready replicas once the lease ran out, and is
#     restarted on the free worker;
#   - no new request reaches the frozen replica's engine after the lease ran out: the engine
#     (it runs on; only its worker is frozen) counts none while frozen, and after SIGCONT, under
#     load, at most max_concurrent more: requests the gateway had written into the frozen
#     worker's tunnel before the lease ran out (all in flight on it then, so at most its
#     max_concurrent), which the worker still hands to the engine when it wakes, before it learns
#     the attempt is stale. The gateway had retried them elsewhere: they run twice (1 in most
#     runs); their answers go nowhere;
#   - after SIGCONT the worker's stale attempt is fenced: its engine is killed, and the service
#     has its 2 replicas, never the stale one as a third.
# Printed, not asserted (wall-clock): the p50 of requests before the stop, while frozen, and after
# the lease ran out ("others' latency unchanged").
source "$(dirname "$0")/lib.sh"
ENGINE=$(dirname "$IDLEPOOL")/idlepool-fake-engine
[ -x "$ENGINE" ] || { echo "SKIP: no $ENGINE"; exit 77; }
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: no curl or jq"; exit 77; }

start_coordinator --serve-listen 127.0.0.1:0 --lease-timeout-ms 2000
GW=$(gateway_url)
[ -n "$GW" ] || fail "the coordinator did not start its gateway"
for w in w1 w2 w3; do start_worker $w --slots 2 --heartbeat-ms 200; done
for w in w1 w2 w3; do wait_until 20 is_connected $w; done
CA=$T/coord/ca.pem
MAXC=4

services() { "$IDLEPOOL" services --json; }
replicas() { services | jq -c '[.services[] | select(.name=="chat") | .replica_status[]]'; }
ready_is() { [ "$(replicas | jq '[.[] | select(.state=="ready")] | length')" = "$1" ]; }
listed() { replicas | jq -e --argjson a "$1" 'any(.[]; .attempt == $a)' >/dev/null; }
not_listed() { ! listed "$1"; }
ready_on() { replicas | jq -e --arg w "$1" 'any(.[]; .worker == $w and .state == "ready")' >/dev/null; }
# The engine of attempt A: its PID; the inference requests it logged (--verbose) in the log
# opened by keep_log (the worker deletes an attempt's log when it ends; the open file stays).
engine_pid() {
  local e p
  for e in $(grep -lz "^IDLEPOOL_ATTEMPT_ID=$1\$" /proc/[0-9]*/environ 2>/dev/null); do
    p=${e#/proc/}; p=${p%/environ}
    if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q idlepool-fake-engine; then
      echo "$p"; return 0
    fi
  done
  return 1
}
keep_log() { exec {ENGINE_LOG}<"$T/$1/attempts/$2.stderr.log"; }
engine_requests() { grep -c ': request [0-9]* /v1/' "/proc/$$/fd/$ENGINE_LOG" || true; }

cat >"$T/chat.toml" <<TOML
name = "chat"
command = ["$ENGINE", "--port", "{port}", "--model", "tiny", "--id", "r{replica}", "--load-seconds", "1", "--tokens", "4", "--token-ms", "5", "--verbose"]
[service]
protocol = "openai"
model = "tiny"
replicas = 2
max_concurrent = $MAXC
drain_seconds = 3
TOML
JOB=$("$IDLEPOOL" submit "$T/chat.toml")
wait_until 60 ready_is 2
R0=$(replicas | jq -c '.[] | select(.replica == 0)')
A=$(jq -r .attempt <<<"$R0"); W=$(jq -r .worker <<<"$R0")
EPID=$(engine_pid "$A") || fail "no engine process for attempt $A on $W"
WPID=WPID_$W; WPID=${!WPID}
FREE=$(for w in w1 w2 w3; do ready_on "$w" || echo "$w"; done)
keep_log "$W" "$A"
pass "2 replicas ready; replica 0 is attempt $A on $W (engine $EPID)"

# Steady load: 2 connections, one request every 50 ms in all; one line per request in
# $T/load.txt: "start (s, wall clock) duration_ms status".
cat >"$T/load.py" <<'PY'
import http.client, json, os, ssl, sys, threading, time
host, port = sys.argv[1].split("//")[1].split(":")
ctx = ssl.create_default_context(cafile=sys.argv[2])
token, stop, out = sys.argv[3], sys.argv[4], open(sys.argv[5], "a", buffering=1)
body = json.dumps({"model": "tiny", "messages": [{"role": "user", "content": "hi"}]})
lock, start, n = threading.Lock(), time.monotonic(), [0]
def client():
    c = None
    while not os.path.exists(stop):
        with lock:
            i = n[0]; n[0] += 1
        time.sleep(max(0.0, start + i * 0.05 - time.monotonic()))
        t0, status = time.time(), 0
        try:
            if c is None:
                c = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=60)
            c.request("POST", "/v1/chat/completions", body,
                      {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
            r = c.getresponse(); data = r.read(); status = r.status
            if status != 200: status = "%d:%s" % (status, data[:120].decode(errors="replace").replace(" ", "_"))
        except Exception as e:
            status, c = "exception:" + type(e).__name__, None
        with lock:
            out.write("%.3f %.1f %s\n" % (t0, (time.time() - t0) * 1000, status))
ts = [threading.Thread(target=client) for _ in range(2)]
for t in ts: t.start()
for t in ts: t.join()
PY
python3 "$T/load.py" "$GW" "$CA" "$TOKEN" "$T/stop" "$T/load.txt" 2>"$T/load.log" &
LOAD=$!
PIDS+=($LOAD)
done_at_least() { [ "$(wc -l <"$T/load.txt")" -ge "$1" ]; }
wait_until 60 done_at_least 60
now() { date +%s.%N; }

T_STOP=$(now)
kill -STOP "$WPID"
N_STOP=$(engine_requests)
wait_until 30 not_listed "$A"
T_OUT=$(now)
N_OUT=$(engine_requests)
pass "$W frozen: attempt $A left the gateway's replicas when its lease ran out"
wait_until 60 ready_on "$FREE"
sent=$(wc -l <"$T/load.txt")
wait_until 60 done_at_least $((sent + 40))
listed "$A" && fail "the frozen replica came back while its worker is frozen"
pass "its replica restarted on the free worker ($FREE); 40 more requests meanwhile"

T_CONT=$(now)
kill -CONT "$WPID"
wait_until 30 dead "$EPID"
sent=$(wc -l <"$T/load.txt")
wait_until 60 done_at_least $((sent + 40))
touch "$T/stop"
wait "$LOAD"
N_END=$(engine_requests)
ready_is 2 || fail "after SIGCONT: $(replicas)"
[ "$(replicas | jq length)" = 2 ] || fail "after SIGCONT, more than the 2 replicas: $(replicas)"
listed "$A" && fail "the stale attempt $A is a replica again: $(replicas)"
running=$(sql "SELECT COUNT(*) FROM attempts WHERE job_id=$JOB AND outcome='running'")
[ "$running" = 2 ] || fail "$running running attempts of the service, want 2"
pass "after SIGCONT: the stale attempt's engine was killed (fenced); 2 replicas, not the stale one"

echo "engine of attempt $A: $N_STOP requests at the stop, $N_OUT at the lease's end, $N_END at the end"
[ "$N_OUT" = "$N_STOP" ] || fail "the frozen worker's engine got requests while it was frozen"
[ "$N_END" -le $((N_STOP + MAXC)) ] ||
  fail "the stale replica's engine got $((N_END - N_STOP)) requests after the stop (> $MAXC)"
pass "the frozen replica's engine got $((N_END - N_STOP)) requests after the stop (<= $MAXC)"

total=$(wc -l <"$T/load.txt")
failed=$(awk '$3 != 200' "$T/load.txt" | wc -l)
[ "$failed" = 0 ] || fail "$failed of $total requests failed: $(awk '$3 != 200' "$T/load.txt" | head -3)"
p50() {  # p50 FROM TO: of the requests that started in [FROM, TO)
  awk -v a="$1" -v b="$2" '$1 >= a && $1 < b {print $2}' "$T/load.txt" | sort -n |
    awk '{v[NR] = $1} END {if (NR) printf "%s ms (%d requests)", v[int((NR + 1) / 2)], NR}'
}
echo "p50 before the stop: $(p50 0 "$T_STOP"); frozen, before the lease ran out:" \
  "$(p50 "$T_STOP" "$T_OUT"); after it ran out: $(p50 "$T_OUT" "$T_CONT"); after SIGCONT:" \
  "$(p50 "$T_CONT" 9e9)"
slowest=$(awk '{print $2}' "$T/load.txt" | sort -n | tail -1)
echo "slowest request: $slowest ms"
pass "all $total requests answered 200 across the stop, the lease's end and SIGCONT"

code=$(curl -sS --cacert "$CA" -o "$T/answer" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
  "$GW/v1/chat/completions" -d '{"model":"tiny","messages":[{"role":"user","content":"hi"}]}')
[ "$code" = 200 ] || fail "a normal request after SIGCONT: HTTP $code: $(cat "$T/answer")"
[ "$(job_field "$JOB" failed)" = 0 ] || fail "a replica's task failed"
pass "a normal request after SIGCONT answered"
