#!/usr/bin/env bash
# Users and ownership with real processes: every access token acts for a user (`token create
# --user`, else its name); `login` says who you are; a job records the user that submitted it
# (`status`, `status --json`); another user's submit token may read it but not cancel or delete
# it (the refusal names the job's user and role operator); an operator may; the store keeps the
# user across a coordinator restart.
source "$(dirname "$0")/lib.sh"
start_coordinator
start_worker w1 --slots 1
wait_until 20 is_connected w1
mk() { "$IDLEPOOL" token create --data-dir "$T/coord" "$@"; }
mk --role submit --name laptop --user alice >"$T/alice.token" 2>"$T/alice.err"
grep -q "user alice" "$T/alice.err" || fail "token create does not say the user: $(cat "$T/alice.err")"
mk --role submit --name bob >"$T/bob.token" 2>/dev/null
mk --role operator --user ops >"$T/ops.token" 2>/dev/null
mk --role read >"$T/read.token" 2>/dev/null
mk --role worker --user x >/dev/null 2>"$T/join.err" && fail "a join token took a user"
grep -q "acts for nobody" "$T/join.err" || fail "join token with --user: $(cat "$T/join.err")"
"$IDLEPOOL" token list --data-dir "$T/coord" | grep -E "laptop +alice " >/dev/null ||
  fail "token list shows no USER alice: $("$IDLEPOOL" token list --data-dir "$T/coord")"
out=$("$IDLEPOOL" login "$ADDR" --token-file "$T/alice.token")
echo "$out"
case "$out" in "logged in to $ADDR as alice (submit)"*) ;; *) fail "login says: $out" ;; esac
pass "tokens act for a user; login says who"

as() { local who=$1; shift; IDLEPOOL_TOKEN=$(cat "$T/$who.token") "$IDLEPOOL" "$@"; }
cat >"$T/hold.toml" <<TOML
name = "hold"
command = ["sh", "-c", "while [ ! -e $T/release ]; do sleep 0.05; done; echo ok > out.txt"]
count = 1
outputs = ["out.txt"]
priority = 5
TOML
JOB=$(as alice submit "$T/hold.toml")
[ "$(as read status "$JOB" --json | jq -r .user)" = alice ] || fail "status --json: no user alice"
[ "$(as read status "$JOB" --json | jq -r .priority)" = 5 ] || fail "status --json: no priority 5"
as read status | grep -E "^$JOB +hold +alice +" >/dev/null || fail "status has no USER alice: $(as read status)"
pass "the job records its user and priority"

out=$(as bob cancel "$JOB" 2>&1) && fail "bob cancelled alice's job: $out"
echo "bob: $out"
case "$out" in *"belongs to user alice"*"role operator"*) ;; *) fail "bob's refusal: $out" ;; esac
as read cancel "$JOB" >/dev/null 2>&1 && fail "a read token cancelled a job"
[ "$(as bob status "$JOB" --json | jq -r .state)" = running ] || fail "the job is not running"
out=$(as bob delete "$JOB" --cancel 2>&1) && fail "bob deleted alice's job: $out"
pass "another user's submit token may read but not cancel or delete the job"

kill "$COORD_PID"; wait "$COORD_PID" 2>/dev/null || true
start_coordinator
[ "$(as read status "$JOB" --json | jq -r .user)" = alice ] || fail "the user was lost in a restart"
out=$(as bob cancel "$JOB" 2>&1) && fail "bob cancelled alice's job after a restart: $out"
as ops cancel "$JOB" >/dev/null || fail "the operator could not cancel"
[ "$(as read status "$JOB" --json | jq -r .state)" = cancelled ] || fail "not cancelled"
pass "the user survives a restart; an operator may cancel anyone's job"
