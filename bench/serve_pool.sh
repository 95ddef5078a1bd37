# bench/serve_pool.sh: bench/serve.sh's pool-failover part (sourced by it; uses its T, PIDS,
# warn, wait_for, calc, median). The failover figures of issue 17 through the real pool: a real
# `idlepool coordinator` serving its gateway (HTTPS, the pool CA, an access token of role
# submit as the bearer key), 4 real workers (fake sensors, the quick owner policy), a service of
# 3 idlepool-fake-engine replicas (8 tokens, 5 ms apart), and bench/serve_load.py: an open-loop
# load, POOL_RATE requests/s not streamed and as many streamed at once, for POOL_SECS. Runs: no
# fault; SIGKILL of one replica's engine; SIGSTOP of one worker and its replica (the machine
# freezes: its lease runs out); the owner of one replica's worker comes back (its sensor file
# says idle 0 s: the replica drains and a replacement starts on the fourth worker). Each fault
# comes at POOL_FAULT_AT seconds. Setting up a pool is the same lines as
# tests/integration/lib.sh's start_coordinator, start_worker and sense, copied (lib.sh owns its
# own temp dir and traps).

# serve.sh sets POOL_SECS, POOL_RATE, POOL_ROUNDS, POOL_LEASE_MS and POOL_FAULT_AT from its flags.
POOL_HEARTBEAT_MS=300 POOL_WINDOW_MS=3000  # the figures "from the fault" cover this long
POOL_DIRS=()  # every pool's dir: pool_stop_all kills what still works there

# pool_kill_dir DIR: kills every process whose working dir or IDLEPOOL_WORK_DIR is under DIR (a
# worker killed with SIGKILL leaves its replicas running, by design).
pool_kill_dir() {
  local proc cwd root; root=$(readlink -f "$1")
  for proc in /proc/[0-9]*; do
    [ "${proc#/proc/}" = "$$" ] && continue
    cwd=$(readlink "$proc/cwd" 2>/dev/null) || continue
    case "$cwd" in "$root" | "$root"/*) kill -KILL "${proc#/proc/}" 2>/dev/null || true ;; esac
  done
  for proc in $(grep -lz "^IDLEPOOL_WORK_DIR=$root/" /proc/[0-9]*/environ 2>/dev/null); do
    proc=${proc#/proc/}; kill -KILL "${proc%/environ}" 2>/dev/null || true
  done
}
pool_stop_all() { local d; for d in "${POOL_DIRS[@]}"; do pool_kill_dir "$d"; done; }

