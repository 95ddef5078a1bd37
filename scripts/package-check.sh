#!/usr/bin/env bash
# Installs the idlepool package into a pristine Debian bookworm root (debootstrap --variant=minbase,
# cached as a base) and uses it as a lab would: the installed coordinator and two installed
# workers run as the user idlepool (no systemd in a chroot: each by the command that
# --install-service prints for that case), joined with --join; a job runs and every output comes
# back once; then the package is upgraded to a higher version built from the same binary, and
# the pool comes back with its history and identities, no token needed; removing keeps the data,
# purging deletes it. Prints the package size, the installed size with dependencies and the time
# from `apt install` to the first task done.
#
#   sudo scripts/package-check.sh                       # packages build/idlepool (stripped)
#   sudo scripts/package-check.sh --binary build-pkg/idlepool
#
# Needs root (chroot, mounts), debootstrap, jq, sqlite3 and the Debian mirror. The base is kept in
# $PKGCHECK_BASE (default ${TMPDIR:-/tmp}/pkgcheck-bookworm); each run copies it.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
BINARY=$SRC/build/idlepool
while [ $# -gt 0 ]; do
  case $1 in
    --binary) BINARY=$(realpath "$2"); shift 2 ;;
    -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "package-check: unknown argument $1" >&2; exit 2 ;;
  esac
done
die() { echo "package-check: FAIL: $*" >&2; exit 1; }
say() { echo "package-check: $*"; }
[ "$(id -u)" = 0 ] || die "run as root (it makes a chroot)"
for t in debootstrap jq sqlite3 python3; do command -v $t >/dev/null || die "$t is missing"; done
[ -x "$BINARY" ] || die "no binary at $BINARY: scripts/build.sh, or --binary FILE"

