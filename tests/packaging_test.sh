#!/usr/bin/env bash
# The systemd unit in packaging/ only uses worker options that exist, and asks for what the
# worker needs: a delegated cgroup subtree, a stop timeout longer than the vacate grace, and a
# hard descriptor limit it can raise its own to.
set -euo pipefail
: "${IDLEPOOL:?set IDLEPOOL to the idlepool binary}"
UNIT=$(dirname "$0")/../packaging/idlepool-worker.service
HELP=$("$IDLEPOOL" worker --help)
# ExecStart with its continuation lines joined.
exec_start=$(sed -n '/^ExecStart=/,/[^\\]$/p' "$UNIT" | tr -d '\\\n')
opts=$(grep -o -- '--[a-z-]*' <<<"$exec_start")
[ -n "$opts" ] || { echo "FAIL: no options found in ExecStart" >&2; exit 1; }
for o in $opts; do
  grep -q -- "$o" <<<"$HELP" || { echo "FAIL: $UNIT uses $o, which 'idlepool worker' does not have" >&2; exit 1; }
done
grep -q '^Delegate=yes$' "$UNIT" || { echo "FAIL: no Delegate=yes" >&2; exit 1; }
stop=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)$/\1/p' "$UNIT")
grace=$("$IDLEPOOL" worker --print-default-config | sed -n 's/^vacate_grace_seconds = \([0-9]*\)$/\1/p')
[ "$stop" -gt "$grace" ] || { echo "FAIL: TimeoutStopSec=$stop is not above the vacate grace $grace s" >&2; exit 1; }
nofile=$(sed -n 's/^LimitNOFILE=[0-9]*:\([0-9]*\)$/\1/p' "$UNIT")
[ "${nofile:-0}" -ge 4096 ] || { echo "FAIL: LimitNOFILE's hard limit is under 4096 (the peer port and tasks share it)" >&2; exit 1; }
echo "ok: LimitNOFILE hard $nofile"
echo "ok: unit options $(echo $opts) exist; Delegate=yes; stop timeout $stop s > grace $grace s"
