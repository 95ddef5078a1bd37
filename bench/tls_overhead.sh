#!/usr/bin/env bash
# The cost of TLS everywhere (issue 16): no-op tasks per second of bench/throughput built at the
# last commit before TLS and at this tree, run alternately in the same session (medians and the
# ratio), and the time from `idlepool worker --join` (a new machine: key, pinned CA, JoinPool,
# mTLS session) to its first task done, with real processes on 127.0.0.1.
#
#   bench/tls_overhead.sh [--base COMMIT] [--tasks 2000] [--rounds 5] [--join-only]
# Needs build/ (scripts/build.sh --all) and builds the base commit's bench in build-base/ (a worktree).
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=b8eaadd TASKS=2000 ROUNDS=5 JOIN_ONLY=0
while [ $# -gt 0 ]; do
  case $1 in
    --base) BASE=$2; shift 2 ;;
    --tasks) TASKS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --join-only) JOIN_ONLY=1; shift ;;
    *) echo "usage: $0 [--base COMMIT] [--tasks N] [--rounds R]" >&2; exit 2 ;;
  esac
done
ROOT=$PWD
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
WT=$ROOT/build-base/src
if [ "$JOIN_ONLY" = 0 ]; then
if [ ! -x "$ROOT/build-base/bench/throughput" ]; then
  rm -rf "$ROOT/build-base"; mkdir -p "$ROOT/build-base"
  git worktree add --detach "$WT" "$BASE" >/dev/null
  cmake -S "$WT" -B "$ROOT/build-base" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    $(command -v ccache >/dev/null && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache) >/dev/null
  ninja -C "$ROOT/build-base" bench_throughput >/dev/null
fi
ninja -C build bench_throughput idlepool >/dev/null

rate() { "$1" --tasks "$TASKS" --repeats 1 --pool-only | sed -n 's/.*run 1: idlepool \([0-9.]*\) tasks.*/\1/p' | head -1; }
: >/tmp/tls-base.txt; : >/tmp/tls-head.txt
for r in $(seq "$ROUNDS"); do
  rate "$ROOT/build-base/bench/throughput" >>/tmp/tls-base.txt
  rate "$ROOT/build/bench/throughput" >>/tmp/tls-head.txt
done
b=$(median </tmp/tls-base.txt); h=$(median </tmp/tls-head.txt)
echo "no-op tasks/s, $TASKS tasks, median of $ROUNDS alternating rounds:"
echo "  before TLS ($BASE): $b   ($(tr '\n' ' ' </tmp/tls-base.txt))"
echo "  TLS (this tree):     $h   ($(tr '\n' ' ' </tmp/tls-head.txt))"
awk -v b="$b" -v h="$h" 'BEGIN { printf "  ratio TLS/before: %.3f (%+.1f%%)\n", h / b, (h / b - 1) * 100 }'
fi

# Join to first task: a job of one task waits; a new worker joins and runs it.
T=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
B=$ROOT/build/idlepool
"$B" coordinator --listen 127.0.0.1:0 --data-dir "$T/coord" --http off >"$T/coord.log" 2>&1 &
until grep -q "listening on" "$T/coord.log"; do sleep 0.05; done
ADDR=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$T/coord.log")
"$B" token create --role worker --data-dir "$T/coord" >"$T/join" 2>/dev/null
export IDLEPOOL_COORDINATOR=$ADDR XDG_CONFIG_HOME=$T/cfg
IDLEPOOL_TOKEN=$("$B" token create --role submit --data-dir "$T/coord" 2>/dev/null); export IDLEPOOL_TOKEN
printf 'name = "first"\ncommand = ["true"]\ncount = 1\n' >"$T/job.toml"
: >"$T/join.txt"
for r in $(seq "$ROUNDS"); do
  JOB=$("$B" submit "$T/job.toml" 2>/dev/null)
  t0=$(date +%s.%N)
  "$B" worker --name "j$r" --work-dir "$T/w$r" --join "$ADDR" --token-file "$T/join" --dedicated \
    --no-probe --no-calibrate >"$T/w$r.log" 2>&1 &
  "$B" wait "$JOB" >/dev/null 2>&1
  t1=$(date +%s.%N)
  kill -TERM $! ; wait $! 2>/dev/null || true
  echo "$t0 $t1" | awk '{ printf "%.3f\n", $2 - $1 }' >>"$T/join.txt"
done
echo "worker --join to its first task done (s), median of $ROUNDS: $(median <"$T/join.txt")   ($(tr '\n' ' ' <"$T/join.txt"))"
