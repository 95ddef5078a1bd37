#!/usr/bin/env bash
# --log-format json: every log line of a real coordinator and worker is one JSON object with ts,
# level, logger, thread and msg; text stays the default; a bad value is bad input (exit 2).
set -euo pipefail
: "${IDLEPOOL:?set IDLEPOOL to the idlepool binary}"
# A machine that cannot sandbox tasks (a chroot): the worker runs them unsandboxed.
if [ "$("$IDLEPOOL" worker --print-resources --gpus none --json 2>/dev/null | jq -r '.sandbox // "none"')" = none ]; then
  export IDLEPOOL_NO_SANDBOX=1
fi
T=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$T"/*.log; do echo "== $f"; cat "$f"; done >&2; exit 1; }
# wait_until SECONDS COMMAND...: a bound on a hang, not an assertion about speed.
wait_until() {
  local end=$(( $(date +%s) + $1 )); shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || fail "timed out waiting for: $*"
    sleep 0.05
  done
}

"$IDLEPOOL" --log-format json coordinator --listen 127.0.0.1:0 --data-dir "$T/coord" \
  >"$T/coord.out" 2>"$T/coord.log" &
PIDS+=($!)
wait_until 30 grep -q "listening on" "$T/coord.out"
ADDR=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$T/coord.out")
# A join token made through the admin socket, read by the worker from a file (never argv or env).
"$IDLEPOOL" token create --role worker --data-dir "$T/coord" >"$T/join.token" 2>"$T/token.log" \
  || fail "token create"
"$IDLEPOOL" --log-format json worker --name w1 --join "$ADDR" --token-file "$T/join.token" \
  --work-dir "$T/w1" --slots 1 --no-probe --no-calibrate \
  >"$T/w1.out" 2>"$T/w1.log" &
PIDS+=($!)
wait_until 30 grep -q "worker w1 .*connected" "$T/coord.log"
wait_until 30 grep -q "worker w1 joined" "$T/w1.log"

for f in "$T/coord.log" "$T/w1.log"; do
  [ -s "$f" ] || fail "$f is empty"
  # Every line one object with the five fields, a known level and a non-empty message.
  jq -e -s 'length > 0 and all(.[];
      (.ts | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$"))
      and (.level | IN("trace", "debug", "info", "warning", "error", "critical"))
      and .logger == "idlepool" and (.thread | type) == "number"
      and (.msg | type) == "string" and (.msg | length) > 0)' "$f" >/dev/null \
    || fail "$f: not one JSON object per line with ts, level, logger, thread, msg"
done
jq -e -s 'any(.[]; .msg | test("worker w1 .*connected"))' "$T/coord.log" >/dev/null \
  || fail "the coordinator's connect line is not in its JSON log"
echo "ok: coordinator and worker log JSON lines"

if "$IDLEPOOL" --log-format xml workers >/dev/null 2>"$T/bad.log"; then fail "--log-format xml accepted"; fi
rc=0; "$IDLEPOOL" --log-format xml workers >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "--log-format xml: exit $rc, want 2"
grep -q "log-format" "$T/bad.log" || fail "the error does not name --log-format"
echo "ok: a bad --log-format is bad input (exit 2)"
