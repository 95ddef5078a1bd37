#!/usr/bin/env bash
# The serving gateway's own cost and its failover (issue 17, "Figures"), real processes on
# 127.0.0.1, in one run:
#   throughput: N `idlepool-fake-engine --fixed` replicas (a small fixed JSON at once, so the
#     proxy is what is measured); wrk (-t2 -cCONN, --latency, a POST /v1/chat/completions with a
#     bearer key and a small JSON body) against one engine directly, HAProxy (mode http,
#     leastconn, the same engines, http-reuse always, keep-alive, no log) and the gateway
#     (idlepool-gateway-harness, an openai service over the same engines, max_concurrent = CONN
#     so that its cap never queues); the targets' order rotates round by round. Prints each
#     round, then the medians of the rounds: requests/s, the gateway/HAProxy ratio (target
#     >= 0.9) and the p50/p99 that each proxy adds over direct (target: gateway p50 <= +0.5 ms).
#     Then the same at light load (--light-connections, default 1 connection): the latency a
#     proxy adds to one request, without the queueing of a saturated machine.
#   below saturation: the same -cCONN connections, each waiting a random think time (wrk's Lua
#     delay() hook, uniform, mean CONN / offered rate, whole ms at random so the mean is exact)
#     before each request, so that the offered rate is --paced-percent (default 50) % of HAProxy's
#     saturated requests/s measured just before; the same targets, rotation and rounds. Prints the
#     offered rate, each target's achieved rate (a closed loop: a little less, as each answer's
#     time adds to its connection's think time), and the p50/p99 each proxy adds over direct at a
#     steady load (the issue's "added p50 at most 0.5 ms" where saturation's queueing does not
#     hide it). Run 2026-12-02 (docs/limits.md): the gateway +0.23 / +0.30 ms, HAProxy +0.32 /
#     +0.36 ms at ~11k req/s of an offered ~13k.
#   failover: 4 normal engines (8 tokens, 5 ms apart, not streamed) behind the gateway under a
#     steady wrk load; one engine SIGKILLed mid-run; one engine SIGSTOPped mid-run (the harness
#     has no worker, so the stopped engine stands in for a stopped worker; the gateway sees it
#     only through its first-byte deadline, --stop-first-byte-ms, not through a lease); one
#     replica drained mid-run (the gateway's side of an owner's return). Failed requests are
#     wrk's non-2xx answers plus its socket errors; the p99 is of whole answers (not streamed:
#     the first byte comes with the last), over the whole run, next to a run without a fault.
#
#   pool-failover: the same faults through the real pool (bench/serve_pool.sh): a real
#     `idlepool coordinator` serving its HTTPS gateway (--lease-timeout-ms, default 1500), 4 real
#     workers with fake sensors, a service of 3 fake-engine replicas (8 tokens, 5 ms apart), and
#     bench/serve_load.py's open-loop load (--pool-rate requests/s not streamed plus as many
#     streamed, HTTPS verified against the pool CA: wrk neither checks a CA nor sees a stream's
#     first event) for --pool-seconds; a fresh pool per run, the fault a third into it: none;
#     SIGKILL of a replica's engine; SIGSTOP of a worker and its replica (when the gateway last
#     gave it a request, when it left the routing); its owner's return (the time from the
#     worker's drain signal, and from the sensor file's write, to the last request that reached
#     the draining replica's engine). Prints requests, failed requests, p50/p99/max time to
#     first byte (not streamed: the whole answer) or to the first event (streamed), over the run
#     and in the 3 s from the fault; per round, then the medians of --pool-rounds rounds (about
#     2.5 minutes at the defaults on 2 cores).
#
#   bench/serve.sh [--seconds 10] [--rounds 3] [--connections 64] [--replicas 2] [--build DIR]
#                  [--haproxy-threads 1] [--light-connections 1] [--failover-seconds 10]
#                  [--stop-first-byte-ms 1000] [--paced-percent 50] [--pool-seconds 8]
#                  [--pool-rate 40] [--pool-rounds 3] [--lease-timeout-ms 1500]
#                  [--only throughput|failover|pool-failover] [--selftest]
# --build DIR: where idlepool, idlepool-fake-engine and idlepool-gateway-harness are (default
#   build/).
# --haproxy-threads: 1 by default, as the gateway serves on one io thread (same thread count).
# --paced-percent: the offered rate of the below-saturation part, % of HAProxy's; 0 skips it.
# --selftest: 2 s per target, 1 round, no light-load part (the part below saturation runs), 3 s
#   failover runs, 1 round of 5 s pool runs; exits 1 when a target did not serve (no request, a
#   non-2xx answer or a socket error where none belongs; in the pool, a failed request other
#   than a stream broken by a SIGKILL or SIGSTOP).
# Needs wrk, haproxy, curl, jq and python3 (Debian packages); everything else it starts, and it
# kills what it started on exit (Ctrl-C included). Nothing is registered in CTest: run it by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=10 ROUNDS=3 CONN=64 REPLICAS=2 BUILD=build HA_THREADS=1 LIGHT=1 FO_SECS=10 STOP_FB_MS=1000
ONLY="" SELFTEST=0 PACED=50 POOL_SECS=8 POOL_RATE=40 POOL_ROUNDS=3 POOL_LEASE_MS=1500 POOL_FAULT_AT=4
usage() { sed -n '/^#   bench\/serve.sh/,/--selftest\]/p' "$0" | sed 's/^# *//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) SECS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --connections) CONN=$2; shift 2 ;;
    --replicas) REPLICAS=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --haproxy-threads) HA_THREADS=$2; shift 2 ;;
    --light-connections) LIGHT=$2; shift 2 ;;
    --failover-seconds) FO_SECS=$2; shift 2 ;;
    --stop-first-byte-ms) STOP_FB_MS=$2; shift 2 ;;
    --paced-percent) PACED=$2; shift 2 ;;
    --pool-seconds) POOL_SECS=$2; shift 2 ;;
    --pool-rate) POOL_RATE=$2; shift 2 ;;
    --pool-rounds) POOL_ROUNDS=$2; shift 2 ;;
    --lease-timeout-ms) POOL_LEASE_MS=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --selftest) SELFTEST=1 SECS=2 ROUNDS=1 LIGHT=0 FO_SECS=3 POOL_SECS=5 POOL_ROUNDS=1; shift ;;
    *) usage ;;
  esac
