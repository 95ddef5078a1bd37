# bench/netpool.sh: an idlepool pool inside a netlab (tests/net/netlab.sh), for the benchmarks
# that run real processes over capped links (bench/distribute, bench/planner/run.sh). Source it
# after netlab.sh; the caller owns the lab (netlab_up/netlab_down) and its temp dir.
#
#   netpool_to_bytes AMOUNT          123, 64Mi, 1G, 512MiB -> bytes (K/M/G powers of 1000,
#                                    Ki/Mi/Gi of 1024); returns 1 on a bad or zero amount
#   netpool_median                   the median of the numbers on stdin (space or newline)
#   netpool_find_idlepool HERE SRC [PATH]
#                                    prints the absolute path of the idlepool binary: PATH, else
#                                    $IDLEPOOL, else HERE/../idlepool (the build tree's bench/),
#                                    HERE/../build/idlepool, SRC/build/idlepool; returns 1 if none
#   netpool_coordinator LAB DIR [ARGS...]
#                                    starts a coordinator on LAB-h0 at its lab address, port
#                                    7878, data in DIR/coord, log DIR/coordinator.log; waits
#                                    (30 s) until it listens; makes a join token for any
#                                    number of workers (DIR/join.token) and an access token
#                                    (DIR/submit.token) through its admin socket and logs in
#                                    with the latter from LAB-h0; sets NETPOOL_ADDR and exports
#                                    IDLEPOOL_COORDINATOR and XDG_CONFIG_HOME (DIR/config: the
#                                    login, never the user's own). No secret is put in argv
#                                    or the environment.
#   netpool_worker LAB I ADDR DIR WORKDIR [ARGS...]
#                                    starts worker wI (one slot, dedicated, empty sensors dir
#                                    DIR/sensors) on LAB-hI, reaching the coordinator at ADDR,
#                                    work dir WORKDIR (joining with DIR/join.token when it
#                                    has no identity yet), log appended to DIR/wI.log; sets
#                                    NETPOOL_PID (the worker's own pid: ip netns exec execs it)
#   netpool_connected LAB            how many workers the coordinator lists as connected
#   netpool_wait_connected LAB N SECONDS
#                                    polls until N workers are connected; returns 1 after SECONDS
#
# Needs $NETPOOL_IDLEPOOL (the binary) set before netpool_coordinator/netpool_worker, and jq.

# netpool_to_bytes AMOUNT
netpool_to_bytes() {
  local a=${1%B} n mult=1
  case "$a" in
    *Ki|*ki) n=${a%??}; mult=1024 ;;
    *Mi|*mi) n=${a%??}; mult=$((1024 * 1024)) ;;
    *Gi|*gi) n=${a%??}; mult=$((1024 * 1024 * 1024)) ;;
    *K|*k) n=${a%?}; mult=1000 ;;
    *M|*m) n=${a%?}; mult=1000000 ;;
    *G|*g) n=${a%?}; mult=1000000000 ;;
    *) n=$a ;;
  esac
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -gt 0 ] || return 1
  echo $(( n * mult ))
}

netpool_median() {
  tr ' ' '\n' | grep -v '^$' | sort -g |
    awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# netpool_find_idlepool HERE SRC [PATH]
netpool_find_idlepool() {
  local here=$1 src=$2 p=${3:-${IDLEPOOL:-}} c
  if [ -z "$p" ]; then
    for c in "$here/../idlepool" "$here/../build/idlepool" ${src:+"$src/build/idlepool"}; do
      [ -x "$c" ] && { p=$c; break; }
    done
  fi
  [ -n "$p" ] && [ -x "$p" ] || return 1
  echo "$(cd "$(dirname "$p")" && pwd)/$(basename "$p")"
}

# netpool_coordinator LAB DIR [ARGS...]
netpool_coordinator() {
  local lab=$1 dir=$2; shift 2
  local addr t_end
  addr=$(netlab_addr "$lab-h0"):7878
  mkdir -p "$dir"
  netlab_exec "$lab-h0" "$NETPOOL_IDLEPOOL" coordinator --listen "$addr" --data-dir "$dir/coord" \
    "$@" >"$dir/coordinator.log" 2>&1 &
  t_end=$(( $(date +%s) + 30 ))
  until grep -q "listening on" "$dir/coordinator.log" 2>/dev/null; do
    [ "$(date +%s)" -lt "$t_end" ] || { echo "netpool: the coordinator did not start (see $dir/coordinator.log)" >&2; return 1; }
    sleep 0.1
  done
  NETPOOL_ADDR=$addr
  IDLEPOOL_COORDINATOR=$addr
  XDG_CONFIG_HOME=$dir/config
  export IDLEPOOL_COORDINATOR XDG_CONFIG_HOME
  unset IDLEPOOL_TOKEN IDLEPOOL_JOIN_TOKEN
  # The admin socket is a Unix socket in the data dir: reachable from any network namespace.
  ( umask 077
    "$NETPOOL_IDLEPOOL" token create --role worker --ttl 24h --data-dir "$dir/coord" \
      >"$dir/join.token" &&
      "$NETPOOL_IDLEPOOL" token create --role submit --name netpool --data-dir "$dir/coord" \
        >"$dir/submit.token"
  ) 2>>"$dir/tokens.log" ||
    { echo "netpool: token create failed (see $dir/tokens.log)" >&2; return 1; }
  netlab_exec "$lab-h0" "$NETPOOL_IDLEPOOL" login "$addr" --token-file "$dir/submit.token" \
    >>"$dir/tokens.log" 2>&1 ||
    { echo "netpool: idlepool login failed (see $dir/tokens.log)" >&2; return 1; }
}

# netpool_worker LAB I ADDR DIR WORKDIR [ARGS...]
netpool_worker() {
  local lab=$1 i=$2 addr=$3 dir=$4 wd=$5; shift 5
  local join=(--coordinator "$addr")
  # The first start joins (the token is read from a file); later ones use WORKDIR/identity.
  [ -d "$wd/identity" ] || join=(--join "$addr" --token-file "$dir/join.token")
  mkdir -p "$dir/sensors"
  # exec twice (the subshell into ip, ip into idlepool): $! is the worker itself, so that a
  # SIGTERM to NETPOOL_PID reaches it (netlab_exec in the background would leave a shell between).
  (exec ip netns exec "$lab-h$i" "$NETPOOL_IDLEPOOL" worker --name "w$i" "${join[@]}" \
    --work-dir "$wd" --slots 1 --dedicated --sensors-dir "$dir/sensors" "$@" \
    >>"$dir/w$i.log" 2>&1) &
  NETPOOL_PID=$!
}

netpool_connected() {
  netlab_exec "$1-h0" "$NETPOOL_IDLEPOOL" workers --json 2>/dev/null |
    jq '[.workers[] | select(.state=="connected")] | length' 2>/dev/null || echo 0
}

# netpool_wait_connected LAB N SECONDS
netpool_wait_connected() {
  local lab=$1 n=$2 t_end=$(( $(date +%s) + $3 ))
  until [ "$(netpool_connected "$lab")" -ge "$n" ]; do
    [ "$(date +%s)" -lt "$t_end" ] || return 1
    sleep 0.2
  done
}
