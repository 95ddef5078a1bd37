#!/usr/bin/env bash
# A lent machine gives tasks nothing of its owner's (issue 31), with real workers: one
# --no-sandbox and one in the tier this machine sandboxes in. Each is started as a laptop owner
# would start it: from a shell holding secrets (cloud keys, a token, a random marker), inside a
# keyring session holding a key, from a directory of its own (PWD, OLDPWD), with its tunnel port
# open. Its task (a Python program: it reads its environment as it started, no shell fixes PWD)
# writes down its environment, /proc/*/environ of every process it can see, its open descriptors
# and what `keyctl` finds, and reads its input through "$PWD/input.txt" as Blender does. Then:
#   - none of the owner's secrets appear anywhere, and the task's variables are only the listed
#     ones: the pool's, the job's `env` (JOB_VAR = "job-{index}") and the owner's pass_env name
#     (http_proxy);
#   - PWD is the task dir, OLDPWD is unset, and the input was found through $PWD;
#   - no descriptor above 2 is open (the tunnel's listening socket is not inherited);
#   - the worker's session key can be neither listed nor read (keyctl; skipped without it).
source "$(dirname "$0")/lib.sh"
# The system's python3 itself, never a wrapper script (a pyenv shim runs bash, which sets PWD
# itself and would hide a wrong one).
[ -x /usr/bin/python3 ] || { echo "SKIP: /usr/bin/python3 is not installed"; trap - EXIT; rm -rf "$T"; exit 77; }
HAVE_KEYCTL=1
command -v keyctl >/dev/null || { HAVE_KEYCTL=0; echo "note: keyctl is not installed (Debian keyutils): keyring checks skipped"; }
MARK=marker-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
SECRETS=("aws-$MARK" "ghp-$MARK" "own-$MARK" "key-$MARK")
start_coordinator

cat >"$T/policy.toml" <<'EOF'
[sandbox]
pass_env = ["http_proxy"]
EOF
mkdir -p "$T/ownerdir" "$T/job"
# The owner's shell: secrets in the environment, a keyring session with a key (its id written to
# $KEYID_FILE), the worker started from the owner's own directory. Every step execs: the worker
# is the one process holding all of it.
cat >"$T/as-owner" <<EOF
#!/bin/sh
cd "$T/ownerdir" || exit 1
export AWS_SECRET_ACCESS_KEY=aws-$MARK GITHUB_TOKEN=ghp-$MARK OWNER_MARKER=own-$MARK
export KEYVAL=key-$MARK http_proxy=http://proxy.invalid:3128 no_proxy=127.0.0.1 LANG=C.UTF-8
export OLDPWD=/owner/before
if [ "$HAVE_KEYCTL" = 1 ]; then
  exec keyctl session - sh -c 'keyctl add user idlepool-owner-key "\$KEYVAL" @s >"\$KEYID_FILE" && exec "\$@"' sh "$IDLEPOOL" "\$@"
fi
exec "$IDLEPOOL" "\$@"
EOF
chmod +x "$T/as-owner"

cat >"$T/job/probe.py" <<'EOF'
import glob, os, resource, subprocess, sys
out = ["== env"] + [f"{k}={v}" for k, v in sorted(os.environ.items())]
out.append("== environ")
for path in glob.glob("/proc/[0-9]*/environ"):
    try:
        with open(path, "rb") as f:
            out.append(f.read().replace(b"\0", b"\n").decode("utf-8", "replace"))
    except OSError:
        pass
out.append("== fds")  # fstat opens nothing, so every one found was there at start
limit = min(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 1 << 16)
for fd in range(3, limit):
    try:
        os.fstat(fd)
        out.append(f"fd {fd} -> {os.readlink(f'/proc/self/fd/{fd}')}")
    except OSError:
        pass
out.append("== pwd")
out.append("OLDPWD=" + os.environ.get("OLDPWD", "unset"))
with open(os.environ["PWD"] + "/input.txt") as f:  # as Blender resolves a relative path
    out.append("input: " + f.read().strip())
out.append("== keys")
if len(sys.argv) > 1 and sys.argv[1]:  # the id of the key the worker's session holds
    for args in (["show", "@s"], ["print", sys.argv[1]], ["print", "@s"]):
        r = subprocess.run(["keyctl"] + args, capture_output=True, text=True)
        out.append(f"keyctl {' '.join(args)}: rc {r.returncode}: {r.stdout}{r.stderr}")
name = f"report-{os.environ['IDLEPOOL_TASK_INDEX']}.txt"
with open(name, "w") as f:
    f.write("\n".join(out) + "\n")
EOF
echo "scene-$MARK-input" | rev >"$T/job/input.txt"

# The names a task may have: the pool's, the job's and the owner's pass_env (task_env.h).
allowed='^(PATH|LANG|LC_[A-Z_]+|TZ|HOME|TMPDIR|PWD|USER|LOGNAME|OMP_NUM_THREADS|IDLEPOOL_[A-Z_]+|CUDA_VISIBLE_DEVICES|CUDA_DEVICE_ORDER|ROCR_VISIBLE_DEVICES|JOB_VAR|http_proxy)='

