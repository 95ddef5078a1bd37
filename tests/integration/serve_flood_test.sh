#!/usr/bin/env bash
# Hostile clients of serving's two ports, with no credential (issue 31, point 4). The coordinator
# (with its gateway) and a worker (with its tunnel port and a replica) run under a descriptor
# limit of 256 (prlimit), so that a flood of a few hundred connections is past it:
#   1. a request with a wrong key and a declared 8 MiB body is answered 401 from its head, before
#      any body is sent; 40 such requests that do send their 8 MiB each grow the coordinator's
#      peak memory by far less than the bodies (it read and kept every body before its key);
#   2. 400 idle connections from one address (127.0.0.2) to the gateway: it keeps at most that
#      address's cap (a quarter of 256 - 64 = 48), closes those when their first request is late,
#      and meanwhile answers a chat completion (curl with a key), `idlepool workers`, and logs a
#      bounded number of lines (it accepted all of them and ran out of descriptors, logging each
#      failed accept);
#   3. 400 idle connections from one address to the worker's tunnel port: the worker keeps a
#      quarter of its descriptors for its tasks, so a job of 10 tasks that use pipes runs during
#      the flood with no failure and no machine fault, and requests through the gateway succeed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
source "$(dirname "$0")/../../bench/attacks/fd_flood.sh"
need_engine
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
kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
fds_at_most() { [ "$(fd_count "$1")" -le "$2" ]; }
opened() { jq -r ".$2" "$T/$1.flood.json"; }
lines() { wc -l <"$1"; }

IDLEPOOL=$(limited 256:256) start_coordinator --serve-listen 127.0.0.1:0
GW=$(gateway_url)
[ -n "$GW" ] || fail "the coordinator did not start its gateway"
CA=$T/coord/ca.pem
IDLEPOOL=$(limited 256:256) start_worker w1 --slots 2
wait_until 20 is_connected w1
cat >"$T/chat.toml" <<TOML
name = "chat"
command = ["$ENGINE", "--port", "{port}", "--model", "tiny", "--tokens", "4", "--token-ms", "1"]
[service]
protocol = "openai"
model = "tiny"
replicas = 1
TOML
"$IDLEPOOL" submit "$T/chat.toml" >/dev/null
wait_until 60 ready_is 1
wait_until 30 chat_200
cat >"$T/pipes.toml" <<'TOML'
name = "pipes"
command = ["sh", "-c", "echo {index} | cat | cat > out-{index}.txt"]
count = 10
outputs = ["out-*.txt"]
[retry]
max_attempts = 1
TOML
HOSTPORT=${GW#https://}

# 1. The key before the body.
python3 - "$HOSTPORT" "$CA" <<'PY' || fail "a request with a wrong key was not answered 401 before its body"
import socket, ssl, sys
host, port = sys.argv[1].rsplit(":", 1)
ctx = ssl.create_default_context(cafile=sys.argv[2])
for auth in ("Authorization: Bearer not-a-key\r\n", ""):
    s = ctx.wrap_socket(socket.create_connection((host, int(port))), server_hostname=host)
    s.settimeout(30)  # a bound on a hang: the old gateway waited for the body, then closed
    s.sendall(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + auth +
               "Content-Type: application/json\r\nContent-Length: 8388608\r\n\r\n").encode())
    head = b""
    while b"\r\n" not in head:
        try:
            piece = s.recv(4096)
        except (socket.timeout, OSError) as e:
            sys.exit(f"no answer before the body ({auth.strip() or 'no key'}): {e}")
        if not piece:
            sys.exit(f"closed without an answer ({auth.strip() or 'no key'})")
        head += piece
    if not head.startswith(b"HTTP/1.1 401"):
        sys.exit(f"answered {head[:40]!r}")
    s.close()
PY
rss=$(kb "$COORD_PID" VmRSS)
python3 - "$HOSTPORT" "$CA" <<'PY'
import socket, ssl, sys, threading
host, port = sys.argv[1].rsplit(":", 1)
ctx = ssl.create_default_context(cafile=sys.argv[2])
body = b"x" * (8 << 20)
def one():
    try:
        s = ctx.wrap_socket(socket.create_connection((host, int(port))), server_hostname=host)
        s.settimeout(30)
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer bad\r\n"
                  b"Content-Type: application/json\r\nContent-Length: 8388608\r\n\r\n" + body)
        s.recv(4096)
        s.close()
    except OSError:
        pass  # the gateway may close before the whole body went: that is the point
