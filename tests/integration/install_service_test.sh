#!/usr/bin/env bash
# --install-service refuses, before it touches the machine, what it cannot do, each with a line
# that says what to do: not root, a work or data dir other than the service's, an option value
# the unit's environment file cannot carry, a machine without the package's user. (The install
# itself, in a pristine bookworm root with the package, is scripts/package-check.sh.)
source "$(dirname "$0")/lib.sh"
echo "ipj1_not_a_real_token" >"$T/join.token"
# expect RC TEXT COMMAND...: COMMAND exits RC and says TEXT on stderr.
expect() {
  local want=$1 text=$2 rc=0; shift 2
  "$@" >"$T/out.log" 2>"$T/err.log" || rc=$?
  [ "$rc" = "$want" ] || fail "$* exited $rc, want $want: $(cat "$T/err.log")"
  grep -qF -- "$text" "$T/err.log" || fail "$*: stderr lacks '$text': $(cat "$T/err.log")"
}
snapshot() { ls -la --time-style=full-iso /etc/idlepool /var/lib/idlepool 2>&1 || true; }
before=$(snapshot)

expect 2 "--data-dir is required" "$IDLEPOOL" coordinator --listen 127.0.0.1:0
if [ "$(id -u)" != 0 ]; then
  expect 1 "run it as root (sudo)" "$IDLEPOOL" worker --join 127.0.0.1:1 --token-file "$T/join.token" --install-service
  expect 1 "run it as root (sudo)" "$IDLEPOOL" coordinator --install-service
  pass "not root: refused, naming sudo"
  exit 0
fi
expect 2 "leave out --work-dir" "$IDLEPOOL" worker --join 127.0.0.1:1 --token-file "$T/join.token" \
  --work-dir "$T/w" --install-service --gpus none
expect 2 "--sensors-dir '$T/a b': --install-service cannot pass a value" "$IDLEPOOL" worker \
  --join 127.0.0.1:1 --token-file "$T/join.token" --sensors-dir "$T/a b" --install-service --gpus none
expect 2 "leave out --data-dir" "$IDLEPOOL" coordinator --data-dir "$T/c" --install-service
expect 2 "--advertise 'a\$b'" "$IDLEPOOL" coordinator --advertise 'a$b' --install-service
expect 2 "--worker-cert-ttl '1s'" "$IDLEPOOL" coordinator --worker-cert-ttl 1s --install-service
if ! getent passwd idlepool >/dev/null; then
  expect 1 "there is no user idlepool: install the idlepool package first" "$IDLEPOOL" worker \
    --join 127.0.0.1:1 --token-file "$T/join.token" --install-service --gpus none
  expect 1 "there is no user idlepool" "$IDLEPOOL" coordinator --install-service
fi
[ "$(snapshot)" = "$before" ] || fail "a refused --install-service changed /etc/idlepool or /var/lib/idlepool"
pass "refused before touching the machine: --work-dir, --data-dir, a value with a space or \$, a bad ttl, no user idlepool"
