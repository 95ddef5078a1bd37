#!/usr/bin/env bash
# Fair share between users with real processes: alice's 60-task job holds both slots of the only
# worker (each task waits for its own release file); bob's 2-task job, submitted after, gets the
# first slot that frees and finishes while alice's job still runs (first come, first served would
# give that slot to alice's next task, which waits forever here). Then alice's job goes on.
# The worker runs --no-sandbox: the tasks wait for files in $T, which a sandbox hides.
source "$(dirname "$0")/lib.sh"
start_coordinator
start_worker w1 --slots 2 --no-sandbox
wait_until 20 is_connected w1
"$IDLEPOOL" token create --role submit --user alice --data-dir "$T/coord" >"$T/alice.token" 2>/dev/null
"$IDLEPOOL" token create --role submit --user bob --data-dir "$T/coord" >"$T/bob.token" 2>/dev/null
as() { local who=$1; shift; IDLEPOOL_TOKEN=$(cat "$T/$who.token") "$IDLEPOOL" "$@"; }
cat >"$T/big.toml" <<TOML
name = "big"
command = ["sh", "-c", "while [ ! -e $T/go-{index} ]; do sleep 0.05; done; echo {index} > out.txt"]
count = 60
outputs = ["out.txt"]
TOML
cat >"$T/small.toml" <<TOML
name = "small"
command = ["sh", "-c", "echo {index} > out.txt"]
count = 2
outputs = ["out.txt"]
TOML
BIG=$(as alice submit "$T/big.toml")
running() { [ "$(as alice status "$BIG" --json | jq -r .running)" = "$1" ]; }
wait_until 30 running 2
SMALL=$(as bob submit "$T/small.toml")
touch "$T/go-0"  # one of alice's tasks ends: its slot frees
small_done() { [ "$(as bob status "$SMALL" --json | jq -r .state)" = succeeded ]; }
wait_until 60 small_done  # first come, first served never runs it: alice's next task waits forever
started=$(sql "SELECT count(*) FROM attempts WHERE job_id=$BIG")
[ "$started" -le 3 ] || fail "alice's job started $started attempts before bob's 2 tasks ran"
[ "$(as alice status "$BIG" --json | jq -r .succeeded)" = 1 ] || fail "alice's task 1 is not still running"
pass "bob's small job ran in the first slot that freed while alice's big job held the pool"
for i in $(seq 1 59); do touch "$T/go-$i"; done
as alice wait "$BIG" --quiet >/dev/null || fail "alice's job failed: $(as alice status "$BIG")"
pass "alice's job then finished"