done
for n in "$SECS" "$ROUNDS" "$CONN" "$REPLICAS" "$HA_THREADS" "$LIGHT" "$FO_SECS" "$STOP_FB_MS" \
  "$PACED" "$POOL_SECS" "$POOL_RATE" "$POOL_ROUNDS" "$POOL_LEASE_MS"; do
  [[ "$n" =~ ^[0-9]+$ ]] || usage
done
[ "$SECS" -ge 1 ] && [ "$ROUNDS" -ge 1 ] && [ "$CONN" -ge 2 ] && [ "$REPLICAS" -ge 1 ] &&
  [ "$FO_SECS" -ge 2 ] && [ "$POOL_SECS" -ge 4 ] && [ "$POOL_RATE" -ge 1 ] &&
  [ "$POOL_ROUNDS" -ge 1 ] && [ "$POOL_LEASE_MS" -ge 100 ] &&
  [[ "$ONLY" =~ ^(|throughput|failover|pool-failover)$ ]] || usage
# The pool's fault comes a third into the run (at least 1 s in, and the lease plus 1.5 s before
# its end when the run is long enough).
POOL_FAULT_AT=$(awk -v s="$POOL_SECS" 'BEGIN { f = s / 3; if (f < 1) f = 1; printf "%.1f", f }')
ENGINE=$BUILD/idlepool-fake-engine GATEWAY=$BUILD/idlepool-gateway-harness IDLEPOOL=$BUILD/idlepool
for b in "$ENGINE" "$GATEWAY" "$IDLEPOOL"; do
  [ -x "$b" ] || { echo "serve.sh: no $b (build it, or pass --build DIR)" >&2; exit 2; }
done
IDLEPOOL=$(readlink -f "$IDLEPOOL")
for c in wrk haproxy curl jq python3; do
  command -v "$c" >/dev/null || { echo "serve.sh: needs $c (apt-get install $c)" >&2; exit 2; }