# pool_start DIR: a coordinator and workers w1..w4, the service; sets P_GW, P_CA, P_KEY, P_JOB.
pool_start() {
  local d=$1 i
  P=$d; POOL_DIRS+=("$d"); mkdir -p "$d/coord"
  export XDG_CONFIG_HOME=$d/config
  "$IDLEPOOL" coordinator --listen 127.0.0.1:0 --data-dir "$d/coord" --serve-listen 127.0.0.1:0 \
    --http off --lease-timeout-ms "$POOL_LEASE_MS" --heartbeat-ms "$POOL_HEARTBEAT_MS" \
    >"$d/coordinator.log" 2>&1 &
  PIDS+=("$!")
  wait_for 20 pool_listening "$d/coordinator.log" || pool_fail "the coordinator did not start"
  local port
  port=$(sed -n 's/.*coordinator listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$d/coordinator.log")
  P_GW=$(sed -n 's|.*gateway at \(https://[0-9.:]*\)/.*|\1|p' "$d/coordinator.log" | head -1)
  P_CA=$d/coord/ca.pem P_KEY=$d/key
  "$IDLEPOOL" token create --role submit --data-dir "$d/coord" >"$P_KEY" 2>/dev/null
  "$IDLEPOOL" token create --role worker --ttl 24h --data-dir "$d/coord" >"$d/join.token" \
    2>/dev/null
  export IDLEPOOL_COORDINATOR=127.0.0.1:$port IDLEPOOL_TOKEN
  IDLEPOOL_TOKEN=$(cat "$P_KEY")
  cp examples/owner-policies/quick.toml "$d/owner.toml"
  local nosb=(); [ "$POOL_SANDBOX" != none ] || nosb=(--no-sandbox)
  for i in 1 2 3 4; do
    pool_sense "$i" idle_seconds 1000
    "$IDLEPOOL" worker --name "w$i" --work-dir "$d/w$i" --join "127.0.0.1:$port" \
      --token-file "$d/join.token" --sensors-dir "$d/s$i" --config "$d/owner.toml" --slots 2 \
      "${nosb[@]}" >"$d/w$i.log" 2>&1 &
    PIDS+=("$!"); printf -v "P_W$i" '%s' "$!"
  done
  wait_for 30 pool_workers_run 4 || pool_fail "the pool's workers did not come"
  cat >"$d/svc.toml" <<TOML
name = "bench"
command = ["$(readlink -f "$ENGINE")", "--port", "{port}", "--model", "m1", "--id", "r{replica}",
           "--tokens", "8", "--token-ms", "5"]
[service]
protocol = "openai"
model = "m1"
replicas = 3
max_concurrent = 64
drain_seconds = 2
TOML
  P_JOB=$("$IDLEPOOL" submit "$d/svc.toml" 2>>"$d/submit.log")
  wait_for 60 pool_ready_is 3 || pool_fail "the service's replicas did not get ready"
}
pool_fail() {  # pool_fail WHY: says why, shows the pool's logs, exits 1
  local f
  echo "serve.sh: $1; the pool's logs:" >&2
  "$IDLEPOOL" workers 2>&1 | head -20 >&2 || true
  for f in "$P"/*.log; do echo "=== $f" >&2; tail -15 "$f" >&2; done
  exit 1
}
pool_listening() { grep -qs "gateway at https://" "$1" && grep -qs "listening on" "$1"; }
# pool_sense I KEY VALUE: sets a fake sensor of worker wI as an owner's script should (write,
# rename).
pool_sense() {
  mkdir -p "$P/s$1"
  printf '%s\n' "$3" >"$P/s$1/.$2.tmp"
  mv "$P/s$1/.$2.tmp" "$P/s$1/$2"
}
pool_workers_run() {
  [ "$("$IDLEPOOL" workers --json 2>/dev/null | jq '[.workers[] | select(.state == "connected" and
    .owner_state == "run")] | length')" = "$1" ]
}
pool_services() { "$IDLEPOOL" services --json 2>/dev/null; }
pool_ready_is() {
  [ "$(pool_services | jq '[.services[].replica_status[] | select(.state == "ready")] |
    length')" = "$1" ]
}
# pool_replica_worker N: the worker of the replica with task index N.
pool_replica_worker() {
  pool_services | jq -r --argjson n "$1" '.services[].replica_status[] | select(.replica == $n) |
    .worker'
}
# pool_engine_pid WORKER: the pid of WORKER's replica (its engine), found by its environment.
pool_engine_pid() {
  local e p root; root=$(readlink -f "$P/$1")
  for e in $(grep -lz "^IDLEPOOL_WORK_DIR=$root\$" /proc/[0-9]*/environ 2>/dev/null); do
    p=${e#/proc/}; p=${p%/environ}
    if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q "idlepool-fake-engine"; then
      echo "$p"; return 0
    fi
  done
  return 1
}
# pool_engine_stat PID FIELD: a field of the engine's /stats ("." for all of it, on one line), in
# its own network namespace if its sandbox gave it one.
pool_engine_stat() {
  local port ns=()
  port=$(tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null | sed -n '/^--port$/{n;p}')
  [ -n "$port" ] || return 1
  [ "$(readlink "/proc/$1/ns/net")" = "$(readlink /proc/self/ns/net)" ] ||
    ns=(nsenter --net="/proc/$1/ns/net")
  local f=".$2"; [ "$2" != . ] || f=.
  "${ns[@]}" curl -s -m 1 "http://127.0.0.1:$port/stats" | jq -c -r "$f"
}
# log_ms FILE PATTERN: the first log line matching PATTERN, its time as Unix ms (local time).
log_ms() {
  local ts; ts=$(grep -m1 -- "$2" "$1" | sed -n 's/^\[\([0-9-]* [0-9:.]*\)\].*/\1/p')
  [ -n "$ts" ] && date -d "$ts" +%s%3N
}
now_ms() { date +%s%3N; }

# --- runs ----------------------------------------------------------------------------------------
# pool_run WHAT FAULT: a fresh pool, both loads, FAULT (a function) at POOL_FAULT_AT s; prints
# one row per load and FAULT's note; appends "WHAT KIND figures" to $T/pool.rows.
pool_run() {
  local what=$1 fault=$2 round=$3 d=$T/pool-$1-$3 k pids=()
  pool_start "$d"
  for k in plain stream; do
    local s=(); [ "$k" = plain ] || s=(--stream)
    python3 bench/serve_load.py load --url "$P_GW" --ca "$P_CA" --key-file "$P_KEY" --model m1 \
      --rate "$POOL_RATE" --seconds "$POOL_SECS" --timeout 10 "${s[@]}" --out "$d/$k.req" &
    pids+=("$!"); PIDS+=("$!")
  done
  sleep "$POOL_FAULT_AT"
  FAULT_MS=$(now_ms) POOL_NOTE=""
  "$fault" "$d"
  wait "${pids[@]}" || true
  "${fault}_after" "$d"
  local from=$FAULT_MS to=$(( FAULT_MS + POOL_WINDOW_MS )) all win
  for k in plain stream; do
    all=$(python3 bench/serve_load.py summary "$d/$k.req")
    win=$(python3 bench/serve_load.py summary "$d/$k.req" --from "$from" --to "$to")
    echo "$what $k $round $all | $(echo "$win" | sed 's/\([a-z0-9_]*\)=/w_\1=/g')" >>"$T/pool.rows"
    pool_row "$what" "$k" "$all" "$win"
  done
  [ -z "$POOL_NOTE" ] || echo "      $what: $POOL_NOTE"
  stop_all; pool_kill_dir "$d"
}
kv() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1; }  # kv "a=1 b=2" b
# pool_row WHAT KIND SUMMARY WINDOW_SUMMARY
pool_row() {
  local t=ttfb; [ "$2" = plain ] || t=first
  printf '  %-7s %-6s %5s requests, failed %s (%s), %s p50 %s p99 %s max %s ms;' "$1" "$2" \
    "$(kv "$3" requests)" "$(kv "$3" failed)" "$(pool_failed_kinds "$3")" \
    "$([ "$2" = plain ] && echo "ttfb" || echo "first event")" \
    "$(kv "$3" ${t}_p50)" "$(kv "$3" ${t}_p99)" "$(kv "$3" ${t}_max)"
  printf ' %s s from the fault: %s requests, failed %s, p99 %s max %s ms\n' \
    "$(awk -v w="$POOL_WINDOW_MS" 'BEGIN { print w / 1000 }')" "$(kv "$4" requests)" \
    "$(kv "$4" failed)" "$(kv "$4" ${t}_p99)" "$(kv "$4" ${t}_max)"
}
pool_failed_kinds() {  # "2 broken, 1 timeout" or "none"
  local k out=""
  for k in status socket timeout broken bad; do
    [ "$(kv "$1" $k)" = 0 ] || out+="${out:+, }$(kv "$1" $k) $k"
  done
  echo "${out:-none}"
}

