#!/usr/bin/env bash
# Every client error a person meets names what failed and what to do, in one line: a coordinator
# that refuses the connection, a name that does not resolve, one that does not answer, another
# pool's CA, a token unknown, expired or revoked, a role too low (naming the role needed). Each
# both before the pool's CA is known (the pinned fetch) and, where it differs, in a call (gRPC).
# A saved login's address is used whenever no address is given.
source "$(dirname "$0")/lib.sh"
start_coordinator
pin_of() { echo "$1" | sed -E 's/^ipt1_([0-9a-f]{64})_.*/\1/'; }
id_of() { echo "$1" | sed -E 's/.*_([0-9a-f]{12})\..*/\1/'; }

# expect NAME RC WORDS... -- CMD...: CMD exits RC with exactly one line on stderr holding every
# one of WORDS (fixed strings).
expect() {
  local name=$1 want=$2 words=() rc=0
  shift 2
  while [ "$1" != -- ]; do words+=("$1"); shift; done
  shift
  "$@" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
  [ "$rc" = "$want" ] || fail "$name: exit $rc, want $want: $(cat "$T/$name.err")"
  [ "$(wc -l <"$T/$name.err")" = 1 ] || fail "$name: not one line: $(cat "$T/$name.err")"
  for w in "${words[@]}"; do
    grep -qF -- "$w" "$T/$name.err" || fail "$name: no '$w' in: $(cat "$T/$name.err")"
  done
  ! grep -q "failed to connect to all addresses\|C-ares\|ARES_" "$T/$name.err" ||
    fail "$name: raw gRPC text: $(cat "$T/$name.err")"
}

# A port nothing listens on: a coordinator's, stopped.
"$IDLEPOOL" coordinator --listen 127.0.0.1:0 --data-dir "$T/gone" --http off --serve-listen off \
  >"$T/gone.log" 2>&1 &
GONE_PID=$!; PIDS+=($GONE_PID)
wait_until 30 grep -q "listening on" "$T/gone.log"
CLOSED=127.0.0.1:$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$T/gone.log" | head -1)
kill -TERM "$GONE_PID"; wait "$GONE_PID" || true

# 1. Unreachable, before the CA is known (no saved login): refused, no such name, no answer.
expect refused 1 "cannot reach the coordinator at $CLOSED" "connection refused" \
  "start \`idlepool coordinator\` there" "IDLEPOOL_COORDINATOR" -- \
  env IDLEPOOL_COORDINATOR="$CLOSED" "$IDLEPOOL" status
expect noname 1 "cannot reach the coordinator at nohost.invalid:7878" \
  "the name nohost.invalid does not resolve" "--coordinator" -- \
  "$IDLEPOOL" status --coordinator nohost.invalid:7878
# A coordinator that accepts connections but never answers: stopped (the kernel still completes
# the TCP handshake); the client gives up after its own deadline.
kill -STOP "$COORD_PID"
expect silent 1 "the coordinator at $ADDR did not answer in time" "port is open" -- \
  "$IDLEPOOL" status
kill -CONT "$COORD_PID"
pass "unreachable before the CA is known: refused, unresolved, silent: one line each"

# 2. The same in a call, once a login saved the pool's CA (gRPC's own text never shows).
"$IDLEPOOL" login "$ADDR" >/dev/null 2>&1 <<<"$TOKEN" || fail "login failed"
expect refused-call 1 "cannot reach the coordinator at $CLOSED" "connection refused" -- \
  "$IDLEPOOL" status --coordinator "$CLOSED"
expect noname-call 1 "the name nohost.invalid does not resolve" -- \
  "$IDLEPOOL" status --coordinator nohost.invalid:7878
pass "unreachable in a call: one line each"

# 3. A saved login's address is used whenever no address is given, with a token of the
# environment too (before, that went to 127.0.0.1:7878).
READ=$("$IDLEPOOL" token create --role read --data-dir "$T/coord" 2>/dev/null)
env -u IDLEPOOL_COORDINATOR IDLEPOOL_TOKEN="$READ" "$IDLEPOOL" workers --json >"$T/saved.json" \
  2>"$T/saved.err" || fail "IDLEPOOL_TOKEN without IDLEPOOL_COORDINATOR: $(cat "$T/saved.err")"
jq -e .workers "$T/saved.json" >/dev/null || fail "saved address: $(cat "$T/saved.json")"
pass "a saved login's address is used when no address is given"

# 4. Another pool's coordinator: the pin does not match, nothing is sent; exit 2.
"$IDLEPOOL" coordinator --listen 127.0.0.1:0 --data-dir "$T/other" --http off --serve-listen off \
  >"$T/other.log" 2>&1 &
PIDS+=($!)
wait_until 30 grep -q "listening on" "$T/other.log"
OTHER=127.0.0.1:$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$T/other.log" | head -1)
expect pin 2 "$OTHER is not the pool this token was made for" "sha256:$(pin_of "$TOKEN")" \
  "nothing was sent" "use a token of the pool that runs there" -- \
  env XDG_CONFIG_HOME="$T/nologin" "$IDLEPOOL" status --coordinator "$OTHER"
# In a call (the login's CA is this pool's): the other's certificate does not verify.
expect pin-call 1 "no TLS connection with $OTHER" "not signed by this pool's CA" -- \
  "$IDLEPOOL" status --coordinator "$OTHER"
pass "another pool's CA: one line, what to check"

# 5. Tokens the coordinator refuses: unknown, revoked, expired; each says how to get a new one.
UNKNOWN=$(echo "$TOKEN" | sed -E 's/_[0-9a-f]{12}\./_000000000000./')
expect unknown 1 "refused the access token" "000000000000" \
  "\`idlepool token create --role submit\` on the coordinator" "idlepool login $ADDR" -- \
  env IDLEPOOL_TOKEN="$UNKNOWN" "$IDLEPOOL" status
REVOKED=$("$IDLEPOOL" token create --role submit --data-dir "$T/coord" 2>/dev/null)
"$IDLEPOOL" token revoke "$(id_of "$REVOKED")" --data-dir "$T/coord" >/dev/null
expect revoked 1 "refused the access token" "revoked" "idlepool login $ADDR" -- \
  env IDLEPOOL_TOKEN="$REVOKED" "$IDLEPOOL" status
SHORT=$("$IDLEPOOL" token create --role submit --ttl 1s --data-dir "$T/coord" 2>/dev/null)
wait_until 30 sh -c "! IDLEPOOL_TOKEN='$SHORT' '$IDLEPOOL' status >/dev/null 2>&1"
expect expired 1 "refused the access token" "expired" "idlepool login $ADDR" -- \
  env IDLEPOOL_TOKEN="$SHORT" "$IDLEPOOL" status
pass "unknown, revoked and expired tokens: one line each, how to get a new one"

# 6. A role too low: the call names the role it needs and how to get a token of it.
cat >"$T/job.toml" <<'TOML'
name = "one"
command = ["true"]
count = 1
TOML
expect role 1 "needs role submit" "idlepool token create --role submit" "read" -- \
  env IDLEPOOL_TOKEN="$READ" "$IDLEPOOL" submit "$T/job.toml"
pass "a read token submitting: names the role needed"