done

source bench/serve_pool.sh  # pool_failover

# --- processes ---------------------------------------------------------------------------------
T=$(mktemp -d)
PIDS=()
stop_all() {  # kills every process started so far (stopped ones too) and reaps them
  local p
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
  [ -z "${GW_FD:-}" ] || exec {GW_FD}>&-
  GW_FD=""
}
cleanup() { stop_all; pool_stop_all; rm -rf "$T"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
FAILED=0  # a run that did not serve as it should (--selftest exits 1)
warn() { echo "  WARNING: $*"; FAILED=1; }

wait_for() {  # wait_for SECONDS COMMAND...: polls every 50 ms; 1 at the deadline
  local end=$(( $(date +%s) + $1 )); shift
  until "$@"; do [ "$(date +%s)" -lt "$end" ] || return 1; sleep 0.05; done
}
port_in() { sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$1" 2>/dev/null | head -1; }
has_port() { [ -n "$(port_in "$1")" ]; }
# free_port: a port no socket uses, below the kernel's range for clients' ports (the loads'
# connections take those); another process may still take it first (rare).
free_port() {
  local p low; low=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
  [ "${low:-0}" -gt 12000 ] || low=32768
  while :; do
    p=$(( 10000 + RANDOM % (low - 10000) ))
    [ -z "$(ss -Htan "sport = :$p" 2>/dev/null)" ] && { echo "$p"; return; }
  done
}

# start_engine NAME ARGS...: sets EPORT and EPID.
start_engine() {
  local name=$1; shift
  "$ENGINE" --listen 127.0.0.1:0 --model m1 --id "$name" "$@" >"$T/$name.log" 2>&1 &
  EPID=$!; PIDS+=("$EPID")
  wait_for 10 has_port "$T/$name.log" || { echo "serve.sh: engine $name did not start" >&2; exit 1; }
  EPORT=$(port_in "$T/$name.log")
}

# start_gateway NAME MAXC PORT... [-- ARGS...]: replicas 1..n; stdin commands through gw_ctl.
# Sets GPORT; the control fifo stays open on fd GW_FD.
start_gateway() {
  local name=$1 maxc=$2 id=0 args=(); shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    id=$((id + 1)); args+=(--replica "llm:$id:127.0.0.1:$1"); shift
  done
  [ $# -gt 0 ] && shift
  mkfifo "$T/$name.ctl"
  "$GATEWAY" --key-file "$T/key" --service "llm:openai:m1:$maxc" "${args[@]}" "$@" \
    <"$T/$name.ctl" >"$T/$name.log" 2>&1 &
  GW_PID=$!; PIDS+=("$GW_PID")
  exec {GW_FD}>"$T/$name.ctl"
  GW_LOG=$T/$name.log
  wait_for 10 has_port "$GW_LOG" || { echo "serve.sh: the gateway did not start" >&2; exit 1; }
  GPORT=$(port_in "$GW_LOG")
}
gw_ctl() { echo "$1" >&"$GW_FD"; wait_for 10 grep -qx "ok $1" "$GW_LOG"; }

# start_haproxy PORT...: sets HPORT.
start_haproxy() {
  local i=0 p
  HPORT=$(free_port)
  {
    printf 'global\n  nbthread %s\n  maxconn 4096\n' "$HA_THREADS"
    printf 'defaults\n  mode http\n  option http-keep-alive\n  http-reuse always\n'
    printf '  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n'
    printf 'frontend fe\n  bind 127.0.0.1:%s\n  default_backend engines\n' "$HPORT"
    printf 'backend engines\n  balance leastconn\n'
    for p in "$@"; do i=$((i + 1)); printf '  server e%s 127.0.0.1:%s\n' "$i" "$p"; done
  } >"$T/haproxy.cfg"
  haproxy -db -f "$T/haproxy.cfg" >"$T/haproxy.log" 2>&1 &
  HA_PID=$!; PIDS+=("$HA_PID")
  wait_for 10 answers "http://127.0.0.1:$HPORT" ||
    { echo "serve.sh: haproxy did not start (see its log below)" >&2; cat "$T/haproxy.log" >&2; exit 1; }
}

# --- wrk -----------------------------------------------------------------------------------------
KEY="bench-$$-$RANDOM"
echo "$KEY" >"$T/key"
BODY='{"model":"m1","messages":[{"role":"user","content":"hi"}],"max_tokens":8}'
cat >"$T/chat.lua" <<EOF
wrk.method = "POST"
wrk.path = "/v1/chat/completions"
wrk.body = '$BODY'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $KEY"
done = function(summary, latency, requests)
  io.write(string.format("tail: p99.9 %d us, max %d us\\n", latency:percentile(99.9), latency.max))
end
EOF
answers() {  # answers URL: a chat through URL answers 200
  [ "$(curl -s -o /dev/null -w '%{http_code}' -m 2 -H "Authorization: Bearer $KEY" \
    -H 'Content-Type: application/json' -d "$BODY" "$1/v1/chat/completions")" = 200 ]
}
# run_wrk OUT URL CONNECTIONS SECONDS [ARGS...]; WRK_BG=1: in the background, its pid in WRK_PID
# (WRK_SCRIPT: a wrk script other than chat.lua)
run_wrk() {
  local out=$1 url=$2 c=$3 s=$4 t=2 script=${WRK_SCRIPT:-$T/chat.lua}; shift 4
  [ "$c" -ge 2 ] || t=1
  if [ "${WRK_BG:-0}" = 1 ]; then
    wrk -t"$t" -c"$c" -d"${s}s" --latency -s "$script" "$@" "$url" >"$out" 2>&1 &
    WRK_PID=$!; PIDS+=("$WRK_PID")
  else
    wrk -t"$t" -c"$c" -d"${s}s" --latency -s "$script" "$@" "$url" >"$out" 2>&1 || true
  fi
}
wrk_rps() { awk '/^Requests\/sec:/ { print $2 }' "$1"; }
wrk_total() { awk '/ requests in / { print $1 }' "$1"; }
wrk_non2xx() { awk '/Non-2xx or 3xx responses:/ { n = $NF } END { print n + 0 }' "$1"; }
wrk_sockerr() {  # connect + read + write + timeout
  awk '/Socket errors:/ { gsub(",", ""); n = $4 + $6 + $8 + $10 } END { print n + 0 }' "$1"
}
wrk_ms() {  # wrk_ms OUT 50|99: that percentile in ms
  awk -v p="$2%" '$1 == p { v = $2; m = 1
      if (v ~ /us$/) m = 0.001; else if (v ~ /ms$/) m = 1; else if (v ~ /m$/) m = 60000;
      else if (v ~ /s$/) m = 1000
      sub(/[a-z]+$/, "", v); printf "%.3f\n", v * m }' "$1"
}
# check_run OUT WHAT: warns when a run served nothing or failed requests it should not have.
wrk_tail_ms() {  # wrk_tail_ms OUT p99.9|max: from the script's done() line, in ms
  awk -v k="$2" '/^tail: / { for (i = 2; i < NF; i++) if ($i == k) { v = $(i + 1); sub(",", "", v)
    printf "%.1f\n", v / 1000 } }' "$1"
}
check_run() {
  local n; n=$(wrk_total "$1")
  [ -n "$n" ] && [ "$n" -gt 0 ] || { warn "$2: no request completed"; cat "$1"; return; }
  [ "$(wrk_non2xx "$1")" = 0 ] || warn "$2: $(wrk_non2xx "$1") non-2xx answers"
  [ "$(wrk_sockerr "$1")" = 0 ] || warn "$2: $(wrk_sockerr "$1") socket errors"
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END {
  if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
calc() { awk "BEGIN { printf \"%.3f\", $1 }"; }
met() { if awk "BEGIN { exit !($1) }"; then echo "MET"; else echo "NOT MET"; fi; }

# --- throughput ------------------------------------------------------------------------------------
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }  # user + system, clock ticks
# measure LOAD CONNECTIONS SECONDS: rounds over direct/haproxy/gateway, the order rotating;
# appends "r rps p50 p99 cpu" per target to $T/LOAD.TARGET (cpu: the served process's CPU
# microseconds per request: the engine for direct, HAProxy or the gateway alone for the proxies).
measure() {
  local load=$1 c=$2 s=$3 r i k t order out c0 cpu hz
  hz=$(getconf CLK_TCK)
  declare -A pid=([direct]=$DIRECT_PID [haproxy]=$HA_PID [gateway]=$GW_PID)
  local targets=(direct haproxy gateway)
  declare -A url=([direct]="http://127.0.0.1:$DIRECT_PORT" [haproxy]="http://127.0.0.1:$HPORT"
                  [gateway]="http://127.0.0.1:$GPORT")
  for t in "${targets[@]}"; do run_wrk "$T/warm" "${url[$t]}" "$c" 1; : >"$T/$load.$t"; done
  for r in $(seq "$ROUNDS"); do
    order=()
    for i in 0 1 2; do order+=("${targets[$(( (i + r - 1) % 3 ))]}"); done
    for t in "${order[@]}"; do
      out=$T/wrk.$load.$t.$r
      c0=$(cpu_ticks "${pid[$t]}")
      run_wrk "$out" "${url[$t]}" "$c" "$s"
      cpu=$(calc "($(cpu_ticks "${pid[$t]}") - $c0) * 1000000 / $hz / ($(wrk_total "$out") + 0.001)")
      check_run "$out" "$load $t round $r"
      echo "$r $(wrk_rps "$out") $(wrk_ms "$out" 50) $(wrk_ms "$out" 99) $cpu" >>"$T/$load.$t"
    done
    printf '  round %s (%s):' "$r" "${order[*]}"
    for t in "${targets[@]}"; do
      read -r _ k p50 p99 cpu < <(tail -1 "$T/$load.$t")
      printf '  %s %s req/s p50 %s p99 %s ms cpu %s us/req;' "$t" "$k" "$p50" "$p99" "$cpu"
    done
    echo
  done
}
col() { awk -v c="$2" '{ print $c }' "$1" | median; }  # the median of a column
# per_round LOAD EXPR: EXPR over each round's figures (d_, h_, g_ + rps/p50/p99/cpu), the median.
per_round() {
  paste "$T/$1.direct" "$T/$1.haproxy" "$T/$1.gateway" | awk "{
    d_rps = \$2; d_p50 = \$3; d_p99 = \$4; d_cpu = \$5; h_rps = \$7; h_p50 = \$8; h_p99 = \$9
    h_cpu = \$10; g_rps = \$12; g_p50 = \$13; g_p99 = \$14; g_cpu = \$15
    printf \"%.3f\\n\", $2 }" | median
}
report() {
  local load=$1 t ratio gp50 gp99 hp50 hp99
  echo "  medians of $ROUNDS rounds:"
  for t in direct haproxy gateway; do
    printf '    %-8s %10s req/s   p50 %7s ms   p99 %7s ms   cpu %6s us/req\n' "$t" \
      "$(col "$T/$load.$t" 2)" "$(col "$T/$load.$t" 3)" "$(col "$T/$load.$t" 4)" \
      "$(col "$T/$load.$t" 5)"
  done
  ratio=$(per_round "$load" 'g_rps / h_rps')
  hp50=$(per_round "$load" 'h_p50 - d_p50'); hp99=$(per_round "$load" 'h_p99 - d_p99')
  gp50=$(per_round "$load" 'g_p50 - d_p50'); gp99=$(per_round "$load" 'g_p99 - d_p99')
  echo "    added over direct (median of the rounds' differences): haproxy p50 $hp50 ms," \
    "p99 $hp99 ms; gateway p50 $gp50 ms, p99 $gp99 ms"
  # The ratio's target is for throughput (saturation); at light load it is a latency ratio.
  if [ "$load" = sat ]; then
    echo "    gateway/haproxy requests/s (median of the rounds' ratios): $ratio" \
      "(target >= 0.9: $(met "$ratio >= 0.9"))"
  else
    echo "    gateway/haproxy requests/s (median of the rounds' ratios): $ratio"
  fi
  echo "    gateway p50 over direct: $gp50 ms (target <= 0.5 ms: $(met "$gp50 <= 0.5"))"
  # Less noisy than requests/s on a shared machine: each proxy's own CPU for one request.
  echo "    gateway/haproxy cpu per request (median of the rounds' ratios):" \
    "$(per_round "$load" 'g_cpu / h_cpu')"
}

throughput() {
  local ports=() i
  for i in $(seq "$REPLICAS"); do
    start_engine "fixed$i" --fixed; ports+=("$EPORT"); [ "$i" -gt 1 ] || FIRST_PID=$EPID
  done
  DIRECT_PORT=${ports[0]} DIRECT_PID=$FIRST_PID
  start_haproxy "${ports[@]}"
  start_gateway gw "$CONN" "${ports[@]}"
  for u in "http://127.0.0.1:$DIRECT_PORT" "http://127.0.0.1:$HPORT" "http://127.0.0.1:$GPORT"; do
    answers "$u" || { echo "serve.sh: $u does not answer a chat with 200" >&2; exit 1; }
  done
  echo "== throughput: $REPLICAS fixed engines, wrk -c$CONN ${SECS}s per target, $ROUNDS rounds" \
    "(haproxy nbthread $HA_THREADS, gateway 1 io thread; $(nproc) cores)"
  measure sat "$CONN" "$SECS"
  report sat
  if [ "$LIGHT" -gt 0 ]; then
    echo "== light load: the same, wrk -c$LIGHT"
    measure light "$LIGHT" "$SECS"
    report light
  fi
  [ "$PACED" -eq 0 ] || paced
  stop_all
}

# --- below saturation ----------------------------------------------------------------------------
# paced: after `measure sat`; the offered rate from its HAProxy median (see the header).
paced() {
  local h_rps offered think t
  h_rps=$(col "$T/sat.haproxy" 2)
  offered=$(calc "$h_rps * $PACED / 100")
  awk "BEGIN { exit !($offered >= 1) }" || { warn "paced: no HAProxy rate to pace from"; return; }
  think=$(calc "$CONN * 1000 / $offered")
  # Each wrk thread seeds its own generator from its number (setup runs once per thread).
  { cat "$T/chat.lua"; cat <<EOF
local threads = 0
setup = function(thread) threads = threads + 1; thread:set("seed", threads) end
init = function(args) math.randomseed(seed) end
delay = function() return math.floor(2 * $think * math.random() + math.random()) end
EOF
  } >"$T/paced.lua"
  echo "== below saturation: wrk -c$CONN, a think time of $think ms on average per connection" \
    "before each request: offered $offered req/s ($PACED % of HAProxy's saturated $h_rps)"
  WRK_SCRIPT=$T/paced.lua measure paced "$CONN" "$SECS"
  report paced
  printf '    achieved/offered requests/s (medians):'
  for t in direct haproxy gateway; do
    printf ' %s %s' "$t" "$(calc "$(col "$T/paced.$t" 2) / $offered")"
  done
  echo
}

# --- failover ------------------------------------------------------------------------------------
FO_CONN=16
# failover_run WHAT FAULT [GATEWAY ARGS...]: 4 engines, the gateway, wrk for FO_SECS; FAULT (a
# function, given the victim's pid, port and replica id 2) runs at half time.
failover_run() {
  local what=$1 fault=$2 ports=() pids=() i out=$T/fo.$1; shift 2
  for i in 1 2 3 4; do
    start_engine "fo$i" --tokens 8 --token-ms 5; ports+=("$EPORT"); pids+=("$EPID")
  done
  start_gateway "fo-$what" 64 "${ports[@]}" -- "$@"
  answers "http://127.0.0.1:$GPORT" || { echo "serve.sh: failover gateway does not answer" >&2; exit 1; }
  WRK_BG=1 run_wrk "$out" "http://127.0.0.1:$GPORT" "$FO_CONN" "$FO_SECS" --timeout 10s
  sleep "$(calc "$FO_SECS / 2")"
  FAULT_NOTE=""
  "$fault" "${pids[1]}" "${ports[1]}" 2
  wait "$WRK_PID" || true
  if [ "$what" = sigstop ]; then  # the gateway's --verbose lines: attempts timed out on replica 2
    local tmo reqs
    tmo=$(grep -c 'on replica 2: .*timeout' "$GW_LOG" || true)
    reqs=$(grep 'on replica 2: .*timeout' "$GW_LOG" | sed -n 's/.*request \([0-9]*\) on.*/\1/p' |
      sort -u | wc -l)
    FAULT_NOTE+="; $tmo attempts timed out on it, for $reqs requests"
  fi
  local n; n=$(wrk_total "$out")
  [ -n "$n" ] && [ "$n" -gt 0 ] || { warn "failover $what: no request completed"; cat "$out"; }
  printf '  %-8s %6s requests, failed %s (non-2xx %s, socket errors %s), p50 %s, p99 %s,' \
    "$what" "${n:-0}" "$(( $(wrk_non2xx "$out") + $(wrk_sockerr "$out") ))" "$(wrk_non2xx "$out")" \
    "$(wrk_sockerr "$out")" "$(wrk_ms "$out" 50)" "$(wrk_ms "$out" 99)"
  printf ' p99.9 %s, max %s ms%s\n' "$(wrk_tail_ms "$out" p99.9)" "$(wrk_tail_ms "$out" max)" \
    "$FAULT_NOTE"
  echo "${n:-0} $(( $(wrk_non2xx "$out") + $(wrk_sockerr "$out") ))" >"$T/fo.$what.sum"
  stop_all
}
engine_stat() { curl -s -m 2 "http://127.0.0.1:$1/stats" | sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p"; }
no_fault() { :; }
kill_fault() {
  local in_flight; in_flight=$(engine_stat "$2" in_flight)
  kill -KILL "$1"; wait "$1" 2>/dev/null || true
  FAULT_NOTE="; ${in_flight:-?} in flight on the killed engine just before"
}
stop_fault() {
  local in_flight; in_flight=$(engine_stat "$2" in_flight)
  kill -STOP "$1"
  FAULT_NOTE="; ${in_flight:-?} in flight on the stopped engine just before"
}
drain_fault() {
  local before after t0 t1 later
  before=$(engine_stat "$2" requests); t0=$(date +%s%N)
  gw_ctl "drain $3"
  t1=$(date +%s%N); after=$(engine_stat "$2" requests)
  sleep "$(calc "$FO_SECS / 4")"
  later=$(engine_stat "$2" requests)
  DRAIN_NEW=$(( later - after ))
  FAULT_NOTE="; drain call $(calc "($t1 - $t0) / 1000000") ms, its engine got $((after - before))"
  FAULT_NOTE+=" requests during the call and $DRAIN_NEW after it"
  grep -q "^drained $3" "$GW_LOG" && FAULT_NOTE+=", drained"
}

failover() {
  echo "== failover: 4 engines (8 tokens, 5 ms apart, not streamed) behind the gateway," \
    "wrk -c$FO_CONN ${FO_SECS}s (--timeout 10s), the fault at $(calc "$FO_SECS / 2") s"
  failover_run none no_fault
  failover_run sigkill kill_fault
  failover_run sigstop stop_fault --first-byte-ms "$STOP_FB_MS" --verbose
  echo "    (sigstop: the harness has no worker or lease; the stopped engine stands in for a" \
    "stopped worker and the gateway runs with --first-byte-ms $STOP_FB_MS)"
  DRAIN_NEW=0
  failover_run drain drain_fault
  echo "    (drain: the gateway's side of an owner's return; an engine's own counter read after" \
    "the drain call returned bounds the time to the last new assignment by the call's time)"
  [ "$DRAIN_NEW" = 0 ] || warn "drain: the drained engine got $DRAIN_NEW requests after the call"
  local w
  for w in none sigkill drain; do
    read -r _ f <"$T/fo.$w.sum"; [ "$f" = 0 ] || warn "failover $w: $f failed requests"
  done
}

echo "bench/serve.sh $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "$ONLY" ] && [ "$ONLY" != throughput ] || throughput
[ -n "$ONLY" ] && [ "$ONLY" != failover ] || failover
[ -n "$ONLY" ] && [ "$ONLY" != pool-failover ] || pool_failover
if [ "$SELFTEST" = 1 ]; then
  [ "$FAILED" = 0 ] && echo "selftest: every target served" || { echo "selftest: FAILED"; exit 1; }
fi
exit 0
