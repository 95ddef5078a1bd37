#!/usr/bin/env bash
# Text from tasks and workers never reaches a terminal as escape sequences: a failing task that
# prints a window-title and clear-screen sequence shows in `status` with its control characters
# replaced; a worker name with control characters is refused.
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
"$IDLEPOOL" status "$JOB" >"$T/status.txt"
grep -q "boom" "$T/status.txt" || fail "status does not show the task's output: $(cat "$T/status.txt")"
grep -q "PWNED" "$T/status.txt" || fail "status dropped the text around the escapes"
if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$T/status.txt"; then
  fail "status printed control characters: $(od -c "$T/status.txt" | head -20)"
fi
LC_ALL=C grep -q $'\xc2\x9b' "$T/status.txt" && fail "status printed a C1 control (CSI)"
pass "status shows task output with its control characters replaced"

rc=0; "$IDLEPOOL" worker --name $'evil\e]0;PWNED\a' --work-dir "$T/evil" >"$T/evil.log" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "a worker name with control characters: exit $rc, want 2"
grep -q "printable" "$T/evil.log" || fail "no reason given: $(cat "$T/evil.log")"
pass "a worker name with control characters is refused"
