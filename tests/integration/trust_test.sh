#!/usr/bin/env bash
# Trust on a real network (issue 16, tests a, b, c, g, i, l), with real processes on 127.0.0.1:
# the port speaks only TLS 1.3; a join token pins the pool's CA (a stand-in server with another
# CA receives nothing); spent and expired tokens are refused; a revoked worker is cut at once and
# stays refused after a coordinator restart; a loopback capture of a whole job holds no secret;
# a task cannot read its worker's environment or memory through /proc.
source "$(dirname "$0")/lib.sh"

start_coordinator --lease-timeout-ms 2000

# (a) TLS only: a plain-text HTTP/2 client gets nothing; a TLS client gets TLS 1.3.
if curl -sS --max-time 5 --http2-prior-knowledge "http://$ADDR/idlepool.v1.Jobs/ListJobs" \
    -H 'content-type: application/grpc' -d '' >"$T/plain.out" 2>&1; then
  fail "a plain-text HTTP/2 request was answered: $(cat "$T/plain.out")"
fi
openssl s_client -connect "$ADDR" -alpn h2 -servername localhost </dev/null >"$T/s_client.out" 2>&1 || true
grep -q "TLSv1.3" "$T/s_client.out" || fail "no TLS 1.3 on the port: $(head -30 "$T/s_client.out")"
pass "(a) the coordinator's port speaks only TLS (1.3)"

# (b) A join token whose CA pin is not the server's: the worker stops before sending the secret.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=impostor \
  -keyout "$T/imp.key" -out "$T/imp.pem" >/dev/null 2>&1
IMP_PORT=$(( 20000 + RANDOM % 20000 ))
openssl s_server -accept "127.0.0.1:$IMP_PORT" -cert "$T/imp.pem" -key "$T/imp.key" -alpn h2 \
  -quiet >"$T/impostor.out" 2>"$T/impostor.err" &