T=${TMPDIR:-/tmp}
BASE=${PKGCHECK_BASE:-$T/pkgcheck-bookworm}
WORK=$(mktemp -d "$T/pkgcheck.XXXXXX")
R=$WORK/root
PIDS=()
umount_all() { for m in dev/pts dev sys proc; do umount -l "$R/$m" 2>/dev/null || true; done; }
# SIGTERM to each idlepool process itself (runuser would SIGKILL its child 2 s after a signal).
stop_all() {
  local p c
  for p in "${PIDS[@]}"; do
    c=$(pgrep -P "$p" || true)
    kill -TERM ${c:-$p} 2>/dev/null || true
  done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
}
cleanup() {
  local rc=$?
  stop_all
  umount_all
  if [ $rc -ne 0 ]; then
    for f in "$WORK"/*.log; do [ -f "$f" ] && { echo "=== $f" >&2; tail -20 "$f" >&2; }; done
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# Two packages from one binary: the version package.sh gives it, and a higher one to upgrade to.
V1=$(IDLEPOOL_VERSION=${IDLEPOOL_VERSION:-} scripts/package.sh --binary "$BINARY" --out "$WORK/v1" | tee "$WORK/package.log" | sed -n 's/^package.sh: .*idlepool_\(.*\)_[a-z0-9]*\.deb .*/\1/p')
[ -n "$V1" ] || { cat "$WORK/package.log"; die "package.sh made no package"; }
V2=$V1+check1
IDLEPOOL_VERSION=$V2 scripts/package.sh --binary "$BINARY" --out "$WORK/v2" >/dev/null
dpkg --compare-versions "$V2" gt "$V1" || die "$V2 is not above $V1"
DEB1=$(ls "$WORK"/v1/idlepool_*.deb) DEB2=$(ls "$WORK"/v2/idlepool_*.deb)
say "packages $(basename "$DEB1") ($(du -h "$DEB1" | cut -f1)) and $(basename "$DEB2")"

if [ ! -x "$BASE/usr/bin/apt-get" ]; then
  mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  say "making the bookworm base in $BASE (once)"
  debootstrap --variant=minbase bookworm "$BASE.tmp" "${mirror:-http://deb.debian.org/debian}" \
    >"$T/pkgcheck-debootstrap.log" 2>&1 || die "debootstrap failed: $T/pkgcheck-debootstrap.log"
  mv "$BASE.tmp" "$BASE"
fi
mkdir -p "$R"
cp -a "$BASE/." "$R/"
cp /etc/resolv.conf "$R/etc/resolv.conf"
for m in proc sys dev dev/pts; do mkdir -p "$R/$m"; mount --bind "/$m" "$R/$m"; done
cp "$DEB1" "$DEB2" "$R/root/"
# In the root, with a clean environment (nothing of this machine's leaks in).
in_root() { chroot "$R" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
in_root apt-get update -qq >"$WORK/apt-update.log" 2>&1 || die "apt-get update failed"
du_root() { du -sxk --exclude=./proc --exclude=./sys --exclude=./dev "$R" | cut -f1; }
in_root apt-get clean   # debootstrap leaves its downloads in apt's cache
before_kb=$(du_root)

# A free port on 127.0.0.1 (the chroot shares this machine's network), fixed for the restart.
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ADDR=127.0.0.1:$PORT

T0=$(date +%s.%N)
say "apt install ./$(basename "$DEB1") in a pristine bookworm root"
in_root apt-get install -y --no-install-recommends "/root/$(basename "$DEB1")" >"$WORK/apt-install.log" 2>&1 \
  || die "apt install failed: $(tail -5 "$WORK/apt-install.log")"
T_INSTALLED=$(date +%s.%N)
apt_says=$(grep -o 'After this operation, .* of additional disk space will be used' "$WORK/apt-install.log" || true)
in_root apt-get clean
after_kb=$(du_root)
ndeps=$(sed -n 's/.* \([0-9]*\) newly installed.*/\1/p' "$WORK/apt-install.log")
in_root dpkg-query -W -f='${Depends}\n' idlepool | grep -q -- '-dev' && die "a -dev package in Depends"
in_root getent passwd idlepool >/dev/null || die "no user idlepool after install"
[ "$(in_root stat -c %U /var/lib/idlepool)" = idlepool ] || die "/var/lib/idlepool is not idlepool's"

# start NAME COMMAND-LINE: runs a printed command (in the root) in the background.
start() {
  local name=$1; shift
  chroot "$R" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    bash -c "exec $*" >>"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
}
# until_true SECONDS WHAT COMMAND...: polls until COMMAND succeeds (a bound on a hang).
until_true() {
  local limit=$1 what=$2; shift 2
  local end=$(( $(date +%s) + limit ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || die "timed out after ${limit}s waiting for $what"
    sleep 0.2
  done
}
hand_command() { sed -n 's/.*start it by hand with: //p' "$1"; }

say "idlepool coordinator --install-service (no systemd here: started by the command it prints)"
in_root idlepool coordinator --install-service --listen "$ADDR" --http off --serve-listen off \
  >"$WORK/install-coordinator.log" 2>&1 || die "coordinator --install-service: $(cat "$WORK/install-coordinator.log")"
cat "$WORK/install-coordinator.log"
COORD_CMD=$(hand_command "$WORK/install-coordinator.log")
[ -n "$COORD_CMD" ] || die "coordinator --install-service printed no command to start it by hand"
grep -q "^IDLEPOOL_COORDINATOR_ARGS=--listen $ADDR --http off --serve-listen off$" "$R/etc/idlepool/coordinator.env" \
  || die "coordinator.env: $(cat "$R/etc/idlepool/coordinator.env")"
start coordinator "$COORD_CMD"
coord_starts() { [ "$(grep -c 'coordinator listening on' "$WORK/coordinator.log")" -ge "$1" ]; }
until_true 60 "the coordinator" coord_starts 1
uid=$(in_root id -u idlepool)
coord_pid=$(pgrep -n -f "^/usr/bin/idlepool coordinator --data-dir /var/lib/idlepool/coordinator") || die "no coordinator process"
[ "$(ps -o uid= -p "$coord_pid" | tr -d ' ')" = "$uid" ] || die "the coordinator does not run as idlepool (uid $uid)"

(umask 077
 in_root idlepool token create --role worker --data-dir /var/lib/idlepool/coordinator >"$R/root/join.token"
 in_root idlepool token create --role submit --name check --data-dir /var/lib/idlepool/coordinator >"$R/root/submit.token")
in_root idlepool login "$ADDR" --token-file /root/submit.token >/dev/null

# Tasks run sandboxed where the root can make namespaces; in a chroot it usually cannot (the
# probe says none), so the workers run --no-sandbox, as bench/files does.
tier=$(in_root runuser -u idlepool -- idlepool worker --print-resources --gpus none --json 2>/dev/null | jq -r '.sandbox // "none"') || tier=none
flags=(--slots 1 --gpus none --dedicated)
[ "$tier" != none ] || flags+=(--no-sandbox)
say "sandbox tier as idlepool here: $tier; worker options ${flags[*]}"

say "idlepool worker --join $ADDR --token-file FILE --install-service"
in_root idlepool worker --join "$ADDR" --token-file /root/join.token --install-service --name pkg-w1 "${flags[@]}" \
  >"$WORK/install-worker.log" 2>&1 || die "worker --install-service: $(cat "$WORK/install-worker.log")"
cat "$WORK/install-worker.log"
W1_CMD=$(hand_command "$WORK/install-worker.log")
[ -n "$W1_CMD" ] || die "worker --install-service printed no command to start it by hand"
[ "$(in_root stat -c %U /var/lib/idlepool/worker/identity)" = idlepool ] || die "the identity is not idlepool's"
grep -rqsF "$(head -1 "$R/root/join.token")" "$R/etc/idlepool" "$R/var/lib/idlepool/worker" && die "the join token was kept on disk"
start worker-1 "$W1_CMD"
# The second worker as a person would start one by hand, as idlepool, in its own work dir.
in_root install -o idlepool -g idlepool -m 0600 /root/join.token /var/lib/idlepool/join.token
W2_CMD="runuser -u idlepool -- idlepool worker --work-dir /var/lib/idlepool/worker-2 --name pkg-w2 ${flags[*]}"
start worker-2 "$W2_CMD --join $ADDR --token-file /var/lib/idlepool/join.token"
connected() {
  [ "$(in_root idlepool workers --json | jq '[.workers[] | select(.state=="connected")] | length')" = 2 ]
}
until_true 60 "two connected workers" connected
rm -f "$R/var/lib/idlepool/join.token" "$R/root/join.token"
in_root idlepool workers

# job NAME N: a job of N tasks, each writing out-INDEX.txt.
job() {
  cat >"$R/root/$1.toml" <<EOF
name = "$1"
count = $2
command = ["sh", "-c", "echo task {index} of $1 > out-{index}.txt"]
outputs = ["out-*.txt"]
EOF
  in_root idlepool submit "/root/$1.toml"
}
# check_outputs JOB NAME N: fetched, each output once with the right text, and committed once.
check_outputs() {
  local j=$1 name=$2 n=$3
  in_root idlepool wait "$j" --quiet >/dev/null || die "job $j did not succeed: $(in_root idlepool status "$j")"
  in_root idlepool fetch "$j" --out "/root/out-$j" >/dev/null
  [ "$(ls "$R/root/out-$j" | wc -l)" = "$n" ] || die "job $j: $(ls "$R/root/out-$j" | wc -l) outputs, want $n"
  for i in $(seq 0 $((n - 1))); do
    [ "$(cat "$R/root/out-$j/out-$i.txt")" = "task $i of $name" ] || die "job $j: out-$i.txt is wrong"
  done
  local once
  once=$(sqlite3 -readonly "$R/var/lib/idlepool/coordinator/pool.db" \
    "SELECT COUNT(*) || ' ' || COUNT(DISTINCT path) FROM outputs WHERE job_id=$j")
  [ "$once" = "$n $n" ] || die "job $j: outputs committed $once (count, distinct), want $n $n"
}
succeeded_at_least() { [ "$(in_root idlepool status "$1" --json | jq .succeeded)" -ge 1 ]; }

JOB1=$(job first 8)
until_true 120 "the first task" succeeded_at_least "$JOB1"
T_FIRST=$(date +%s.%N)
check_outputs "$JOB1" first 8
spread=$(sqlite3 -readonly "$R/var/lib/idlepool/coordinator/pool.db" \
  "SELECT COUNT(DISTINCT a.worker) FROM tasks t JOIN attempts a ON a.id=t.committed_attempt WHERE t.job_id=$JOB1")
say "job $JOB1: 8 outputs, each committed and fetched once, run by $spread workers"

say "upgrade to $V2 (the pool stopped first: no systemd to restart it here)"
ident_before=$(cd "$R/var/lib/idlepool" && sha256sum worker/identity/* worker-2/identity/* coordinator/ca.pem)
stop_all
in_root apt-get install -y "/root/$(basename "$DEB2")" >"$WORK/apt-upgrade.log" 2>&1 || die "upgrade failed"
[ "$(in_root dpkg-query -W -f='${Version}' idlepool)" = "$V2" ] || die "not upgraded to $V2"
[ "$(cd "$R/var/lib/idlepool" && sha256sum worker/identity/* worker-2/identity/* coordinator/ca.pem)" = "$ident_before" ] \
  || die "the upgrade changed identities or the pool CA"
start coordinator "$COORD_CMD"
until_true 60 "the coordinator after the upgrade" coord_starts 2
start worker-1 "$W1_CMD"
start worker-2 "$W2_CMD"   # no token: the identity from the first start
until_true 60 "both workers back after the upgrade" connected
in_root idlepool status --json | jq -e --argjson j "$JOB1" '[.jobs[] | select(.job==$j and .state=="succeeded")] | length == 1' >/dev/null \
  || die "job $JOB1 is not listed as succeeded after the upgrade"
JOB2=$(job second 4)
check_outputs "$JOB2" second 4
say "after the upgrade: job $JOB1 still listed (succeeded), job $JOB2 ran: 4 outputs once"

say "remove keeps the data, purge deletes it"
stop_all
in_root apt-get remove -y idlepool >"$WORK/apt-remove.log" 2>&1 || die "remove failed"
[ -f "$R/var/lib/idlepool/coordinator/pool.db" ] && [ -f "$R/etc/idlepool/worker.env" ] || die "remove deleted data"
in_root apt-get purge -y idlepool >"$WORK/apt-purge.log" 2>&1 || die "purge failed"
[ ! -e "$R/var/lib/idlepool" ] && [ ! -e "$R/etc/idlepool" ] || die "purge left data"
in_root getent passwd idlepool >/dev/null && die "purge left the user idlepool"

secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
echo
echo "package:                  $(basename "$DEB1"), $(du -k "$DEB1" | cut -f1) KiB"
echo "installed with deps:      $(( (after_kb - before_kb) / 1024 )) MiB on disk (du of the root before and after, apt's cache emptied; ${ndeps:-?} packages, idlepool included)"
echo "apt said:                 ${apt_says:-?}"
echo "apt install took:         $(secs "$T0" "$T_INSTALLED") s (downloads from the mirror included)"
echo "apt install → first task: $(secs "$T0" "$T_FIRST") s (install, coordinator and two workers set up and joined, a job submitted)"
echo "package-check: ok"
