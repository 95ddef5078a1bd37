#!/usr/bin/env bash
# Worker hygiene (issue 19, test (g)): a task's links never carry a file of the lending machine
# to the coordinator. The "owner's key" is a file outside every task dir, on the work dir's file
# system. Tasks that (i) symlink it as an output, (ii) hard-link it as an output, (iii) symlink a
# directory to /etc under the pattern outdir/*: each attempt fails with a message naming the
# file. (iv) A task that keeps a symlink and a hard link to the key in its checkpoint dir: the
# checkpoint is saved without them, and the worker's log names them. The key's bytes and its
# SHA-256 are never in the coordinator's data dir (blobs/ holds every blob it received) nor in
# the worker's outbox. Then a normal job completes with every output exactly once; the worker's
# descriptors and memory are measured before and after.
source "$(dirname "$0")/lib.sh"
owner_config "$T/owner.toml"  # checkpoints every second
S=$T/sensors
sense "$S" idle_seconds 1000
KEY=$T/owner_home/.ssh/id_rsa
mkdir -p "$(dirname "$KEY")"
SECRET="-----BEGIN OPENSSH PRIVATE KEY----- $(head -c 48 /dev/urandom | base64 | tr -d '\n')"
printf '%s\n' "$SECRET" >"$KEY"
chmod 600 "$KEY"
KEY_SHA=$(sha256sum "$KEY" | cut -c1-64)
# The hygiene must hold without a sandbox too (where the task can see the key): once the worker
# has one, this test runs it off.
NOSB=()
"$IDLEPOOL" worker --help 2>&1 | grep -q -- '--no-sandbox' && NOSB=(--no-sandbox)

job() {  # job NAME COMMAND OUTPUT_PATTERN: one task, one attempt
  printf 'name = "%s"\ncommand = ["sh", "-c", "%s"]\ncount = 1\noutputs = ["%s"]\n[retry]\nmax_attempts = 1\n' \
    "$1" "$2" "$3" >"$T/$1.toml"
  "$IDLEPOOL" submit "$T/$1.toml"
}
failed_msg() { "$IDLEPOOL" status "$1" --json | jq -r '.failed_tasks[0].message'; }
fds_of() { ls "/proc/$1/fd" | wc -l; }
kib_of() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
assert_refused() {  # assert_refused JOB MESSAGE
  wait_until 60 job_done "$1"
  [ "$(job_field "$1" state)" = failed ] || fail "job $1 was not refused: $("$IDLEPOOL" status "$1")"
  [ "$(failed_msg "$1")" = "$2" ] || fail "job $1: message '$(failed_msg "$1")', want '$2'"
  "$IDLEPOOL" failures "$1" | grep -qF "$2" || fail "job $1: \`failures\` does not say: $2"
  [ "$(sql "SELECT COUNT(*) FROM outputs WHERE job_id=$1")" = 0 ] || fail "job $1 committed an output"
}
RULE="outputs must be regular files in the task dir, each with a single link"

start_coordinator
start_worker w --slots 2 --config "$T/owner.toml" --sensors-dir "$S" "${NOSB[@]}"
wait_until 20 is_owner_state w run
fds0=$(fds_of "$WPID_w"); rss0=$(kib_of "$WPID_w" VmRSS)

J1=$(job symlink "ln -s $KEY out.txt" "out.txt")
J2=$(job hardlink "ln $KEY out.txt" "out.txt")
J3=$(job linkdir "ln -s /etc outdir" "outdir/*")
assert_refused "$J1" "output 'out.txt' is a symbolic link; $RULE"
assert_refused "$J2" "output 'out.txt' has 2 hard links; $RULE"
assert_refused "$J3" "output pattern 'outdir/*': 'outdir' is a symbolic link; $RULE"
pass "a symlink, a hard link and a linked dir as outputs fail their attempts, naming the file"

# (iv) The links come first, then the state file: a checkpoint that holds the state was listed
# with the links in place. The task ends when the test says so (a file in its task dir).
cat >"$T/ckpt.toml" <<TOML
name = "ckpt"
command = ["sh", "-c", "C=\$IDLEPOOL_CHECKPOINT_DIR; ln -s $KEY \$C/key && ln $KEY \$C/hard && echo 7 > \$C/state && while [ ! -e go ]; do sleep 0.05; done; echo done > out.txt"]
count = 1
outputs = ["out.txt"]
TOML
J4=$("$IDLEPOOL" submit "$T/ckpt.toml")
has_state() { [ "$(sql "SELECT COUNT(*) FROM checkpoints WHERE job_id=$J4 AND path='state'")" = 1 ]; }
wait_until 60 has_state
saved=$(sql "SELECT group_concat(path, ',') FROM checkpoints WHERE job_id=$J4")
[ "$saved" = state ] || fail "checkpoint holds '$saved', want only 'state'"
grep "left out of its checkpoint" "$T/w.log" | grep -q "'key' is a symbolic link" \
  || fail "no warning names the link: $(grep checkpoint "$T/w.log" | tail -3)"
grep "left out of its checkpoint" "$T/w.log" | grep -q "'hard' has 2 hard links" \
  || fail "no warning names the hard link"
A4=$(running_attempt "$J4")
touch "$T/w/attempts/$A4.task/go"
wait_until 60 job_done "$J4"
[ "$(job_field "$J4" state)" = succeeded ] || fail "checkpoint job: $("$IDLEPOOL" status "$J4")"
pass "a checkpoint is saved without its symlink and hard link to the key; the worker's log names them"

# The key never reached the coordinator, nor waited in the worker's outbox. absent TEXT DIR:
# grep says "not found" (1), neither "found" (0) nor "error" (2).
absent() { local rc=0; grep -rqF -e "$1" "$2" || rc=$?; [ "$rc" = 1 ]; }
absent "$SECRET" "$T/owner_home" && fail "absent() cannot find the key where it is"
absent "$SECRET" "$T/coord" || fail "the key's bytes are in the coordinator's data dir"
absent "$KEY_SHA" "$T/coord" || fail "the key's SHA-256 is in the coordinator's data dir"
[ -z "$(find "$T/coord/blobs" -name "$KEY_SHA*")" ] || fail "the key is a blob"
absent "$SECRET" "$T/w/outbox" || fail "the key was filed in the outbox"
[ "$(cat "$KEY")" = "$SECRET" ] || fail "the key was moved or changed"
pass "neither the key's bytes nor its hash are in the coordinator's data dir or the outbox"

# A normal job still completes, every output exactly once.
printf 'name = "ok"\ncommand = ["sh", "-c", "echo {index} > out-{index}.txt"]\ncount = 3\noutputs = ["out-*.txt"]\n' >"$T/ok.toml"
J5=$("$IDLEPOOL" submit "$T/ok.toml")
"$IDLEPOOL" wait "$J5" --quiet >/dev/null || fail "normal job: $("$IDLEPOOL" status "$J5")"
assert_outputs_once "$J5" 3
# Descriptors the worker opened beneath the task dirs are all closed again.
fds_back() { [ "$(fds_of "$WPID_w")" -le $((fds0 + 4)) ]; }
wait_until 20 fds_back
rss1=$(kib_of "$WPID_w" VmRSS); hwm=$(kib_of "$WPID_w" VmHWM)
echo "worker: fds ${fds0} -> $(fds_of "$WPID_w"), VmRSS ${rss0} -> ${rss1} KiB (VmHWM ${hwm} KiB)"
[ "$rss1" -le $((rss0 + 32768)) ] || fail "worker VmRSS grew: ${rss0} -> ${rss1} KiB"
pass "then a normal job completes with every output exactly once"
