#!/usr/bin/env bash
# Requests fired around every replica stop or restart (issue 17's tests): none hangs past its
# deadline. idlepool-gateway-harness in front of idlepool-fake-engine replicas, all real processes
# on 127.0.0.1. For CHURN_SECONDS, at random moments (seeded: the seed is printed at the start,
# SEED=N reruns the same schedule), a replica's engine is
#   - killed (SIGKILL), left in the gateway for a moment (its port refuses), then removed, and a
#     new engine added and made ready in its place (the coordinator's restart);
#   - stopped (SIGSTOP) for 0.3 to 2.8 s, or (at most 2) until every client is done, left
#     alone meanwhile, then continued (SIGCONT): a frozen replica (a request stuck on one for
#     good would run into its bound);
#   - drained, removed a moment later and killed, and a new one added (a stop with notice);
# while 6 clients fire requests, streamed and not, one after the other. Every request has a
# hard bound, curl --max-time: the gateway's own deadline for it (below) plus a margin. Each one
# must end before its bound with a 200 (a whole answer; a stream ending with [DONE] and the
# chunked end), an explicit error (a 5xx with a JSON error body) or, for a stream cut after its
# first byte, an error event and the chunked end: never a client timeout (curl exit 28), a
# truncated body, or a stream without an end. Then the gateway holds nothing (0 in flight, an
# empty queue) and a normal request succeeds. The outcomes are counted and printed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gateway_lib.sh"
SEED=${SEED:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}
RANDOM=$SEED
echo "seed $SEED (rerun this schedule with SEED=$SEED)"
CHURN_SECONDS=${CHURN_SECONDS:-15}

# The gateway's deadlines (harness flags) and the bound they give one request: it waits in the
# queue at most Q in all (from its arrival, retries included); each of its 1 + R attempts (R: the
# router's retry budget, 2) takes at most C + 3F: a kept-alive connection found closed before the
# answer began is replaced once, uncharged, so F (the request written, the head awaited) then a
# fresh connect C, the head within F and the body's first piece within another F; after that,
# each piece of the answer within G (TOKENS tokens, a role chunk, the finish chunk, usage, [DONE]).
Q=1000 C=300 F=600 G=300 R=2 TOKENS=6
BOUND_MS=$((Q + (1 + R) * (C + 3 * F) + (TOKENS + 4) * G))
MAX_TIME=$(((BOUND_MS + 2000) / 1000))
echo "the gateway's bound for a request: ${BOUND_MS} ms; curl --max-time $MAX_TIME"

ENGINE_ARGS=(--tokens "$TOKENS" --ttft-ms 30 --token-ms 30)
for i in 1 2 3 4 5; do start_engine r$i "${ENGINE_ARGS[@]}"; done
start_gateway g 2 r1 r2 r3 r4 r5 -- --queue-deadline-ms $Q --connect-ms $C --first-byte-ms $F \
  --gap-ms $G
IN=(1 2 3 4 5)  # the replicas the gateway has, by id (engine r<id>)
FROZEN=()       # those stopped until the clients are done (left alone meanwhile)
NEXT_ID=6

# client N: requests until $T/stop exists; one line per request in $T/client.N:
# "stream curl_rc http_code seconds outcome".
client() {
  RANDOM=$((SEED + $1))
  local i=0 f s body rc out code secs outcome
  while [ ! -e "$T/stop" ]; do
    i=$((i + 1)); f=$T/c$1.$i
    s=false; ((RANDOM % 2)) && s=true
    rc=0
    body="{\"model\":\"m1\",\"stream\":$s,\"messages\":[{\"role\":\"user\",\"content\":\"c$1.$i\"}]}"
    out=$(curl -s -N --raw --max-time "$MAX_TIME" -o "$f" -w '%{http_code} %{time_total}' \
      "${H[@]}" "$(gw /v1/chat/completions)" -d "$body") || rc=$?
    code=${out% *}; secs=${out#* }
    outcome=$(classify "$s" "$rc" "$code" "$f")
    echo "$s $rc $code $secs $outcome" >>"$T/client.$1"
    case $outcome in ok | error | cut) rm -f "$f" ;; esac  # the others are kept for the log
  done
}
# classify STREAM RC CODE FILE: ok | error (5xx with a JSON error) | cut (a stream's error event)
# | hang (curl ran out of time) | bad-... (anything else)
classify() {
  local s=$1 rc=$2 code=$3 f=$4
  [ "$rc" = 28 ] && { echo hang; return; }
  [ "$rc" = 0 ] || { echo "bad-curl-$rc"; return; }
  if [ "${code:0:1}" = 5 ]; then
    jq -e '.error.message' "$f" >/dev/null 2>&1 && echo error || echo bad-5xx-body
    return
  fi
  [ "$code" = 200 ] || { echo "bad-http-$code"; return; }
  if [ "$s" = false ]; then
    jq -e '.choices[0].message.content | startswith("replica=r")' "$f" >/dev/null 2>&1 && echo ok ||
      echo bad-body
    return
  fi
  # A stream: the raw chunked body must end with the last chunk, after [DONE] or an error event.
  [ "$(tail -c 5 "$f" | od -An -c | tr -d ' ')" = '0\r\n\r\n' ] || { echo bad-no-end; return; }
  if grep -q '^data: \[DONE\]' "$f"; then
    grep -q '^data: {"error":' "$f" && echo bad-done-and-error || echo ok
  elif grep -q '^data: {"error":' "$f"; then
    echo cut
  else
    echo bad-stream
  fi
}