threads = [threading.Thread(target=one) for _ in range(40)]
for t in threads: t.start()
for t in threads: t.join()
PY
hwm=$(kb "$COORD_PID" VmHWM)
echo "coordinator: VmRSS $rss kB before 40 x 8 MiB bodies with a wrong key, peak $hwm kB"
[ "$hwm" -le $((rss + 65536)) ] || fail "the coordinator's peak memory grew by $((hwm - rss)) kB for bodies it should not read"
wait_until 30 chat_200
pass "a wrong key is answered 401 from the head; 40 x 8 MiB of refused bodies grew the peak by $((hwm - rss)) kB"

# 2. The gateway flooded from one address.
C_FDS=$(fd_count "$COORD_PID") C_LINES=$(lines "$T/coordinator.log")
fd_sampler_start gw "$COORD_PID"
fd_flood_start "$HOSTPORT" 127.0.0.2 400 gw 0
chat_200 || fail "the gateway refused a client with a key during the flood: $(cat "$T/answer")"
"$IDLEPOOL" workers --json >/dev/null || fail "the coordinator did not answer \`workers\` during the flood"
wait_until 30 fds_at_most "$COORD_PID" $((C_FDS + 8))
fd_flood_stop gw
peak=$(fd_sampler_stop gw)
added=$(($(lines "$T/coordinator.log") - C_LINES))
echo "gateway flood: $(cat "$T/gw.flood.json"); coordinator at most $peak fds (idle $C_FDS), $added log lines"
[ "$peak" -le $((C_FDS + 48 + 16)) ] || fail "coordinator at $peak fds during the gateway flood (idle $C_FDS)"
[ "$(opened gw closed_by_server)" = 400 ] || fail "the gateway left $(opened gw open_at_end) idle connections open"
[ "$added" -le 20 ] || fail "$added log lines for one flood: $(tail -5 "$T/coordinator.log")"
pass "400 idle connections to the gateway from one address: at most $((peak - C_FDS)) more fds, all closed, $added log lines; a key and \`workers\` answered meanwhile"

# 3. The worker's tunnel port flooded from one address, the worker running tasks.
TUNNEL=$(sed -n 's/.*tunnel: accepting on [^ ]*:\([0-9]*\).*/\1/p' "$T/w1.log" | tail -1)
[ -n "$TUNNEL" ] || fail "no tunnel port in w1's log"
W_FDS=$(fd_count "$WPID_w1") W_LINES=$(lines "$T/w1.log")
fd_sampler_start tun "$WPID_w1"
fd_flood_start "127.0.0.1:$TUNNEL" 127.0.0.2 400 tun 0
JOB=$("$IDLEPOOL" submit "$T/pipes.toml")
wait_until 90 job_done "$JOB"
chat_200 || fail "a request through the flooded tunnel failed: $(cat "$T/answer")"
fd_flood_stop tun
peak=$(fd_sampler_stop tun)
added=$(($(lines "$T/w1.log") - W_LINES))
echo "tunnel flood: $(cat "$T/tun.flood.json"); worker at most $peak fds (idle $W_FDS), $added log lines"
[ "$(job_field "$JOB" state)" = succeeded ] || fail "job $JOB during the tunnel flood: $("$IDLEPOOL" status "$JOB")"
[ "$(job_field "$JOB" machine_faults)" = 0 ] || fail "job $JOB: machine faults during the tunnel flood"
[ "$(job_field "$JOB" failures)" = 0 ] || fail "job $JOB: failures during the tunnel flood"
[ "$(opened tun open_at_end)" -le 48 ] || fail "the tunnel port kept $(opened tun open_at_end) connections from one address"
[ "$peak" -le 240 ] || fail "worker at $peak fds during the tunnel flood: close to its limit of 256"
[ "$added" -le 40 ] || fail "$added log lines for one flood: $(tail -5 "$T/w1.log")"
pass "400 idle connections to w1's tunnel port from one address: worker at most $peak fds, job $JOB ran 10 tasks with no failure, $added log lines"
