#!/usr/bin/env bash
# The coordinator's HTTPS server (--http): TLS only, credentials guard every path (401, no data),
# Host and Origin are checked, the login form gives a session cookie that is not the token and
# cannot change state without its CSRF token, the JSON API equals the CLI's --json, /metrics
# passes promtool and its counters move when a job runs, server-sent events announce a submitted
# job, hostile clients (a flood of header lines, hundreds of idle connections) neither grow the
# coordinator nor stop it answering, shutdown with an open event stream exits, a busy default
# port only warns and a busy explicit port is an error.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
command -v promtool >/dev/null || { echo "SKIP: no promtool (Debian package prometheus)"; exit 77; }
command -v openssl >/dev/null || { echo "SKIP: no openssl (Debian package openssl)"; exit 77; }

start_coordinator --http 127.0.0.1:0
wait_until 10 grep -q "dashboard at https://" "$T/coordinator.log"
HPORT=$(sed -n 's|.*dashboard at https://127.0.0.1:\([0-9]*\)/.*|\1|p' "$T/coordinator.log" | tail -1)
[ -n "$HPORT" ] || fail "no dashboard port in the log"
URL=https://127.0.0.1:$HPORT
grep "dashboard" "$T/coordinator.log" | grep -q "$TOKEN" && fail "a dashboard line carries the token"
# Every curl here trusts the coordinator's CA (made at its start) and nothing else.
CA=$T/coord/ca.pem
[ -s "$CA" ] || fail "no $CA"
curl() { command curl --cacert "$CA" "$@"; }
AUTH=(-H "Authorization: Bearer $TOKEN")
code() { curl -s -o "$T/body" -w '%{http_code}' "$@"; }  # code CURL-ARGS: status, body in $T/body

start_worker w1 --slots 2
wait_until 20 is_connected w1

# --- no token, a wrong one, a wrong cookie: 401 with a JSON error and nothing else
WRONG=${TOKEN%.*}.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
for path in /api/v1/workers /api/v1/jobs /api/v1/jobs/1 /metrics /api/v1/events / /assets/app.js; do
  for args in "" "-H Authorization:Bearer\ $WRONG" "-b idlepool_session=$WRONG" \
              "-b idlepool_session=$TOKEN" "-b idlepool_token=$TOKEN"; do
    # shellcheck disable=SC2086
    c=$(eval code --max-time 5 $args "$URL$path")
    [ "$c" = 401 ] || fail "$path with '${args:0:30}' answered $c, want 401"
    if [ "$path" = / ]; then  # a browser gets the login form
      grep -q '<form method="post" action="/login">' "$T/body" || fail "/: 401 without the login form"
    else
      jq -e '.error | length > 0' "$T/body" >/dev/null || fail "$path: 401 without a JSON error"
    fi
    ! grep -q '"workers"\|"jobs"\|w1\|idlepool_' "$T/body" || fail "$path: 401 body has data: $(cat "$T/body")"
  done
done
pass "no token, a wrong token, the token or a wrong session as a cookie: 401, a JSON error, no data"

