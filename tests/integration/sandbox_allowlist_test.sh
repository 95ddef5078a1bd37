#!/usr/bin/env bash
# A task sees what the sandbox shows it, not the machine minus a list (docs/guide/sandbox.md,
# "What a task sees"): a coordinator run by the worker's own user, its data dir in a place no
# list names (under /var/lib as root, next to the binary otherwise), and a worker of that user
# in tier userns (as root: both run as `nobody`). A task tries to read the coordinator's CA key,
# trust store and database, to connect to its admin socket, to list the data dir, the build
# dir, the owner's homes and the host's /tmp: all fail, and the system dirs programs need are
# there (a shell, python3, /etc/passwd, /dev/urandom, its own /proc).
source "$(dirname "$0")/lib.sh"
sandbox_or_skip
command -v python3 >/dev/null || { echo "SKIP: no python3"; trap - EXIT; rm -rf "$T"; exit 77; }

if [ "$(id -u)" = 0 ]; then
  AS=(setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent)
  tier=$(cd / && "${AS[@]}" "$IDLEPOOL" worker --print-resources --gpus none --json 2>/dev/null |
    jq -r '.sandbox // "none"')
  if [ "$tier" != userns ]; then
    echo "SKIP: nobody cannot sandbox here (tier $tier)"; trap - EXIT; rm -rf "$T"; exit 77
  fi
  BASE=/var/lib
else
  AS=(env)
  BASE=$(dirname "$IDLEPOOL")
fi
D=$(mktemp -d "$BASE/idlepool-jail.XXXXXX")
trap 'rc=$?; rm -rf "$D"; (exit $rc); cleanup' EXIT
chmod 755 "$T" "$D"
mkdir -p "$T/w" "$T/no-sensors"
echo "HOST-TMP-MARKER" >"$T/host-tmp-marker"
if [ "$(id -u)" = 0 ]; then chown nobody: "$D" "$T/w"; fi

"${AS[@]}" "$IDLEPOOL" coordinator --listen 127.0.0.1:0 --data-dir "$D/coord" --serve-listen off \
  >>"$T/coordinator.log" 2>&1 &
PIDS+=($!)
wait_until 20 grep -q "coordinator listening on" "$T/coordinator.log"
ADDR=127.0.0.1:$(sed -n 's/.*coordinator listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$T/coordinator.log" | tail -1)
TOKEN=$("${AS[@]}" "$IDLEPOOL" token create --role submit --data-dir "$D/coord")
"${AS[@]}" "$IDLEPOOL" token create --role worker --ttl 1h --data-dir "$D/coord" >"$T/join.token"
if [ "$(id -u)" = 0 ]; then chown nobody: "$T/join.token"; fi
export IDLEPOOL_COORDINATOR=$ADDR IDLEPOOL_TOKEN=$TOKEN
for f in ca.key trust.db pool.db admin.sock; do [ -e "$D/coord/$f" ] || fail "no $D/coord/$f"; done

"${AS[@]}" "$IDLEPOOL" worker --name w --work-dir "$T/w" --join "$ADDR" --token-file "$T/join.token" \
  --sensors-dir "$T/no-sensors" --dedicated --slots 1 >>"$T/w.log" 2>&1 &
PIDS+=($!)
wait_until 20 is_connected w
grep -q "tasks run sandboxed (tier userns" "$T/w.log" || fail "the worker is not in tier userns"

C=$D/coord
script="exec 1>&2
  for f in ca.key ca.pem trust.db pool.db; do cat $C/\$f >/dev/null 2>&1 && echo leak-read-\$f; done
  ls -A $D 2>/dev/null | grep -q . && echo leak-listed-data-dir
  ls -A $(dirname "$IDLEPOOL") 2>/dev/null | grep -q . && echo leak-listed-build-dir
  python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"$C/admin.sock\")' \
    2>/dev/null && echo leak-admin-socket
  cat $T/host-tmp-marker 2>/dev/null && echo leak-host-tmp
  ls -A /tmp | grep -q host-tmp-marker && echo leak-host-tmp-list
  for d in /root /home /run /srv /mnt /media; do ls -A \$d 2>/dev/null | grep -q . && echo leak-listed-\$d; done
  [ -r /etc/shadow ] && grep -q . /etc/shadow 2>/dev/null && echo leak-shadow
  grep -q '^root:' /etc/passwd && echo sys-passwd
  head -c 8 /dev/urandom | wc -c | grep -q 8 && echo sys-urandom
  python3 -c 'print(\"sys-python\")'
  [ \"\$(ls /proc | grep -c '^[0-9]')\" -le 8 ] && echo sys-own-proc
  echo end-of-probe"
cat >"$T/job.toml" <<TOML
name = "look-around"
command = ["sh", "-c", $(jq -Rn --arg s "$script" '$s')]
count = 1
[retry]
max_attempts = 1
TOML
JOB=$("$IDLEPOOL" submit "$T/job.toml")
"$IDLEPOOL" wait "$JOB" --quiet >/dev/null || fail "the probe job failed: $("$IDLEPOOL" logs "$JOB" 0)"
out=$("$IDLEPOOL" logs "$JOB" 0)
echo "$out" | grep -q end-of-probe || fail "the probe did not finish: $out"
echo "$out" | grep -q "leak-\|HOST-TMP-MARKER\|BEGIN" && fail "the task reached what it must not: $out"
for want in sys-passwd sys-urandom sys-python sys-own-proc; do
  echo "$out" | grep -q "$want" || fail "a system dir a program needs is missing ($want): $out"
done
pass "a task of a same-user worker reached nothing of the coordinator's data dir ($D), the build dir, the homes or the host's /tmp; the system dirs are there"