# The faults. Each gets the pool's dir; FAULT_after runs once the loads ended. The victim is
# replica 0: PF_W its worker, PF_E its engine's pid.
pool_none() { :; }
pool_none_after() { :; }
pool_victim() {
  PF_W=$(pool_replica_worker 0)
  PF_E=$(pool_engine_pid "$PF_W") || { warn "no engine found on $PF_W"; return 1; }
}
pool_sigkill() {
  pool_victim || return 0
  local n; n=$(pool_engine_stat "$PF_E" in_flight)
  kill -KILL "$PF_E"
  POOL_NOTE="replica 0's engine (on $PF_W) killed with ${n:-?} requests in flight"
}
pool_sigkill_after() {
  wait_for 20 pool_ready_is 3 && POOL_NOTE+=", 3 replicas ready again at the end" ||
    POOL_NOTE+=", NOT 3 replicas ready 20 s later"
}
# SIGSTOP of worker W and its replica (a frozen machine); the coordinator's services view polled
# every 200 ms (an `idlepool services` each time, about 60 ms) until the lease ran out and 1.5 s
# more: when the gateway last gave the replica a request, when it left the routing.
pool_sigstop() {
  pool_victim || return 0
  local wpid=P_W${PF_W#w}
  kill -STOP "${!wpid}" "$PF_E"
  ( end=$(( $(now_ms) + POOL_LEASE_MS + 1500 ))
    while [ "$(now_ms)" -lt "$end" ]; do
      v=$(pool_services | jq -r --arg w "$PF_W" '[.services[].replica_status[] |
        select(.worker == $w)] | if length == 0 then "gone" else (.[0].requests | tostring) end')
      echo "$(now_ms) $v"  # the time after the answer: the view is from before it
      sleep 0.2
    done ) >"$1/sigstop.poll" &
  PF_POLL=$!; PIDS+=("$PF_POLL")
}
pool_sigstop_after() {
  wait "$PF_POLL" || true
  local first_n last_n last_ms gone_ms gone="never (NOT out after the lease + 1.5 s)"
  first_n=$(awk 'NR == 1 { print $2 }' "$1/sigstop.poll")
  last_n=$(awk '$2 != "gone" { n = $2 } END { print n }' "$1/sigstop.poll")
  # The first sample that shows the final count: the last assignment came before it.
  last_ms=$(awk '$2 != "gone" { if ($2 != n) { n = $2; t = $1 } } END { print t }' \
    "$1/sigstop.poll")
  gone_ms=$(awk '$2 == "gone" { print $1; exit }' "$1/sigstop.poll")
  [ -z "$gone_ms" ] || gone="+$(( gone_ms - FAULT_MS )) ms"
  POOL_NOTE="$PF_W and its replica stopped; the gateway had given the replica $first_n requests"
  POOL_NOTE+=" at the first poll, $last_n in all, the last by +$(( last_ms - FAULT_MS )) ms (polls"
  POOL_NOTE+=" every 200 ms); it left the routing by $gone"
  POOL_STOP_LAST+=" $(( last_ms - FAULT_MS ))"
  POOL_STOP_GONE+=" ${gone_ms:+$(( gone_ms - FAULT_MS ))}"
}
# The owner of W comes back: its sensor says idle 0 s. The engine's last_request_ms polled every
# 50 ms until it is gone (vacated once drained); the worker's log line "draining" is its signal.
pool_owner() {
  pool_victim || return 0
  ( while v=$(pool_engine_stat "$PF_E" .) && [ -n "$v" ]; do echo "$v"; sleep 0.05; done
  ) >"$1/owner.poll" 2>/dev/null &
  PF_POLL=$!; PIDS+=("$PF_POLL")
  PF_WRITE_MS=$(now_ms)
  pool_sense "${PF_W#w}" idle_seconds 0
}
pool_owner_after() {
  wait_for 20 pool_ready_is 3 || true
  local signal coord last a b stats
  kill "$PF_POLL" 2>/dev/null || true; wait "$PF_POLL" 2>/dev/null || true
  signal=$(log_ms "$1/$PF_W.log" "owner policy: draining")
  # The coordinator logs the owner state the worker sends right after the drain message.
  coord=$(log_ms "$1/coordinator.log" "worker $PF_W: owner policy says suspend")
  stats=$(tail -1 "$1/owner.poll")
  last=$(echo "$stats" | jq -r .last_request_ms)
  if [ -z "$signal" ] || [ -z "$last" ]; then
    warn "owner: no drain line in $PF_W's log or no engine figure"; return
  fi
  a=$(( last - signal )) b=$(( last - PF_WRITE_MS ))
  POOL_OWNER_A+=" $a" POOL_OWNER_B+=" $b" POOL_OWNER_SIG+=" $(( signal - PF_WRITE_MS ))"
  POOL_OWNER_COORD+=" $(( ${coord:-0} - signal ))"
  POOL_NOTE="$PF_W's owner back: the worker's drain signal (its log line) at"
  POOL_NOTE+=" +$(( signal - PF_WRITE_MS )) ms from the sensor write, the coordinator's log of the"
  POOL_NOTE+=" owner state (sent after the drain) at +$(( ${coord:-0} - signal )) ms from the"
  POOL_NOTE+=" signal; the last request reached the replica's engine at $a ms from the signal"
  POOL_NOTE+=" (target <= 50:"
  local q='"\(.requests) requests, \(.completed) completed, \(.cancelled) cancelled, '
  q+='\(.errors) refused"'
  POOL_NOTE+=" $(met "$a <= 50")), $b ms from the sensor write; its engine's last /stats:"
  POOL_NOTE+=" $(echo "$stats" | jq -r "$q")"
  POOL_NOTE+="; $(pool_ready_is 3 && echo "3 replicas ready again, on $(pool_services | jq -r \
    '[.services[].replica_status[] | select(.state == "ready") | .worker] | sort | join(" ")')" ||
    echo "NOT 3 replicas ready 20 s later")"
}