drop() {  # drop ID: the gateway no longer has replica ID
  local keep=() frozen=() i
  for i in "${IN[@]}"; do [ "$i" = "$1" ] || keep+=("$i"); done
  for i in "${FROZEN[@]}"; do [ "$i" = "$1" ] || frozen+=("$i"); done
  IN=("${keep[@]}") FROZEN=("${frozen[@]}")
}
add_replica() {  # a new engine, added to the gateway and made ready
  local id=$NEXT_ID p
  NEXT_ID=$((NEXT_ID + 1))
  start_engine r$id "${ENGINE_ARGS[@]}"
  p=PORT_r$id
  ctl g "add llm $id 127.0.0.1 ${!p}"
  ctl g "ready $id"
  IN+=("$id")
}
pause() { sleep "0.$((RANDOM % 10))"; }  # 0 to 0.9 s: the schedule's random moments
pid_of() { local p=PID_r$1; echo "${!p}"; }

CLIENTS=()
for n in 1 2 3 4 5 6; do client $n & CLIENTS+=($!); done
kills=0 stops=0 long_stops=0 drains=0 step=0
end=$(($(date +%s) + CHURN_SECONDS))
while [ "$(date +%s)" -lt "$end" ]; do
  pause
  live=($(for i in "${IN[@]}"; do [[ " ${FROZEN[*]} " == *" $i "* ]] || echo "$i"; done))
  id=${live[$((RANDOM % ${#live[@]}))]}
  # The first three actions are one of each kind (in an order of the seed's); then any.
  kind=$((RANDOM % 10)); step=$((step + 1))
  [ "$step" -le 3 ] && kind=$((((step + SEED) % 3) * 4))
  case $kind in
    0 | 1 | 2 | 3)  # killed; removed a moment later; a new one in its place
      kill -9 "$(pid_of "$id")"; kills=$((kills + 1))
      pause
      ctl g "remove $id"; drop "$id"
      add_replica ;;
    4 | 5 | 6 | 7)  # frozen: for 0.3 to 2.8 s, or (the first, and at most 2) to the end
      pid=$(pid_of "$id")
      kill -STOP "$pid"; stops=$((stops + 1))
      if { [ "$long_stops" = 0 ] || [ $((RANDOM % 4)) = 0 ]; } && [ "${#FROZEN[@]}" -lt 2 ]; then
        FROZEN+=("$id"); long_stops=$((long_stops + 1))
      else
        frozen=$((RANDOM % 3)).$((RANDOM % 10))
        (sleep "$frozen"; sleep 0.3; kill -CONT "$pid" 2>/dev/null) &
        PIDS+=($!)
      fi ;;
    *)  # drained, removed a moment later and stopped; a new one in its place
      ctl g "drain $id"; drains=$((drains + 1))
      pause
      ctl g "remove $id"; drop "$id"
      kill -9 "$(pid_of "$id")"
      add_replica ;;
  esac
done
touch "$T/stop"
for p in "${CLIENTS[@]}"; do wait "$p"; done
for i in $(seq 1 $((NEXT_ID - 1))); do kill -CONT "$(pid_of "$i")" 2>/dev/null || true; done
echo "churn: $kills kills, $stops stops ($long_stops to the end), $drains drains;" \
  "replicas now: ${IN[*]}"

cat "$T"/client.* >"$T/all"
total=$(wc -l <"$T/all")
echo "outcomes of $total requests (stream=true|false, outcome):"
awk '{print "  stream=" $1, $5}' "$T/all" | sort | uniq -c
slowest=$(awk '{print $4}' "$T/all" | sort -n | tail -1)
echo "slowest request: ${slowest} s (bound ${BOUND_MS} ms)"
hangs=$(awk '$5 == "hang"' "$T/all" | wc -l)
bad=$(awk '$5 ~ /^bad/' "$T/all" | wc -l)
ok=$(awk '$5 == "ok"' "$T/all" | wc -l)
[ "$hangs" = 0 ] ||
  fail "$hangs requests ran past their bound (${MAX_TIME} s): $(awk '$5 == "hang"' "$T/all" | head -3)"
[ "$bad" = 0 ] || fail "$bad requests ended neither answered nor with an explicit error:" \
  "$(awk '$5 ~ /^bad/' "$T/all" | head -3)"
[ "$kills" -gt 0 ] && [ "$long_stops" -gt 0 ] && [ "$drains" -gt 0 ] ||
  fail "not every kind of stop ran (kills $kills, stops to the end $long_stops, drains $drains)"
# Most replicas run at any moment: most requests are answered (not all failed explicitly).
[ $((ok * 2)) -gt "$total" ] || fail "only $ok of $total requests answered"
pass "$total requests around $kills kills, $stops stops and $drains drains: none past its bound," \
  "none truncated ($ok answered)"

# Nothing is left open in the gateway, and it still serves.
snap=0
idle() {
  snap=$((snap + 1))
  ctl g "json $T/snap.$snap.json"
  jq -e '.services[0] | .queue_length == 0 and ([.replicas[].in_flight] | add) == 0' \
    "$T/snap.$snap.json"
}
wait_until 10 idle
[ "$(chat '' | jq -r '.choices[0].message.content | startswith("replica=r")')" = true ] ||
  fail "a normal request after the churn"
pass "after the churn: 0 in flight, an empty queue, and a normal request answered"
