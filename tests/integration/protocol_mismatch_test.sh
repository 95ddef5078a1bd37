#!/usr/bin/env bash
# A worker pointed at a server that does not speak its session protocol (another version of
# idlepool; here, a worker's Peer service) stops with a clear error instead of retrying forever.
source "$(dirname "$0")/lib.sh"
start_coordinator
start_worker peer --slots 1 --peer-listen 127.0.0.1:0
wait_until 20 is_connected peer
peer_addr=$("$IDLEPOOL" workers --json | jq -r '.workers[] | select(.worker=="peer") | .peer_address')
[ -n "$peer_addr" ] && [ "$peer_addr" != null ] || fail "no peer address for worker peer"
rc=0
timeout 60 "$IDLEPOOL" worker --name stray --work-dir "$T/stray" --sensors-dir "$T/no-sensors" \
  --coordinator "$peer_addr" >"$T/stray.log" 2>&1 || rc=$?
[ $rc -ne 124 ] || fail "the worker kept retrying a server without its protocol"
[ $rc -ne 0 ] || fail "the worker exited 0 against a server without its protocol"
grep -q "does not serve this worker's protocol" "$T/stray.log" \
  || fail "no protocol message: $(tail -3 "$T/stray.log")"
pass "a server without the worker's protocol: exit $rc with a clear message"
