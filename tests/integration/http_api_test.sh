#!/usr/bin/env bash
# The coordinator's HTTP server (--http): the token guards every path (401, no data), the login
# cookie flow, the JSON API equals the CLI's --json, /metrics passes promtool and its counters
# move when a job runs, server-sent events announce a submitted job, shutdown with an open event
# stream exits, a busy default port only warns and a busy explicit port is an error.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
command -v promtool >/dev/null || { echo "SKIP: no promtool (Debian package prometheus)"; exit 77; }

start_coordinator --http 127.0.0.1:0
wait_until 10 grep -q "dashboard at http://" "$T/coordinator.log"
HPORT=$(sed -n 's|.*dashboard at http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$T/coordinator.log" | tail -1)
[ -n "$HPORT" ] || fail "no dashboard port in the log"
URL=http://127.0.0.1:$HPORT
grep "dashboard at" "$T/coordinator.log" | grep -q "$TOKEN" && fail "the log line carries the token"
AUTH=(-H "Authorization: Bearer $TOKEN")
code() { curl -s -o "$T/body" -w '%{http_code}' "$@"; }  # code CURL-ARGS: status, body in $T/body

start_worker w1 --slots 2
wait_until 20 is_connected w1

# --- no token, a wrong one, a wrong cookie: 401 with a JSON error and nothing else
WRONG=$(printf '%s' "$TOKEN" | tr '0-9a-f' '1-9a-f0')
for path in /api/v1/workers /api/v1/jobs /api/v1/jobs/1 /metrics /api/v1/events / /assets/app.js; do
  for args in "" "-H Authorization:Bearer\ $WRONG" "-b idlepool_token=$WRONG"; do
    # shellcheck disable=SC2086
    c=$(eval code --max-time 5 $args "$URL$path")
    [ "$c" = 401 ] || fail "$path with '${args:0:30}' answered $c, want 401"
    if [ "$path" = / ]; then  # a browser gets the login form
      grep -q '<form method="get" action="/login">' "$T/body" || fail "/: 401 without the login form"
    else
      jq -e '.error | length > 0' "$T/body" >/dev/null || fail "$path: 401 without a JSON error"
    fi
    ! grep -q '"workers"\|"jobs"\|w1\|idlepool_' "$T/body" || fail "$path: 401 body has data: $(cat "$T/body")"
  done
done
pass "no token, a wrong token or cookie: 401, a JSON error, no data"

# --- login: a wrong token sets no cookie; the right one sets it and redirects to /
c=$(code -c "$T/bad.jar" "$URL/login?token=$WRONG")
[ "$c" = 401 ] || fail "login with a wrong token answered $c"
! grep -q idlepool_token "$T/bad.jar" || fail "a wrong login set a cookie"
hdr=$(curl -s -D - -o /dev/null -c "$T/jar" "$URL/login?token=$TOKEN")
echo "$hdr" | grep -qi '^HTTP/1.1 303' || fail "login did not redirect: $hdr"
echo "$hdr" | grep -qi '^location: /\s*$' || fail "login did not redirect to /: $hdr"
echo "$hdr" | grep -i '^set-cookie:' | grep -qi 'HttpOnly' || fail "cookie not HttpOnly: $hdr"
echo "$hdr" | grep -i '^set-cookie:' | grep -qi 'SameSite=Strict' || fail "cookie not SameSite=Strict"
[ "$(code -b "$T/jar" "$URL/api/v1/workers")" = 200 ] || fail "the login cookie is not accepted"
[ "$(code -b "$T/jar" "$URL/")" = 200 ] || fail "/ with the cookie: not 200"
grep -q '<html' "$T/body" || fail "/ is not the dashboard's index.html"
ct=$(curl -s -o /dev/null -w '%{content_type}' -b "$T/jar" "$URL/assets/app.js")
[[ "$ct" == text/javascript* ]] || fail "app.js served as '$ct'"
[ "$(code -b "$T/jar" "$URL/assets/nope.js")" = 404 ] || fail "a missing asset is not 404"
[ "$(code "$URL/login")" = 200 ] && grep -q '<form' "$T/body" || fail "/login without a token: no form"
pass "login cookie flow; assets served with their types"

# --- the JSON API
[ "$(code "${AUTH[@]}" "$URL/api/v1/workers")" = 200 ] || fail "workers: $(cat "$T/body")"
jq -e '.workers[] | select(.worker == "w1" and .state == "connected" and .slots == 2)' "$T/body" \
  >/dev/null || fail "/api/v1/workers does not list w1: $(cat "$T/body")"
[ "$(code "${AUTH[@]}" "$URL/api/v1/jobs/abc")" = 400 ] || fail "a bad job id is not 400"
grep -q "abc" "$T/body" || fail "the 400 does not name the bad id"
[ "$(code "${AUTH[@]}" "$URL/api/v1/jobs/987654")" = 404 ] || fail "an unknown job is not 404"
grep -q "987654" "$T/body" || fail "the 404 does not name the job"

# --- events: a submitted job moves the state version
curl -sN "${AUTH[@]}" --max-time 60 "$URL/api/v1/events" >"$T/sse1.txt" 2>/dev/null &
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
wait_until 10 curl -s -o /dev/null --max-time 2 http://127.0.0.1:7879/
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
  curl -sN "${AUTH[@]}" --max-time 60 "$URL/api/v1/events" >"$T/many$i.txt" 2>/dev/null &
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
