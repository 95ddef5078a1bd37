# attack_fd_flood: floods the coordinator's gRPC port, then every worker's peer port, with idle
# TCP connections (nothing sent, never closed by the attacker) from several loopback source
# addresses (127.0.0.2 ... when the target is on loopback; one address otherwise), reconnecting
# whatever the server closes, held for FD_FLOOD_HOLD_S seconds (default 4) per target. The
# number of connections is FD_FLOOD_SOURCES (default 8) x FD_FLOOD_PER_SOURCE (default 200) per
# target: more than the usual soft limit of 1,024 descriptors. It prints, per target, the peak of
# the target process's open descriptors (/proc/PID/fd), how many connections were open at once
# and how many the server closed. Against idlepool before issue 21 the first one left the
# coordinator's gRPC listener dead for good ("Failed accept4: Too many open files"), and a
# worker's peer port flood failed every task it ran ("pipe2 failed").
#
# Needs python3 (the flood itself: one process holding the sockets, its own descriptor limit
# raised to its hard limit) and jq. Uses ADDR, COORD_PID, IDLEPOOL (with IDLEPOOL_COORDINATOR /
# IDLEPOOL_TOKEN for `workers --json`), T and WORKER_PIDS from the runner; the helpers
# fd_flood_start / fd_flood_stop / fd_count are also used by tests/integration/fd_flood_test.sh.

# fd_count PID: open descriptors of PID (0 when it is gone).
fd_count() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }

# fd_flood_start HOST:PORT SOURCES PER_SOURCE NAME [RECONNECT]: starts holding PER_SOURCE
# connections from each of SOURCES (comma-separated addresses to bind, or "-" for the default)
# in the background and returns once every connect has been tried. With RECONNECT 1 (the
# default) it opens a new connection for each one the server closes, at most 500 a second.
# $T/NAME.flood.json says how it went once fd_flood_stop NAME has ended it: connects,
# closed_by_server, peak_open and open_at_end (connections the server had not closed).
fd_flood_start() {
  local target=$1 sources=$2 per=$3 name=$4 reconnect=${5:-1}
  : >"$T/$name.flood.hold"
  rm -f "$T/$name.flood.json"
  python3 - "$target" "$sources" "$per" "$T/$name.flood.hold" "$T/$name.flood.json" \
    "$reconnect" >"$T/$name.flood.log" 2>&1 <<'PY' &
import errno, json, os, resource, select, socket, sys, time
target, sources, per, hold, out, reconnect = sys.argv[1:7]
host, port = target.rsplit(":", 1)
host, port, per, reconnect = host.strip("[]"), int(port), int(per), reconnect == "1"
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
sources = [None if s == "-" else s for s in sources.split(",")]
stats = {"connects": 0, "connect_errors": 0, "closed_by_server": 0, "peak_open": 0}
socks = {}  # fd -> (socket, source)

def dial(src):
    try:
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    except OSError:
        return None
    s.setblocking(False)
    try:
        if src:
            s.bind((src, 0))
        s.connect((host, port))
    except BlockingIOError:
        pass
    except OSError:
        stats["connect_errors"] += 1
        s.close()
        return None
    stats["connects"] += 1
    socks[s.fileno()] = (s, src)
    return s.fileno()

for src in sources:
    for _ in range(per):
        dial(src)
open(hold + ".ready", "w").close()
poller = select.poll()
for fd in socks:
    poller.register(fd, select.POLLIN)
redial, last_redial = [], 0.0
while os.path.exists(hold):
    stats["peak_open"] = max(stats["peak_open"], len(socks))
    for fd, ev in poller.poll(100):
        if fd not in socks:
            continue
        s, src = socks.pop(fd)
        poller.unregister(fd)
        stats["closed_by_server"] += 1
        s.close()
        if reconnect:
            redial.append(src)
    if redial and time.monotonic() - last_redial >= 0.1:
        last_redial = time.monotonic()
        for src in redial[:50]:  # keep the pressure on, 500 connects a second at most
            nfd = dial(src)
            if nfd is not None:
                poller.register(nfd, select.POLLIN)
        del redial[:50]
stats["open_at_end"] = len(socks)
for s, _ in socks.values():
    s.close()
json.dump(stats, open(out, "w"))
PY
  printf -v "FD_FLOOD_PID_$name" '%s' "$!"
  local i
  for ((i = 0; i < 600; i++)); do
    [ -e "$T/$name.flood.hold.ready" ] && return 0
    kill -0 "$!" 2>/dev/null || break
    sleep 0.05
  done
  echo "fd_flood: the flood against $target did not start; see $T/$name.flood.log" >&2
  return 1
}