pool_failover() {
  POOL_SANDBOX=$("$IDLEPOOL" worker --print-resources --gpus none --json 2>/dev/null |
    jq -r '.sandbox // "none"')
  : >"$T/pool.rows"
  POOL_OWNER_A="" POOL_OWNER_B="" POOL_OWNER_SIG="" POOL_OWNER_COORD=""
  POOL_STOP_LAST="" POOL_STOP_GONE=""
  echo "== pool failover: a coordinator (--lease-timeout-ms $POOL_LEASE_MS, --heartbeat-ms" \
    "$POOL_HEARTBEAT_MS), 4 workers (sandbox: $POOL_SANDBOX), 3 fake-engine replicas (8 tokens," \
    "5 ms apart) behind its HTTPS gateway; $POOL_RATE requests/s not streamed + $POOL_RATE" \
    "streamed (open loop) for ${POOL_SECS} s, the fault at ${POOL_FAULT_AT} s; $POOL_ROUNDS rounds"
  echo "   (plain: ttfb = the whole answer; stream: first event = the first token's event; failed ="
  echo "   non-200 + socket errors + timeouts (10 s) + streams with an error event or no [DONE])"
  local r w
  for r in $(seq "$POOL_ROUNDS"); do
    [ "$POOL_ROUNDS" = 1 ] || echo "  round $r"
    for w in none sigkill sigstop owner; do pool_run "$w" "pool_$w" "$r"; done
  done
  [ "$POOL_ROUNDS" = 1 ] || pool_medians
  pool_check
}
# The medians over rounds of each run's figures, in pool_row's form.
pool_medians() {
  local w k f all win
  echo "  medians of $POOL_ROUNDS rounds:"
  for w in none sigkill sigstop owner; do
    for k in plain stream; do
      all="" win=""
      for f in requests failed status socket timeout broken bad ttfb_p50 ttfb_p99 ttfb_max \
        first_p50 first_p99 first_max; do
        all+=" $f=$(pool_column "$w" "$k" "$f")" win+=" $f=$(pool_column "$w" "$k" "w_$f")"
      done
      pool_row "$w" "$k" "${all# }" "${win# }"
    done
  done
  echo "    owner: the last request reached the draining replica at $(echo $POOL_OWNER_A |
    median) ms from the worker's signal (rounds:$POOL_OWNER_A; target <= 50), at" \
    "$(echo $POOL_OWNER_B | median) ms from the sensor write (rounds:$POOL_OWNER_B); the signal" \
    "came $(echo $POOL_OWNER_SIG | median) ms after the write, the coordinator's log of the owner" \
    "state $(echo $POOL_OWNER_COORD | median) ms after the signal"
  echo "    sigstop: the gateway's count of the stopped replica last moved +$(echo $POOL_STOP_LAST |
    median) ms after the SIGSTOP (rounds:$POOL_STOP_LAST), it left the routing at" \
    "+$(echo $POOL_STOP_GONE | median) ms (rounds:$POOL_STOP_GONE); lease $POOL_LEASE_MS ms"
}
pool_column() {  # pool_column WHAT KIND FIELD: the median of FIELD over the rounds
  awk -v w="$1" -v k="$2" -v f="$3" '$1 == w && $2 == k {
    for (i = 4; i <= NF; i++) if (index($i, f "=") == 1) print substr($i, length(f) + 2) }' \
    "$T/pool.rows" | median
}
# Failed requests where none belongs: any in plain runs; for streams, any in the no-fault and
# owner runs, and any but a stream broken after its first byte (an error event) in the others.
pool_check() {
  local w k round rest failed broken
  while read -r w k round rest; do
    failed=$(kv "$rest" failed) broken=$(kv "$rest" broken)
    if [ "$k" = plain ] || [ "$w" = none ] || [ "$w" = owner ]; then
      [ "$failed" = 0 ] || warn "pool $w $k round $round: $failed failed requests"
    else
      [ "$(( failed - broken ))" = 0 ] ||
        warn "pool $w $k round $round: $(( failed - broken )) failed requests (not broken streams)"
    fi
  done <"$T/pool.rows"
}