# socket_inodes PID: the sockets PID holds open, sorted.
socket_inodes() { for f in /proc/$1/fd/*; do readlink "$f"; done 2>/dev/null | sed -n 's/^socket:\[\([0-9]*\)\]$/\1/p' | sort; }

# check_tier NAME FLAGS...: worker NAME started as the owner with FLAGS runs the probe twice.
check_tier() {
  local name=$1; shift
  rm -f "$T/$name.keyid"
  KEYID_FILE=$T/$name.keyid IDLEPOOL=$T/as-owner start_worker "$name" --slots 2 \
    --config "$T/policy.toml" --tunnel-listen 127.0.0.1:0 "$@"
  wait_until 30 is_connected "$name"
  grep -q "serving tunnels to service replicas on" "$T/$name.log" || fail "$name: no tunnel port open"
  local keyid=""
  [ "$HAVE_KEYCTL" = 0 ] || keyid=$(cat "$T/$name.keyid")
  cat >"$T/job/job.toml" <<EOF
name = "probe-$name"
command = ["/usr/bin/python3", "probe.py", "$keyid"]
count = 2
inputs = ["probe.py", "input.txt"]
outputs = ["report-*.txt"]
env = { JOB_VAR = "job-{index}", LANG = "C.UTF-8" }
EOF
  local job
  job=$("$IDLEPOOL" submit "$T/job/job.toml")
  "$IDLEPOOL" wait "$job" --quiet >/dev/null || fail "$name: job $job: $("$IDLEPOOL" status "$job")"
  "$IDLEPOOL" fetch "$job" --out "$T/out-$name" >/dev/null
  for i in 0 1; do
    local r
    r=$(find "$T/out-$name" -name "report-$i.txt")
    [ -n "$r" ] || fail "$name: no report of task $i"
    for s in "${SECRETS[@]}"; do
      ! grep -qF "$s" "$r" || fail "$name: task $i saw the owner's secret '$s': $(grep -F "$s" "$r" | head -3)"
    done
    local vars
    vars=$(sed -n '/^== env$/,/^== environ$/p' "$r" | sed '1d;$d')
    local stray
    stray=$(grep -vE "$allowed" <<<"$vars" || true)
    [ -z "$stray" ] || fail "$name: task $i got variables it should not have: $stray"
    grep -qx "JOB_VAR=job-$i" <<<"$vars" || fail "$name: task $i: no JOB_VAR=job-$i (the job's env)"
    grep -qx "http_proxy=http://proxy.invalid:3128" <<<"$vars" || fail "$name: task $i: no pass_env http_proxy"
    grep -qx "LANG=C.UTF-8" <<<"$vars" || fail "$name: task $i: no LANG from the worker"
    local dir
    dir=$(sed -n 's/^IDLEPOOL_TASK_DIR=//p' <<<"$vars")
    grep -qx "PWD=$dir" <<<"$vars" || fail "$name: task $i: PWD is not its task dir $dir: $(grep '^PWD=' <<<"$vars")"
    grep -qx "OLDPWD=unset" "$r" || fail "$name: task $i: OLDPWD is set: $(grep '^OLDPWD=' "$r")"
    grep -qx "input: $(echo "scene-$MARK-input" | rev)" "$r" || fail "$name: task $i did not read its input through \$PWD"
    local fds
    fds=$(sed -n '/^== fds$/,/^== pwd$/p' "$r" | sed '1d;$d')
    [ -z "$fds" ] || fail "$name: task $i inherited descriptors: $fds"
    if [ "$HAVE_KEYCTL" = 1 ]; then
      grep -q "^keyctl show @s: rc 0: " "$r" && grep -q "keyring: _ses\$" "$r" ||
        fail "$name: task $i: its session keyring is not a new one: $(grep -A3 '^keyctl show' "$r")"
      grep -q "^keyctl print $keyid: rc 1" "$r" || fail "$name: task $i could read the owner's key $keyid"
      ! grep -q "idlepool-owner-key" "$r" || fail "$name: task $i could list the owner's key"
    fi
  done
  local v=WPID_$name
  # The slots' sandbox agents (the worker's children) share no socket with the worker but their
  # own channels' other ends: not the tunnel's listening socket, not a connection.
  if [ "$(id -u)" = 0 ]; then
    local agents agent shared
    agents=$(pgrep -P "${!v}" -f sandbox-agent || true)
    [ "${1:-}" = --no-sandbox ] || [ -n "$agents" ] || fail "$name: no sandbox agent found"
    for agent in $agents; do
      shared=$(comm -12 <(socket_inodes "${!v}") <(socket_inodes "$agent"))
      [ -z "$shared" ] || fail "$name: agent $agent holds the worker's sockets: $shared"
    done
  fi
  kill -TERM "${!v}"; wait "${!v}" 2>/dev/null || true
  pass "$name: no secret, no descriptor, no key of the owner's; PWD the task dir, OLDPWD unset"
}

check_tier plain --no-sandbox
if [ "$SANDBOX_TIER" != none ]; then
  check_tier boxed
  grep -q "tasks run sandboxed (tier $SANDBOX_TIER" "$T/boxed.log" || fail "boxed: not tier $SANDBOX_TIER"
else
  echo "note: this machine cannot sandbox: only --no-sandbox was checked"
fi
