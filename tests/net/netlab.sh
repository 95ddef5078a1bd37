# netlab.sh: a LAN of network namespaces for tests and benchmarks. Source it, then:
#
#   netlab_available            0 when labs can be built here; else prints why and returns 1
#   netlab_up LAB N RATE        hub + hosts LAB-h0 (coordinator) .. LAB-hN (workers), each
#                               host's uplink and downlink capped at RATE (e.g. 100mbit)
#   netlab_exec HOST CMD...     runs CMD inside HOST (e.g. LAB-h1)
#   netlab_addr HOST            HOST's IPv4 address
#   netlab_dev HOST             HOST's interface name (inside HOST)
#   netlab_down LAB             kills what runs in the lab and removes it; idempotent, trap-safe
#   netlab_set_rate HOST RATE   changes one host's uplink and downlink cap to RATE (a slower or
#                               faster machine in the same lab), same burst rule as netlab_up
#
# Layout: namespace LAB-hub holds a Linux bridge LAB-br; each host namespace LAB-hI holds one
# end of a veth pair (named LAB-hI, address 10.X.0.(I+1)/24), whose other end LAB-vI is a port of
# the bridge. X is derived from LAB so two labs use different subnets (they are isolated from
# each other and from the machine's own network anyway). Everything is created inside the lab's
# namespaces, never in the caller's. Needs root, iproute2 (ip, tc), veth, bridge and sch_tbf.
# LAB: 1-8 of [a-z0-9], starting with a letter (interface names stay within 15 characters).

# netlab_available: probes by really building and removing a throwaway namespace with a veth
# pair, a bridge and a tbf qdisc.
netlab_available() {
  if [ "$(id -u)" != 0 ]; then echo "netlab: needs root (uid $(id -u))"; return 1; fi
  local tool
  for tool in ip tc; do
    command -v "$tool" >/dev/null 2>&1 || { echo "netlab: $tool (iproute2) is not installed"; return 1; }
  done
  if ! ip netns list >/dev/null 2>&1; then echo "netlab: 'ip netns' does not work here"; return 1; fi
  local ns=nlprobe$$ a=nlp$$a b=nlp$$b why=""
  if ! ip netns add "$ns" 2>/dev/null; then echo "netlab: cannot create a network namespace"; return 1; fi
  if ! ip netns exec "$ns" true 2>/dev/null; then
    why="'ip netns exec' fails (cannot enter namespaces or remount /sys)"
  elif ! ip -n "$ns" link add "$a" type veth peer name "$b" 2>/dev/null; then
    why="cannot create a veth pair (no veth support)"
  elif ! ip -n "$ns" link add "${a}br" type bridge 2>/dev/null; then
    why="cannot create a bridge (no bridge support)"
  elif ! ip -n "$ns" link set "$a" up 2>/dev/null || ! ip -n "$ns" link set "$b" up 2>/dev/null; then
    why="cannot bring a veth up"
  elif ! tc -n "$ns" qdisc add dev "$a" root tbf rate 10mbit burst 16kb latency 50ms 2>/dev/null; then
    why="cannot add a tbf qdisc (no sch_tbf in this kernel)"
  elif ! tc -n "$ns" qdisc show dev "$a" 2>/dev/null | grep -q '^qdisc tbf'; then
    why="a tbf qdisc was accepted but does not show"
  fi
  ip netns del "$ns" 2>/dev/null || true
  if [ -n "$why" ]; then echo "netlab: $why"; return 1; fi
  return 0
}

# _netlab_rate_bytes RATE: bytes per second for a tc rate written N[k|m|g]bit.
_netlab_rate_bytes() {
  local r=${1,,} n mult
  case "$r" in
    *gbit) n=${r%gbit}; mult=1000000000 ;;
    *mbit) n=${r%mbit}; mult=1000000 ;;
    *kbit) n=${r%kbit}; mult=1000 ;;
    *bit) n=${r%bit}; mult=1 ;;
    *) return 1 ;;
  esac
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -gt 0 ] || return 1
  echo $(( n * mult / 8 ))
}

_netlab_burst() {  # bytes per second -> tbf burst bytes (see netlab_up)
  local b=$(( $1 * 4 / 1000 ))
  [ "$b" -ge 16384 ] || b=16384
  echo "$b"
}

_netlab_subnet() {  # 10.X.0 for LAB, X in 16..250
  local sum
  sum=$(printf '%s' "$1" | cksum | cut -d' ' -f1)
  echo "10.$(( 16 + sum % 235 )).0"
}