# fd_flood_stop NAME: closes the flood's connections; its stats are in $T/NAME.flood.json.
fd_flood_stop() {
  local name=$1 pidvar="FD_FLOOD_PID_$1" i
  rm -f "$T/$name.flood.hold" "$T/$name.flood.hold.ready"
  wait "${!pidvar}" 2>/dev/null || true
  for ((i = 0; i < 200; i++)); do  # in a subshell, wait cannot wait for it
    [ -e "$T/$name.flood.json" ] && return 0
    sleep 0.05
  done
}

# fd_sampler_start NAME PID / fd_sampler_stop NAME: samples PID's descriptors every 50 ms in the
# background; stop prints the most it saw (it may run in a $(...) subshell: it waits for the
# sampler's file, not for the process).
fd_sampler_start() {
  rm -f "$T/$1.peak"
  : >"$T/$1.sampling"
  (
    peak=0
    while [ -e "$T/$1.sampling" ]; do
      n=$(fd_count "$2")
      [ "$n" -gt "$peak" ] && peak=$n
      sleep 0.05
    done
    echo "$peak" >"$T/$1.peak.tmp" && mv "$T/$1.peak.tmp" "$T/$1.peak"
  ) &
}
fd_sampler_stop() {
  local i
  rm -f "$T/$1.sampling"
  for ((i = 0; i < 200; i++)); do
    [ -e "$T/$1.peak" ] && break
    sleep 0.05
  done
  cat "$T/$1.peak" 2>/dev/null || echo "fd_sampler: no peak for $1" >&2
}

# fd_flood_sources HOST N: N loopback source addresses for a loopback HOST, else "-".
fd_flood_sources() {
  local host=$1 n=$2 i out=""
  case "$host" in
    127.*) for ((i = 2; i < n + 2; i++)); do out+="${out:+,}127.0.0.$i"; done ;;
    *) out="-" ;;
  esac
  echo "$out"
}

# fd_flood_one NAME HOST:PORT PID: one held flood against a target, sampling PID's descriptors.
fd_flood_one() {
  local name=$1 target=$2 pid=$3 peak
  fd_sampler_start "$name" "$pid"
  fd_flood_start "$target" "$(fd_flood_sources "${target%:*}" "${FD_FLOOD_SOURCES:-8}")" \
    "${FD_FLOOD_PER_SOURCE:-200}" "$name" || { fd_sampler_stop "$name" >/dev/null; return 1; }
  sleep "${FD_FLOOD_HOLD_S:-4}"  # the attack's length, not a wait for a result
  fd_flood_stop "$name"
  peak=$(fd_sampler_stop "$name")
  echo "fd_flood $name ($target, pid $pid): peak fds $peak, limit $(awk '/open files/ {print $4}' "/proc/$pid/limits" 2>/dev/null); flood $(cat "$T/$name.flood.json" 2>/dev/null)"
}

# pid_listening_on PORT PID...: which of the PIDs listens on TCP PORT (empty when none).
pid_listening_on() {
  local port=$1 inode pid; shift
  inode=$(awk -v p="$(printf '%04X' "$port")" '$4 == "0A" && $2 ~ ":" p "$" {print $10; exit}' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null)
  [ -n "$inode" ] || return 0
  for pid in "$@"; do
    ls -l "/proc/$pid/fd" 2>/dev/null | grep -q "socket:\[$inode\]" && { echo "$pid"; return 0; }
  done
}

attack_fd_flood() {
  fd_flood_one coordinator "$ADDR" "$COORD_PID"
  local i=0 addr pid
  # Each worker's peer port, as the coordinator lists it (the address it connects from).
  while read -r addr; do
    [ -n "$addr" ] || continue
    i=$((i + 1))
    case "$addr" in 0.0.0.0:*) addr=127.0.0.1:${addr##*:} ;; esac
    pid=$(pid_listening_on "${addr##*:}" "${WORKER_PIDS[@]}")
    fd_flood_one "peer$i" "$addr" "${pid:-0}"
  done < <("$IDLEPOOL" workers --json | jq -r '.workers[] | select(.state=="connected") | .peer_address')
}
