#!/usr/bin/env bash
# (e) Bad specs and a wrong token are refused with clear errors, and nothing is submitted.
source "$(dirname "$0")/lib.sh"
start_coordinator
expect_refused() {  # expect_refused NAME PATTERN: submit $T/NAME.toml, must fail with PATTERN
  local out rc=0
  out=$("$IDLEPOOL" submit "$T/$1.toml" 2>&1) || rc=$?
  [ $rc -ne 0 ] || fail "$1: submit succeeded"
  echo "$out" | grep -qE "$2" || fail "$1: message '$out' does not match '$2'"
  echo "  $1 -> $out"
}
printf 'name = "x"\ncommand = ["true"]\nframes = "1-10"\nchunk = 0\n' >"$T/zero-chunk.toml"
expect_refused zero-chunk "zero-chunk.toml:4:[0-9]+: .*chunk"
printf 'name = "x"\ncommand = ["true"]\ncount = 3\nchunks = 2\n' >"$T/typo.toml"
expect_refused typo "typo.toml:4:[0-9]+: .*chunks"
printf 'name = "x"\ncommand = ["true"]\nframes = "1-5x0"\n' >"$T/bad-frames.toml"
expect_refused bad-frames "bad-frames.toml:3:[0-9]+: .*frames"
printf 'name = "x"\ncommand = ["r", "{frame_start}", "{frame_end}"]\nframes = "1-9x2"\nchunk = 3\n' >"$T/stepped.toml"
expect_refused stepped "frame_step"
printf 'name = "x"\ncommand = ["true"]\nframes = "1-2000000000"\n' >"$T/huge.toml"
expect_refused huge "huge.toml:3:[0-9]+: .*frames"
printf 'name = "x"\ncommand = ["true"]\ncount = 2\ninputs = ["missing.bin"]\n' >"$T/missing.toml"
expect_refused missing "missing.toml:4:[0-9]+: .*missing.bin"
printf 'name = "x"\ncommand = "true"\ncount = 2\n' >"$T/type.toml"
expect_refused type "type.toml:2:[0-9]+: .*command"
printf 'name = "x"\ncommand = ["true"\n' >"$T/syntax.toml"
expect_refused syntax "syntax.toml:[0-9]+:[0-9]+"
# A valid spec with a malformed or a wrong token is refused, each with its own wording.
printf 'name = "ok"\ncommand = ["true"]\ncount = 2\n' >"$T/ok.toml"
out=$(IDLEPOOL_TOKEN=not-the-token "$IDLEPOOL" submit "$T/ok.toml" 2>&1) && fail "malformed token accepted"
echo "$out" | grep -q "not an idlepool token" || fail "malformed-token message: $out"
WRONG=${TOKEN%.*}.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
out=$(IDLEPOOL_TOKEN=$WRONG "$IDLEPOOL" submit "$T/ok.toml" 2>&1) && fail "wrong token accepted"
echo "$out" | grep -q "wrong secret" || fail "wrong-token message: $out"
out=$(IDLEPOOL_TOKEN= "$IDLEPOOL" status 2>&1) && fail "no token accepted"
echo "$out" | grep -q "idlepool login" || fail "no-token message: $out"
out=$("$IDLEPOOL" workers --token "$WRONG" 2>&1) && fail "workers with a wrong token answered"
# A worker with a wrong join token gives up with a clear error instead of retrying forever.
JOIN=$(cat "$JOIN_TOKEN_FILE")
rc=0; IDLEPOOL_JOIN_TOKEN=${JOIN%.*}.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA "$IDLEPOOL" worker \
  --name bad --join "$ADDR" --work-dir "$T/bad" >"$T/bad.log" 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "worker with a wrong join token exited $rc"
grep -q "wrong secret" "$T/bad.log" || fail "worker error: $(cat "$T/bad.log")"
# Nothing was submitted by any of the above.
[ "$("$IDLEPOOL" status --json | jq '.jobs | length')" = 0 ] || fail "a refused spec created a job"
[ "$(sql 'SELECT COUNT(*) FROM jobs')" = 0 ] || fail "the store holds a job"
# The valid spec with the right token is accepted (the refusals were not all for one reason).
JOB=$("$IDLEPOOL" submit "$T/ok.toml") || fail "valid job refused"
[ "$JOB" = 1 ] || fail "job id $JOB"
pass "bad specs and wrong tokens refused; nothing submitted"
