#!/usr/bin/env bash
# Idle TCP connections cannot exhaust the descriptors of the coordinator or of a worker
# (issue 21). Both run under a descriptor limit of 256 (prlimit), so that a flood of a few
# hundred connections (bench/attacks/fd_flood.sh) is past it:
#   1. 400 connections from one address (127.0.0.2) to the coordinator's gRPC port: it keeps
#      only that address's cap of them, closes those too once their handshake is late, and
#      during the flood a client (from 127.0.0.1) is answered and a job completes;
#   2. 800 from 8 addresses, and 200 to its HTTPS dashboard: the coordinator keeps a quarter of
#      its descriptors free; once the flood ends, a new worker joins and a job completes;
#   3. 800 from 16 addresses to a worker's peer port (bound to 0.0.0.0): a job of 10 tasks that
#      use pipes runs on that worker during the flood, none failed and no machine fault;
#   4. a worker started under a soft limit of 256 and a hard one of 4096 raises its own to 4096
#      and gives its tasks 256.
# Descriptors (/proc/PID/fd) and resident memory (VmRSS) are measured; the old build's gRPC
# listener stopped for good at the first flood ("Failed accept4: Too many open files") and its
# worker failed every task.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../../bench/attacks/fd_flood.sh"
command -v python3 >/dev/null || { echo "SKIP: no python3 for the flood"; exit 77; }
command -v prlimit >/dev/null || { echo "SKIP: no prlimit"; exit 77; }
python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.2", 0))' 2>/dev/null ||
  { echo "SKIP: cannot bind 127.0.0.2 (loopback is not 127.0.0.0/8)"; exit 77; }

REAL=$IDLEPOOL
limited() {  # limited SOFT:HARD -> a wrapper that runs idlepool under that descriptor limit
  printf '#!/bin/sh\nexec prlimit --nofile=%s "%s" "$@"\n' "$1" "$REAL" >"$T/idlepool-$1"
  chmod +x "$T/idlepool-$1"
  echo "$T/idlepool-$1"
}
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
gone() { ! is_connected "$1"; }
fds_at_most() { [ "$(fd_count "$1")" -le "$2" ]; }
opened() { jq -r ".$2" "$T/$1.flood.json"; }

cat >"$T/pipes.toml" <<'TOML'
name = "pipes"
command = ["sh", "-c", "echo {index} | cat | cat > out-{index}.txt"]
count = 10
outputs = ["out-*.txt"]
[retry]
max_attempts = 1
TOML
run_job() {  # run_job -> the job id, once it succeeded with every output once
  local job
  job=$("$IDLEPOOL" submit "$T/pipes.toml")
  wait_until 90 job_done "$job"
  [ "$(job_field "$job" state)" = succeeded ] || fail "job $job: $("$IDLEPOOL" status "$job")"
  [ "$(job_field "$job" failures)" = 0 ] || fail "job $job counted failures"
  assert_outputs_once "$job" 10
  echo "$job"
}

IDLEPOOL=$(limited 256:256) start_coordinator --http 127.0.0.1:0
HTTP=$(sed -n 's|.*dashboard at https://\([^/]*\)/.*|\1|p' "$T/coordinator.log" | head -1)
[ -n "$HTTP" ] || fail "no dashboard address in the coordinator's log"
IDLEPOOL=$(limited 256:256) start_worker w1 --slots 2
wait_until 20 is_connected w1
run_job >/dev/null
C_FDS=$(fd_count "$COORD_PID") C_RSS=$(rss_kb "$COORD_PID")
W_FDS=$(fd_count "$WPID_w1") W_RSS=$(rss_kb "$WPID_w1")
echo "idle: coordinator $C_FDS fds, $C_RSS kB; worker $W_FDS fds, $W_RSS kB"

# 1. One address: held to its cap (a quarter of 256 - 64 = 48), the others served meanwhile;
#    the connections it keeps are closed by the coordinator when their TLS handshake has not
#    come within 10 s, the flood still holding them.
fd_sampler_start one "$COORD_PID"
fd_flood_start "$ADDR" 127.0.0.2 400 one 0
"$IDLEPOOL" workers --json >/dev/null || fail "the coordinator refused a client during the flood"
JOB=$(run_job)
wait_until 30 fds_at_most "$COORD_PID" $((C_FDS + 8))
fd_flood_stop one
peak=$(fd_sampler_stop one)
echo "flood from one address: $(cat "$T/one.flood.json"); coordinator at most $peak fds"
[ "$peak" -le $((C_FDS + 48 + 16)) ] || fail "coordinator at $peak fds (idle $C_FDS)"
[ "$(opened one closed_by_server)" = 400 ] || fail "the coordinator left $(opened one open_at_end) idle connections open"
pass "400 connections from one address: at most $((peak - C_FDS)) more fds, all closed by the coordinator; job $JOB completed meanwhile"