netlab_up() {
  local lab=$1 n=$2 rate=$3 rate_bytes burst subnet i h
  if ! [[ "$lab" =~ ^[a-z][a-z0-9]{0,7}$ ]]; then
    echo "netlab_up: LAB must be 1-8 of [a-z0-9] starting with a letter, not '$lab'" >&2; return 1
  fi
  if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt 250 ]; then
    echo "netlab_up: N must be 1..250 workers, not '$n'" >&2; return 1
  fi
  if ! rate_bytes=$(_netlab_rate_bytes "$rate"); then
    echo "netlab_up: RATE must be like 100mbit, 1gbit, 512kbit, not '$rate'" >&2; return 1
  fi
  if ip netns list 2>/dev/null | grep -qE "^$lab-hub( |$)"; then
    echo "netlab_up: lab $lab already exists" >&2; return 1
  fi
  # Burst: 4 ms at RATE, at least 16 KiB. It must hold several full-size packets (a smaller
  # bucket drops or splits them and a TCP flow falls well below RATE), and 4 ms keeps line-rate
  # bursts short while the token timer fires at most ~250 times a second at any rate.
  # Latency 50 ms: the most a packet may queue before tbf drops it (queue = RATE x 50 ms), like
  # a modest office switch or router buffer; enough for one TCP flow to fill the link here
  # (veth round trips are microseconds), short enough to avoid seconds of bufferbloat.
  burst=$(_netlab_burst "$rate_bytes")
  subnet=$(_netlab_subnet "$lab")
  local hub=$lab-hub br=$lab-br
  {
    ip netns add "$hub" &&
    ip -n "$hub" link set lo up &&
    ip -n "$hub" link add "$br" type bridge &&
    ip -n "$hub" link set "$br" up
  } || { echo "netlab_up: cannot create the hub of $lab" >&2; netlab_down "$lab"; return 1; }
  for (( i = 0; i <= n; i++ )); do
    h=$lab-h$i
    {
      ip netns add "$h" &&
      ip -n "$h" link set lo up &&
      ip -n "$hub" link add "$lab-v$i" type veth peer name "$h" netns "$h" &&
      ip -n "$hub" link set "$lab-v$i" master "$br" &&
      ip -n "$hub" link set "$lab-v$i" up &&
      ip -n "$h" addr add "$subnet.$(( i + 1 ))/24" dev "$h" &&
      ip -n "$h" link set "$h" up &&
      # Uplink: what the host sends. Downlink: what the bridge sends to the host.
      tc -n "$h" qdisc add dev "$h" root tbf rate "$rate" burst "$burst" latency 50ms &&
      tc -n "$hub" qdisc add dev "$lab-v$i" root tbf rate "$rate" burst "$burst" latency 50ms
    } || { echo "netlab_up: cannot set up host $h" >&2; netlab_down "$lab"; return 1; }
  done
}

netlab_set_rate() {
  local host=$1 rate=$2 rate_bytes burst lab i
  lab=${host%-h*}
  i=${host##*-h}
  if ! rate_bytes=$(_netlab_rate_bytes "$rate"); then
    echo "netlab_set_rate: RATE must be like 100mbit, not '$rate'" >&2; return 1
  fi
  burst=$(_netlab_burst "$rate_bytes")
  tc -n "$host" qdisc change dev "$host" root tbf rate "$rate" burst "$burst" latency 50ms &&
    tc -n "$lab-hub" qdisc change dev "$lab-v$i" root tbf rate "$rate" burst "$burst" latency 50ms ||
    { echo "netlab_set_rate: cannot change $host to $rate" >&2; return 1; }
}

netlab_exec() {
  local host=$1; shift
  ip netns exec "$host" "$@"
}

netlab_addr() {
  local host=$1 lab i
  lab=${host%-h*}
  i=${host##*-h}
  echo "$(_netlab_subnet "$lab").$(( i + 1 ))"
}

netlab_dev() { echo "$1"; }

netlab_down() {
  local lab=$1 ns pids
  [[ "$lab" =~ ^[a-z][a-z0-9]{0,7}$ ]] || return 0
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$lab-(hub|h[0-9]+)$"); do
    # Processes left in the lab hold its namespace (and its veths) alive after `ip netns del`.
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    if [ -n "$pids" ]; then
      kill -9 $pids 2>/dev/null || true
    fi
    ip netns del "$ns" 2>/dev/null || true
  done
  return 0
}
