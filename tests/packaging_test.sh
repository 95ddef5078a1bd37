#!/usr/bin/env bash
# The systemd units in packaging/ (the user unit for a worker, and the package's system units for
# a worker and a coordinator) only use options that exist, and ask for what the servers need: a
# delegated cgroup subtree and a stop timeout longer than the vacate grace (workers), a hard
# descriptor limit they can raise their own to; the system units run as the user idlepool and
# take no secret on their command line.
set -euo pipefail
: "${IDLEPOOL:?set IDLEPOOL to the idlepool binary}"
DIR=$(dirname "$0")/../packaging
grace=$("$IDLEPOOL" worker --print-default-config | sed -n 's/^vacate_grace_seconds = \([0-9]*\)$/\1/p')
check_unit() {
  local unit=$1 command=$2 help exec_start opts o stop nofile
  help=$("$IDLEPOOL" "$command" --help)
  # ExecStart with its continuation lines joined.
  exec_start=$(sed -n '/^ExecStart=/,/[^\\]$/p' "$unit" | tr -d '\\\n')
  opts=$(grep -o -- '--[a-z-]*' <<<"$exec_start")
  [ -n "$opts" ] || { echo "FAIL: no options found in $unit's ExecStart" >&2; exit 1; }
  for o in $opts; do
    grep -q -- "$o" <<<"$help" || { echo "FAIL: $unit uses $o, which 'idlepool $command' does not have" >&2; exit 1; }
  done
  if grep -Eq -- '--token|TOKEN' <<<"$exec_start"; then
    echo "FAIL: $unit passes a token on its command line" >&2; exit 1
  fi
  nofile=$(sed -n 's/^LimitNOFILE=[0-9]*:\([0-9]*\)$/\1/p' "$unit")
  [ "${nofile:-0}" -ge 4096 ] || { echo "FAIL: $unit: LimitNOFILE's hard limit is under 4096" >&2; exit 1; }
  if [ "$command" = worker ]; then
    grep -q '^Delegate=yes$' "$unit" || { echo "FAIL: $unit: no Delegate=yes" >&2; exit 1; }
    stop=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)$/\1/p' "$unit")
    [ "$stop" -gt "$grace" ] || { echo "FAIL: $unit: TimeoutStopSec=$stop is not above the vacate grace $grace s" >&2; exit 1; }
  fi
  echo "ok: $unit: options $(echo $opts) exist; LimitNOFILE hard $nofile${stop:+; Delegate=yes; stop timeout $stop s > grace $grace s}"
}
check_unit "$DIR/idlepool-worker.service" worker
for u in worker coordinator; do
  unit=$DIR/deb/idlepool-$u.service
  check_unit "$unit" "$u"
  grep -q '^User=idlepool$' "$unit" || { echo "FAIL: $unit does not run as the user idlepool" >&2; exit 1; }
  grep -q "^ExecStart=/usr/bin/idlepool $u " "$unit" || { echo "FAIL: $unit does not run /usr/bin/idlepool $u" >&2; exit 1; }
done
