#!/usr/bin/env bash
# Text from tasks and workers never reaches a terminal as escape sequences: a failing task that
# prints a window-title and clear-screen sequence shows in `status` and `logs` with its control characters
# replaced; a worker name with control characters is refused, and so is one that would show like
# another name (an invisible or direction-changing character), by the CLI and by the coordinator.
source "$(dirname "$0")/lib.sh"
cat >"$T/job.toml" <<'TOML'
name = "escapes"
command = ["sh", "-c", "printf 'boom \\033]0;PWNED\\007\\033[2J\\233\\061m done\\n' >&2; exit 3"]
count = 1
[retry]
max_attempts = 1
TOML
start_coordinator
start_worker w1 --slots 1
JOB=$("$IDLEPOOL" submit "$T/job.toml")
rc=0; "$IDLEPOOL" wait "$JOB" --quiet >/dev/null 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "the failing job succeeded"
# A task's output is read per task (`logs`; a job's status carries no log tails, issue 21).
# `logs` prints it byte for byte into a file, but on a terminal with its controls replaced: run
# under a pseudo-terminal (script(1)), what reaches the terminal is checked.
"$IDLEPOOL" status "$JOB" >"$T/status.txt"
rc=0; script -qec "$(printf '%q ' "$IDLEPOOL" logs "$JOB" 0)" /dev/null >"$T/logs.txt" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "logs of a failed task exited $rc under a terminal, want 1"
for cmd in status logs; do
  # A terminal's own line ends (CR LF) are the pty's, not the task's.
  tr -d '\r' <"$T/$cmd.txt" >"$T/$cmd.clean"
  if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$T/$cmd.clean"; then
    fail "$cmd printed control characters: $(od -c "$T/$cmd.clean" | head -20)"
  fi
  LC_ALL=C grep -q $'\xc2\x9b' "$T/$cmd.clean" && fail "$cmd printed a C1 control (CSI)"
done
grep -q "failed" "$T/status.txt" || fail "status does not show the failure: $(cat "$T/status.txt")"
grep -q "boom" "$T/logs.txt" || fail "logs does not show the task's output: $(cat "$T/logs.txt")"
grep -q "PWNED" "$T/logs.txt" || fail "logs dropped the text around the escapes"
# Into a file the output is the task's bytes, escapes included (a file is not a terminal).
rc=0; "$IDLEPOOL" logs "$JOB" 0 >"$T/raw.txt" 2>/dev/null || rc=$?
[ "$rc" = 1 ] || fail "logs of a failed task exited $rc, want 1"
LC_ALL=C grep -q $'\033]0;PWNED\007' "$T/raw.txt" || fail "logs into a file changed the task's bytes: $(od -c "$T/raw.txt" | head)"
pass "status and logs show the task's failure and output with control characters replaced"

rc=0; "$IDLEPOOL" worker --name $'evil\e]0;PWNED\a' --work-dir "$T/evil" >"$T/evil.log" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "a worker name with control characters: exit $rc, want 2"
grep -q "printable" "$T/evil.log" || fail "no reason given: $(cat "$T/evil.log")"
pass "a worker name with control characters is refused"

# "wa" followed by U+200B (zero width space) looks exactly like "wa": refused by the CLI...
rc=0; "$IDLEPOOL" worker --name $'wa\u200b' --work-dir "$T/zw" >"$T/zw.log" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "a worker name with a zero width space: exit $rc, want 2"
grep -qF 'U+200B (zero width space) is not allowed' "$T/zw.log" || fail "no reason given: $(cat "$T/zw.log")"
grep -qF '"wa\u200b"' "$T/zw.log" || fail "the name is not shown escaped: $(cat "$T/zw.log")"
rc=0; "$IDLEPOOL" worker --name $'w\u202eab' --work-dir "$T/rlo" >"$T/rlo.log" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "a worker name with a right-to-left override: exit $rc, want 2"
grep -qF 'U+202E (right-to-left override)' "$T/rlo.log" || fail "no reason given: $(cat "$T/rlo.log")"
pass "worker names with invisible or direction-changing characters are refused by the CLI"

# ...and by the coordinator at Hello, which cannot trust the CLI: a worker without --name is named
# after its host, and a UTS namespace gives it a host name the CLI never checks.
if unshare --user --map-root-user --uts true 2>/dev/null; then
  rc=0
  unshare --user --map-root-user --uts sh -c \
    'printf "wa\342\200\213" >/proc/sys/kernel/hostname && mkdir -p "$1.sensors" && exec "$0" worker --work-dir "$1" --sensors-dir "$1.sensors" --join "$2" --token-file "$3"' \
    "$IDLEPOOL" "$T/host" "$ADDR" "$JOIN_TOKEN_FILE" >"$T/host.log" 2>&1 || rc=$?
  [ "$rc" != 0 ] || fail "a worker named U+200B-wa by its host name was let in"
  grep -qF 'refused: worker name "wa\u200b": U+200B (zero width space) is not allowed' \
    "$T/host.log" || fail "the coordinator's refusal is not clear: $(cat "$T/host.log")"
  workers=$("$IDLEPOOL" workers --json | jq -r '.workers[].worker')
  [ "$workers" = w1 ] || fail "the pool lists workers '$workers', want only w1"
  pass "the coordinator refuses a worker whose name shows like another at Hello"
else
  echo "skip: no user namespaces here, the coordinator's own name check is not exercised"
fi