# 2. Eight addresses, 800 connections: past the limit. A quarter of it stays free, the HTTPS
#    dashboard's connections included (200 more to it meanwhile).
fd_sampler_start many "$COORD_PID"
fd_flood_start "$ADDR" "$(fd_flood_sources 127.0.0.1 8)" 100 many 0
fd_flood_start "$HTTP" 127.0.0.10 200 web 0
"$IDLEPOOL" workers --json >/dev/null 2>&1 && echo "(a client got in during the flood)"
fd_flood_stop many
fd_flood_stop web
peak=$(fd_sampler_stop many)
echo "flood from 8 addresses: $(cat "$T/many.flood.json"); dashboard: $(cat "$T/web.flood.json"); coordinator at most $peak fds"
[ "$peak" -le 200 ] || fail "coordinator at $peak fds during the flood: its reserve is gone"
[ "$(opened many open_at_end)" -le 192 ] || fail "the coordinator kept $(opened many open_at_end) connections"
wait_until 30 fds_at_most "$COORD_PID" $((C_FDS + 16))
grep -q "Failed accept4" "$T/coordinator.log" && fail "gRPC's own listener ran out of descriptors"
IDLEPOOL=$(limited 256:256) start_worker w2 --slots 1
wait_until 30 is_connected w2
JOB=$(run_job)
pass "800 connections from 8 addresses: coordinator at most $peak fds; w2 joined after, job $JOB completed"

# 3. The worker's peer port, with the worker running every task.
kill "$WPID_w2"
wait "$WPID_w2" 2>/dev/null || true
wait_until 20 gone w2
PEER=$("$IDLEPOOL" workers --json | jq -r '.workers[] | select(.worker=="w1") | .peer_address')
[ -n "$PEER" ] && [ "$PEER" != null ] || fail "w1 lists no peer address"
fd_sampler_start peer "$WPID_w1"
fd_flood_start "127.0.0.1:${PEER##*:}" "$(fd_flood_sources 127.0.0.1 16)" 50 peer 0
JOB=$(run_job)
[ "$(job_field "$JOB" machine_faults)" = 0 ] || fail "job $JOB: machine faults during the peer flood"
fd_flood_stop peer
peak=$(fd_sampler_stop peer)
echo "flood of the peer port from 16 addresses: $(cat "$T/peer.flood.json"); worker at most $peak fds"
# The flood holds no descriptor from 192 up (256 less a quarter); the tasks use those.
[ "$(opened peer open_at_end)" -le 192 ] || fail "the peer port kept $(opened peer open_at_end) connections"
[ "$peak" -le 240 ] || fail "worker at $peak fds during the flood: close to its limit of 256"
grep -q "Failed accept4" "$T/w1.log" && fail "the peer port's gRPC listener ran out of descriptors"
pass "800 connections from 16 addresses to w1's peer port: worker at most $peak fds, job $JOB ran 10 tasks, no failure"

# After the attacks: descriptors and memory back near idle.
wait_until 30 fds_at_most "$COORD_PID" $((C_FDS + 16))
wait_until 30 fds_at_most "$WPID_w1" $((W_FDS + 16))
c_rss=$(rss_kb "$COORD_PID") w_rss=$(rss_kb "$WPID_w1")
echo "after: coordinator $(fd_count "$COORD_PID") fds, $c_rss kB; worker $(fd_count "$WPID_w1") fds, $w_rss kB"
[ "$c_rss" -le $((C_RSS + 32768)) ] || fail "coordinator RSS $c_rss kB after the attacks (idle $C_RSS)"
[ "$w_rss" -le $((W_RSS + 32768)) ] || fail "worker RSS $w_rss kB after the attacks (idle $W_RSS)"
pass "descriptors and memory back near idle"

# 4. The limit is raised at start; tasks get the one the worker started with.
kill "$WPID_w1"
wait "$WPID_w1" 2>/dev/null || true
wait_until 20 gone w1
IDLEPOOL=$(limited 256:4096) start_worker w3 --slots 1
wait_until 30 is_connected w3
soft=$(awk '/^Max open files/ {print $4}' "/proc/$WPID_w3/limits")
[ "$soft" = 4096 ] || fail "w3 runs with a soft limit of $soft, want 4096"
cat >"$T/limit.toml" <<'TOML'
name = "limit"
command = ["sh", "-c", "ulimit -n > out.txt"]
count = 1
outputs = ["out.txt"]
TOML
JOB=$("$IDLEPOOL" submit "$T/limit.toml")
wait_until 60 job_done "$JOB"
"$IDLEPOOL" fetch "$JOB" --out "$T/limit-out" >/dev/null
[ "$(cat "$(find "$T/limit-out" -name out.txt)")" = 256 ] || fail "the task's limit: $(cat "$(find "$T/limit-out" -name out.txt)")"
pass "worker raised its limit to $soft; its task got 256"