# --- TLS only; Host and Origin must name this server
c=$(command curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$HPORT/") || true
[ "$c" = 000 ] || fail "plain HTTP to the dashboard port answered $c"
! command curl -s -o /dev/null --max-time 5 "$URL/" || fail "a client that does not trust the CA connected"
! curl -s -o /dev/null --max-time 5 --tls-max 1.2 "$URL/" || fail "a TLS 1.2 client connected"
[ "$(code "${AUTH[@]}" -H "Host: evil.example:$HPORT" "$URL/api/v1/workers")" = 421 ] \
  || fail "a foreign Host was answered $(cat "$T/body")"
[ "$(code "${AUTH[@]}" -H "Origin: https://evil.example" "$URL/api/v1/workers")" = 403 ] \
  || fail "a foreign Origin was answered"
[ "$(code "${AUTH[@]}" -H "Host: localhost:$HPORT" -H "Origin: https://localhost:$HPORT" \
        "$URL/api/v1/workers")" = 200 ] || fail "localhost refused: $(cat "$T/body")"
pass "TLS 1.3 only; a foreign Host gets 421, a foreign Origin 403"

# --- login: the token in a form body, never in an address; a session cookie that is not it
ORIGIN=(-H "Origin: $URL")
c=$(code -c "$T/bad.jar" "$URL/login?token=$TOKEN")
[ "$c" = 400 ] || fail "GET /login?token= answered $c"
c=$(code -c "$T/bad.jar" --data-urlencode "token=$TOKEN" "$URL/login")
[ "$c" = 403 ] || fail "POST /login without an Origin answered $c"
c=$(code -c "$T/bad.jar" "${ORIGIN[@]}" --data-urlencode "token=$WRONG" "$URL/login")
[ "$c" = 401 ] || fail "login with a wrong token answered $c"
! grep -q idlepool_ "$T/bad.jar" || fail "a refused login set a cookie"
hdr=$(curl -s -D - -o /dev/null -c "$T/jar" "${ORIGIN[@]}" --data-urlencode "token=$TOKEN" "$URL/login")
echo "$hdr" | grep -qi '^HTTP/1.1 303' || fail "login did not redirect: $hdr"
echo "$hdr" | grep -qi '^location: /\s*$' || fail "login did not redirect to /: $hdr"
cookie=$(echo "$hdr" | tr -d '\r' | grep -i '^set-cookie:')
for flag in HttpOnly Secure SameSite=Strict Path=/; do
  echo "$cookie" | grep -qi "; $flag" || fail "cookie without $flag: $cookie"
done
echo "$cookie" | grep -q "$TOKEN" && fail "the cookie carries the token"
grep -q "$TOKEN" "$T/jar" && fail "the cookie jar holds the token"
[ "$(code -b "$T/jar" "$URL/api/v1/workers")" = 200 ] || fail "the session cookie is not accepted"
[ "$(code -b "$T/jar" "$URL/")" = 200 ] || fail "/ with the cookie: not 200"
grep -q '<html' "$T/body" || fail "/ is not the dashboard's index.html"
ct=$(curl -s -o /dev/null -w '%{content_type}' -b "$T/jar" "$URL/assets/app.js")
[[ "$ct" == text/javascript* ]] || fail "app.js served as '$ct'"
[ "$(code -b "$T/jar" "$URL/assets/nope.js")" = 404 ] || fail "a missing asset is not 404"
[ "$(code "$URL/login")" = 200 ] && grep -q '<form' "$T/body" || fail "/login without a token: no form"
# A state change with the cookie alone (even with the right Origin) is refused; with the
# session's CSRF token it is done.
[ "$(code -b "$T/jar" "${ORIGIN[@]}" -X POST "$URL/logout")" = 403 ] || fail "cookie-only logout"
CSRF=$(curl -s -b "$T/jar" "$URL/api/v1/session" | jq -r .csrf)
[ "${#CSRF}" = 43 ] || fail "no CSRF token in /api/v1/session"
[ "$(code -b "$T/jar" -H "X-Idlepool-CSRF: $CSRF" -X POST "$URL/logout")" = 200 ] || fail "logout"
[ "$(code -b "$T/jar" "$URL/api/v1/workers")" = 401 ] || fail "the cookie still works after logout"
pass "login form flow: session cookie, CSRF for state changes, logout; assets served with their types"

# --- the JSON API
[ "$(code "${AUTH[@]}" "$URL/api/v1/workers")" = 200 ] || fail "workers: $(cat "$T/body")"
jq -e '.workers[] | select(.worker == "w1" and .state == "connected" and .slots == 2)' "$T/body" \
  >/dev/null || fail "/api/v1/workers does not list w1: $(cat "$T/body")"
[ "$(code "${AUTH[@]}" "$URL/api/v1/jobs/abc")" = 400 ] || fail "a bad job id is not 400"
grep -q "abc" "$T/body" || fail "the 400 does not name the bad id"
[ "$(code "${AUTH[@]}" "$URL/api/v1/jobs/987654")" = 404 ] || fail "an unknown job is not 404"
grep -q "987654" "$T/body" || fail "the 404 does not name the job"

# --- events: a submitted job moves the state version
command curl --cacert "$CA" -sN "${AUTH[@]}" --max-time 60 "$URL/api/v1/events" >"$T/sse1.txt" 2>/dev/null &
SSE1=$!
PIDS+=($SSE1)
wait_until 10 grep -q "event: hello" "$T/sse1.txt"
head -c $((256 * 1024)) /dev/urandom >"$T/in.bin"
cat >"$T/job.toml" <<TOML
name = "http-api"
command = ["sh", "-c", "cat in.bin > out.bin && echo {index} > out.txt"]
count = 4
inputs = ["$T/in.bin"]
outputs = ["out.bin", "out.txt"]
TOML
JOB=$("$IDLEPOOL" submit "$T/job.toml")
wait_until 20 grep -q "event: change" "$T/sse1.txt"
grep -A1 "event: change" "$T/sse1.txt" | grep -q '^data: {"version":[0-9]*}' || fail "bad event: $(cat "$T/sse1.txt")"
pass "server-sent events: a change event after the submission"
wait_until 60 job_done "$JOB"
[ "$(job_field "$JOB" state)" = succeeded ] || fail "job $JOB: $("$IDLEPOOL" status "$JOB")"

# GET /api/v1/jobs/N is `idlepool status N --json` (polled: the prediction may still arrive).
same_job() {
  "$IDLEPOOL" status "$JOB" --json | jq -S . >"$T/cli.json"
  curl -sf "${AUTH[@]}" "$URL/api/v1/jobs/$JOB" | jq -S . >"$T/http.json"
  cmp -s "$T/cli.json" "$T/http.json"
}
wait_until 10 same_job || { diff "$T/cli.json" "$T/http.json" >&2; fail "job JSON differs"; }
jq -e --argjson j "$JOB" '.job == $j and .state == "succeeded" and .succeeded == 4' "$T/http.json" \
  >/dev/null || fail "job JSON: $(cat "$T/http.json")"
"$IDLEPOOL" status --json | jq -S . >"$T/cli-all.json"
curl -sf "${AUTH[@]}" "$URL/api/v1/jobs" | jq -S . >"$T/http-all.json"
jq -e --argjson j "$JOB" '.jobs | map(.job) | index($j) != null' "$T/http-all.json" >/dev/null \
  || fail "/api/v1/jobs lacks job $JOB"
pass "/api/v1/jobs/$JOB equals status --json"

# --- the timeline, as JSON numbers and as SVG
c=$(code "${AUTH[@]}" "$URL/api/v1/jobs/$JOB/timeline")
[ "$c" = 200 ] || fail "timeline answered $c: $(cat "$T/body")"
jq -e '(.attempts | length) >= 4 and (.attempts[0].started_ms | type) == "number"
       and (.attempts[0].attempt | type) == "number" and .job.state == "succeeded"' \
  "$T/body" >/dev/null || fail "timeline JSON: $(head -c 2000 "$T/body")"
[ "$(code "${AUTH[@]}" "$URL/api/v1/jobs/$JOB/timeline.svg")" = 200 ] || fail "timeline.svg"
grep -q '<svg' "$T/body" || fail "timeline.svg is not SVG"
pass "timeline JSON and SVG"
# A browser offers brotli, which Debian's cpp-httplib runs at its slowest setting: answers come
# gzip-compressed (or plain), never br. The bearer scheme is case-insensitive.
enc=$(curl -s -o "$T/gz" -D - -H "authorization: bearer $TOKEN" -H 'Accept-Encoding: gzip, deflate, br' \
  "$URL/api/v1/jobs/$JOB/timeline" | tr -d '\r' | awk -F': ' 'tolower($1) == "content-encoding" {print $2}')
[ "$enc" = gzip ] || fail "Accept-Encoding 'gzip, deflate, br' answered with encoding '$enc'"
gzip -dc <"$T/gz" | jq -e '.attempts | length >= 4' >/dev/null || fail "gzip answer does not decode"
enc=$(curl -s -o /dev/null -D - "${AUTH[@]}" -H 'Accept-Encoding: br' "$URL/api/v1/jobs/$JOB/timeline" |
  tr -d '\r' | awk -F': ' 'tolower($1) == "content-encoding" {print $2}')
[ -z "$enc" ] || fail "Accept-Encoding 'br' answered with encoding '$enc'"
pass "answers use gzip, never brotli; 'bearer' in lower case is accepted"
[ "$(code "${AUTH[@]}" "$URL/api/v1/jobs/0/timeline")" = 400 ] || fail "job 0 timeline is not 400"

# --- /metrics: promtool accepts it; the counters moved with the job
curl -sf "${AUTH[@]}" "$URL/metrics" >"$T/metrics.txt" || fail "/metrics failed"
promtool check metrics <"$T/metrics.txt" || fail "promtool rejects /metrics"
metric() { awk -v n="$1" '$1 == n {print $2}' "$T/metrics.txt"; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a + 0 >= b + 0)}'; }
ge "$(metric idlepool_attempts_started_total)" 4 || fail "attempts_started_total < 4"
ge "$(metric idlepool_attempts_succeeded_total)" 4 || fail "attempts_succeeded_total < 4"
ge "$(metric 'idlepool_tasks{state="succeeded"}')" 4 || fail "tasks{succeeded} < 4"
ge "$(metric 'idlepool_workers{state="idle"}')" 1 || fail "w1 not counted idle: $(grep workers "$T/metrics.txt")"
[ "$(metric idlepool_slots)" = 2 ] || fail "idlepool_slots is not 2"
ge "$(metric 'idlepool_bytes_total{direction="received"}')" $((256 * 1024)) || fail "bytes received"
ge "$(metric 'idlepool_bytes_total{direction="served"}')" $((256 * 1024)) || fail "bytes served"
ge "$(metric idlepool_store_commit_seconds_count)" 1 || fail "no store commits observed"
ge "$(metric idlepool_scheduling_seconds_count)" 4 || fail "no scheduling latency observed"
ge "$(metric idlepool_start_time_seconds)" "$(( $(date +%s) - 3600 ))" || fail "no start time"
pass "/metrics passes promtool; counters moved with the job"

# --- hostile clients: 10 MB of header lines, and 300 connections that never send a byte (more
# than the 128 the server keeps): the coordinator does not grow, and still answers.
# Its peak memory is measured: VmHWM, reset to the present VmRSS first (clear_refs).
mem_kb() { awk -v f="$1:" '$1 == f {print $2}' "/proc/$COORD_PID/status"; }
echo 5 >"/proc/$COORD_PID/clear_refs" || fail "cannot reset the coordinator's peak memory"
before=$(mem_kb VmRSS)
# (openssl s_client sends them as they are; curl -H @FILE spends a minute of CPU on 160,000.)
{
  printf 'GET /api/v1/workers HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nAuthorization: Bearer %s\r\n' \
    "$HPORT" "$TOKEN"
  awk 'BEGIN { for (i = 0; i < 160000; i++) printf "X-Pad-%d: %049d\r\n", i, 0 }'
  printf '\r\n'
} >"$T/flood.txt"
[ "$(stat -c %s "$T/flood.txt")" -gt 10000000 ] || fail "the flood is too small"
timeout 60 openssl s_client -quiet -verify_quiet -CAfile "$CA" -connect "127.0.0.1:$HPORT" \
  <"$T/flood.txt" >"$T/flood.out" 2>/dev/null || true
c=$(head -c 12 "$T/flood.out")
[ "$c" = "HTTP/1.1 431" ] || [ -z "$c" ] || fail "10 MB of header lines answered: $(head -3 "$T/flood.out")"
after=$(mem_kb VmHWM)
[ $((after - before)) -lt $((64 * 1024)) ] || fail "the coordinator grew from $before to $after KiB (peak)"
IDLE=()
for i in $(seq 1 300); do exec {fd}<>"/dev/tcp/127.0.0.1/$HPORT"; IDLE+=("$fd"); done
[ "$(code --max-time 30 "${AUTH[@]}" "$URL/api/v1/workers")" = 200 ] || fail "idle connections stopped the API"
for fd in "${IDLE[@]}"; do exec {fd}>&-; done
pass "10 MB of header lines refused (${c:-reset}) without growth ($before -> peak $after KiB); 300 idle connections do not stop the API"

# --- a busy explicit port is a startup error; a busy default port only warns
if "$IDLEPOOL" coordinator --listen 127.0.0.1:0 --data-dir "$T/c2" --http "127.0.0.1:$HPORT" \
     >"$T/c2.log" 2>&1; then
  fail "a coordinator started on a busy explicit --http port"
fi
grep -q "cannot listen on 127.0.0.1:$HPORT" "$T/c2.log" || fail "no clear error: $(cat "$T/c2.log")"
# Hold the default port (another test's coordinator may hold it already: busy either way).
"$IDLEPOOL" coordinator --listen 127.0.0.1:0 --data-dir "$T/c3" --http 127.0.0.1:7879 \
  >"$T/c3.log" 2>&1 &
PIDS+=($!)
port_held() { (exec 3<>/dev/tcp/127.0.0.1/7879) 2>/dev/null; }
wait_until 10 port_held
"$IDLEPOOL" coordinator --listen 127.0.0.1:0 --data-dir "$T/c4" >"$T/c4.log" 2>&1 &
C4=$!
PIDS+=($C4)
wait_until 20 grep -q "listening on" "$T/c4.log"
grep -q "running without the dashboard" "$T/c4.log" || fail "no warning: $(cat "$T/c4.log")"
! grep -q "dashboard at" "$T/c4.log" || fail "c4 claims a dashboard"
kill -0 "$C4" || fail "the coordinator with a busy default port exited"
pass "busy explicit --http port: error; busy default port: a warning"

# --- at most 32 event streams; with all of them open, other requests are still answered
# (the first stream is still open: 31 more)
kill -0 "$SSE1" || fail "the first event stream ended early"
STREAMS=()
for i in $(seq 1 31); do
  command curl --cacert "$CA" -sN "${AUTH[@]}" --max-time 60 "$URL/api/v1/events" >"$T/many$i.txt" 2>/dev/null &
  STREAMS+=($!)
  PIDS+=($!)
done
all_hello() { [ "$(grep -l "event: hello" "$T"/many*.txt | wc -l)" -eq 31 ]; }
wait_until 20 all_hello
[ "$(code --max-time 5 "${AUTH[@]}" "$URL/api/v1/events")" = 503 ] || fail "stream 33 was not refused"
[ "$(code --max-time 5 "${AUTH[@]}" "$URL/api/v1/workers")" = 200 ] || fail "workers starved by streams"
[ "$(code --max-time 5 "${AUTH[@]}" "$URL/metrics")" = 200 ] || fail "/metrics starved by streams"
for p in "${STREAMS[@]}"; do kill "$p" 2>/dev/null || true; done
pass "32 event streams open: the 33rd gets 503, other requests are answered"

# --- shutdown with an open event stream (the first one, open all along) exits promptly
# (a closed stream's slot is freed only at its next write, so the killed ones cannot be reused)
kill -0 "$SSE1" || fail "the first event stream ended early"
kill -TERM "$COORD_PID"
wait_until 15 dead "$COORD_PID"
wait "$COORD_PID" || fail "the coordinator exited $? on SIGTERM with an event stream open"
wait_until 15 dead "$SSE1"
wait "$SSE1" || fail "the event stream did not end cleanly (curl exit $?)"
pass "SIGTERM with an open event stream: the coordinator exits and the stream ends"