PIDS+=($!)
wait_until 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$IMP_PORT"
JOIN=$(cat "$JOIN_TOKEN_FILE")
SECRET=${JOIN##*.}
rc=0
IDLEPOOL_JOIN_TOKEN=$JOIN "$IDLEPOOL" worker --name imp --work-dir "$T/imp" \
  --join "127.0.0.1:$IMP_PORT" >"$T/imp.log" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "joining an impostor exited $rc, want 2: $(cat "$T/imp.log")"
grep -q "not the pool this token" "$T/imp.log" || fail "impostor message: $(cat "$T/imp.log")"
[ "$(grep -c "^idlepool worker:" "$T/imp.log")" = 1 ] && ! grep -q "\] \[\(warning\|error\)\]" "$T/imp.log" \
  || fail "not one line for a pin mismatch: $(cat "$T/imp.log")"
! grep -qF "$SECRET" "$T/impostor.out" || fail "the impostor received the join secret"
[ ! -e "$T/imp/identity/key.pem" ] || fail "a key was made for an impostor"
pass "(b) a wrong CA pin: exit 2, one line, the stand-in server received no secret"

# (c) A spent token (--uses 1) and an expired one (--ttl 1s) are refused, one line, exit 2.
"$IDLEPOOL" token create --role worker --uses 1 --data-dir "$T/coord" >"$T/once.token" 2>/dev/null
mkdir -p "$T/no-sensors"
"$IDLEPOOL" worker --name once-a --work-dir "$T/once-a" --join "$ADDR" --token-file "$T/once.token" \
  --sensors-dir "$T/no-sensors" --dedicated >"$T/once-a.log" 2>&1 &
ONCE_A=$!; PIDS+=($ONCE_A)
wait_until 30 is_connected once-a
rc=0
"$IDLEPOOL" worker --name once-b --work-dir "$T/once-b" --join "$ADDR" --token-file "$T/once.token" \
  >"$T/once-b.log" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q "spent" "$T/once-b.log" || fail "spent token: rc $rc: $(cat "$T/once-b.log")"
"$IDLEPOOL" token create --role worker --ttl 1s --data-dir "$T/coord" >"$T/short.token" 2>/dev/null
sleep 2  # the token's lifetime must pass; nothing else is waited for
rc=0
"$IDLEPOOL" worker --name late --work-dir "$T/late" --join "$ADDR" --token-file "$T/short.token" \
  >"$T/late.log" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q "expired" "$T/late.log" || fail "expired token: rc $rc: $(cat "$T/late.log")"
pass "(c) spent and expired join tokens are refused"

# (g) Revoked: the live session is cut at once, the worker exits, and stays refused after a restart.
"$IDLEPOOL" workers revoke once-a --data-dir "$T/coord" >"$T/revoke.out" || fail "revoke failed"
grep -q "session was cut" "$T/revoke.out" || fail "revoke: $(cat "$T/revoke.out")"
wait_until 30 grep -q "revoked" "$T/once-a.log"
wait_until 30 dead "$ONCE_A"  # refused from then on, it stops rather than retry
rc=0; wait "$ONCE_A" || rc=$?
[ "$rc" = 2 ] || fail "the revoked worker exited $rc, not 2 (systemd would restart it)"
kill -TERM "$COORD_PID"; wait "$COORD_PID" 2>/dev/null || true
start_coordinator --lease-timeout-ms 2000
rc=0
"$IDLEPOOL" worker --work-dir "$T/once-a" --join "$ADDR" >"$T/once-a2.log" 2>&1 &
pid=$!; PIDS+=($pid)
wait_until 30 dead "$pid"
wait "$pid" || rc=$?
# Exit 2: the systemd unit's RestartPreventExitStatus, so a revoked machine is not restarted.
[ "$rc" = 2 ] && grep -q "revoked" "$T/once-a2.log" || fail "revoked worker after restart: rc $rc: $(cat "$T/once-a2.log")"
pass "(g) a revoked worker is cut and refused, also after a coordinator restart"

# (i) A loopback capture of a whole job (join, submit, run, fetch) holds none of the secrets.
capturing() { grep -q "listening on" "$T/tcpdump.log" || dead "$TCPDUMP"; }
TCPDUMP=
if command -v tcpdump >/dev/null; then
  tcpdump -i lo -U -w "$T/cap.pcap" "tcp port $PORT" >"$T/tcpdump.log" 2>&1 &
  TCPDUMP=$!; PIDS+=($TCPDUMP)
  wait_until 10 capturing
fi
if [ -n "$TCPDUMP" ] && ! dead "$TCPDUMP"; then
  start_worker cap --slots 1
  wait_until 30 is_connected cap
  printf 'name = "cap"\ncommand = ["sh", "-c", "echo frame {frame} > out.txt"]\nframes = "1-3"\noutputs = ["out.txt"]\n' >"$T/cap.toml"
  JOB=$("$IDLEPOOL" submit "$T/cap.toml")
  "$IDLEPOOL" wait "$JOB" >/dev/null
  "$IDLEPOOL" fetch "$JOB" --out "$T/cap-out" >/dev/null
  kill -INT "$TCPDUMP"; wait "$TCPDUMP" 2>/dev/null || true
  [ -s "$T/cap.pcap" ] || fail "nothing captured"
  for secret in "${TOKEN##*.}" "${JOIN##*.}" "$(sed -n 2p "$T/coord/ca.key" | cut -c1-40)" \
      "$(sed -n 2p "$T/cap/identity/key.pem" | cut -c1-40)"; do
    ! grep -aqF "$secret" "$T/cap.pcap" || fail "a secret crossed loopback in clear text"
  done
  grep -aqF "frame 1" "$T/cap.pcap" && fail "task output crossed loopback in clear text"
  pass "(i) a capture of join, submit, run and fetch holds no secret in clear text"
  kill -TERM "$WPID_cap"; wait_until 30 dead "$WPID_cap"
else
  echo "skip (i): cannot capture on lo here"
fi

# (l) A task cannot read its worker's environment or memory through /proc. Root may read any
# process, so the worker runs as an unprivileged user here, as a lent machine's owner would.
# --no-sandbox: this is the defence that holds even then (non-dumpable); a sandboxed task does not
# see its worker at all (sandbox_test (a)).
if id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
  chmod 711 "$T"; mkdir -p "$T/nobody"; chmod 777 "$T/nobody"; chmod 755 "$T/no-sensors"
  IDLEPOOL_JOIN_TOKEN=$JOIN setpriv --reuid=nobody --regid=nogroup --clear-groups \
    "$IDLEPOOL" worker --name unpriv --work-dir "$T/nobody/w" --join "$ADDR" --no-sandbox \
    --sensors-dir "$T/no-sensors" --dedicated >"$T/unpriv.log" 2>&1 &
  PIDS+=($!)
  wait_until 30 is_connected unpriv
  cat >"$T/peek.toml" <<'TOML'
name = "peek"
count = 1
outputs = ["out.txt", "err.txt"]
allow_empty_outputs = true
command = ["sh", "-c", "for p in $(pgrep -u nobody -x idlepool); do cat /proc/$p/environ; head -c 64 /proc/$p/mem; done > out.txt 2> err.txt; echo done >> err.txt"]
TOML
  JOB=$("$IDLEPOOL" submit "$T/peek.toml")
  "$IDLEPOOL" wait "$JOB" >/dev/null || fail "the peek job failed: $("$IDLEPOOL" status "$JOB" 2>&1)"
  "$IDLEPOOL" fetch "$JOB" --out "$T/peek" >/dev/null
  err=$(find "$T/peek" -name err.txt -exec cat {} +)
  out=$(find "$T/peek" -name out.txt -exec cat {} + | tr '\0' '\n')
  echo "$err" | grep -q "Permission denied" || fail "the task read its worker through /proc: $err"
  ! echo "$out" | grep -qF "$SECRET" || fail "the join secret was readable by a task"
  pass "(l) a task cannot read its worker's environment or memory"
else
  echo "skip (l): no unprivileged user to run the worker as"
fi
