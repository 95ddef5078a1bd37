#!/usr/bin/env bash
# A service job (issue 17, point 1) on real workers: its replicas run one per machine, each
# listening on the port its worker picked ({port} in its command, IDLEPOOL_PORT), inside the
# sandbox where the machine has one (its own loopback: checked from inside its network); a
# replica killed with SIGKILL is restarted (after its backoff), never failing the service; a
# cancel stops every replica and ends the service. The replica is the fake engine
# (tests/tools/fake_engine.cc), standing in for llama-server.
source "$(dirname "$0")/lib.sh"
ENGINE=$(dirname "$IDLEPOOL")/idlepool-fake-engine
[ -x "$ENGINE" ] || { echo "SKIP: no $ENGINE"; exit 77; }

# engine_pid W: the PID of worker W's replica (its environment names W's work dir), or nothing.
engine_pid() {
  local e p
  for e in $(grep -lz "^IDLEPOOL_WORK_DIR=$(readlink -f "$T/$1")\$" /proc/[0-9]*/environ 2>/dev/null); do
    p=${e#/proc/}; p=${p%/environ}
    tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q "idlepool-fake-engine" && { echo "$p"; return 0; }
  done
  return 1
}
# port_of PID: its IDLEPOOL_PORT.
port_of() { tr '\0' '\n' <"/proc/$1/environ" | sed -n 's/^IDLEPOOL_PORT=//p'; }
# healthy PID: its engine answers 200 on /health at IDLEPOOL_PORT, asked from inside its network.
healthy() {
  local pid=$1 url
  url="http://127.0.0.1:$(port_of "$pid")/health"
  if [ "$SANDBOX_TIER" = none ]; then
    curl -fsS -o /dev/null "$url" 2>/dev/null  # unsandboxed: the same network
  elif [ "$(id -u)" = 0 ]; then
    nsenter --target "$pid" --net curl -fsS -o /dev/null "$url" 2>/dev/null
  else  # tier userns: this user owns the sandbox's user namespace
    nsenter --target "$pid" --user --net --preserve-credentials curl -fsS -o /dev/null "$url" 2>/dev/null
  fi
}
running_is() { [ "$(job_field "$JOB" running)" = "$1" ]; }

start_coordinator
start_worker w1 --slots 2
start_worker w2 --slots 2
wait_until 20 is_connected w1
wait_until 20 is_connected w2
cat >"$T/chat.toml" <<TOML
name = "chat"
command = ["$ENGINE", "--port", "{port}", "--model", "tiny", "--id", "r{replica}"]
[service]
protocol = "openai"
model = "tiny"
replicas = 2
TOML
JOB=$("$IDLEPOOL" submit "$T/chat.toml")
wait_until 30 running_is 2
wait_until 20 engine_pid w1
wait_until 20 engine_pid w2
P1=$(engine_pid w1)
P2=$(engine_pid w2)
grep -qz -- "--port" "/proc/$P1/cmdline" || fail "no --port in the replica's command"
[ "$(tr '\0' '\n' <"/proc/$P1/cmdline" | sed -n '/^--port$/{n;p}')" = "$(port_of "$P1")" ] ||
  fail "{port} and IDLEPOOL_PORT differ"
wait_until 20 healthy "$P1"
wait_until 20 healthy "$P2"
[ "$(job_field "$JOB" state)" = running ] || fail "the service is not running"
pass "2 replicas, one per worker, each answering on the port its worker picked"

kill -9 "$P1"
restarted() { local p; p=$(engine_pid w1) && [ "$p" != "$P1" ] && healthy "$p"; }
wait_until 30 restarted
wait_until 20 running_is 2
[ "$(job_field "$JOB" state)" = running ] || fail "a killed replica ended the service"
[ "$(job_field "$JOB" attempts)" -ge 3 ] || fail "attempts $(job_field "$JOB" attempts)"
[ "$(job_field "$JOB" failed)" = 0 ] || fail "a replica's task failed"
pass "a replica killed with SIGKILL is restarted; the service runs on"

# idlepool scale: by name; down to 1 stops a replica, past max_replicas is refused naming it, up
# to 2 starts one again.
"$IDLEPOOL" scale chat 1 | grep -q "1 replicas" || fail "scale chat 1"
wait_until 20 running_is 1
engines() { local n=0; engine_pid w1 >/dev/null && n=$((n + 1)); engine_pid w2 >/dev/null && n=$((n + 1)); echo $n; }
one_left() { [ "$(engines)" = 1 ]; }
wait_until 20 one_left
out=$("$IDLEPOOL" scale "$JOB" 3 2>&1) && fail "scaled past max_replicas: $out"
echo "$out" | grep -q "at most 2 replicas" || fail "the refusal does not name the limit: $out"
"$IDLEPOOL" scale "$JOB" 2 >/dev/null || fail "scale back to 2"
wait_until 30 running_is 2
[ "$(job_field "$JOB" state)" = running ] || fail "scaling ended the service"
pass "scale down to 1 stops a replica, past max_replicas is refused, back to 2 starts one"

"$IDLEPOOL" cancel "$JOB" >/dev/null
gone() { ! engine_pid w1 >/dev/null && ! engine_pid w2 >/dev/null; }
wait_until 20 gone
wait_until 20 test "$(job_field "$JOB" state)" = cancelled
pass "cancel stops every replica and ends the service"
