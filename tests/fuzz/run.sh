#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang into build-fuzz/ and runs each for a
# bounded time over a scratch copy of its checked-in corpus (the tree is never written). Fails
# when a target crashes, breaks one of its properties, hangs on an input (-timeout) or runs out
# of memory (-rss_limit_mb); the input is then kept under build-fuzz/fuzz-artifacts/TARGET/ and
# the command that replays it is printed.
#
#   tests/fuzz/run.sh                                  every target, 20 s each
#   FUZZ_SECONDS=300 tests/fuzz/run.sh job_spec frames  some targets, longer
#
# Targets: frames job_spec owner_policy worker_message client_message join_request.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${FUZZ_SECONDS:-20}
build=${FUZZ_BUILD_DIR:-$PWD/build-fuzz}
all=(frames job_spec owner_policy worker_message client_message join_request)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz: clang++ is missing (scripts/bootstrap.sh installs clang and libclang-rt-dev)" >&2
  exit 1
fi
launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DIDLEPOOL_FUZZ=ON "${launcher[@]}" >/dev/null
ninja -C "$build" "${targets[@]/#/fuzz_}"

dict_of() {
  case $1 in
    worker_message | client_message) echo tests/fuzz/message.dict ;;
    *) echo "tests/fuzz/$1.dict" ;;
  esac
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=()
for t in "${targets[@]}"; do
  corpus=$work/corpus/$t
  artifacts=$build/fuzz-artifacts/$t
  mkdir -p "$corpus" "$artifacts" "$work/tmp-$t"
  cp tests/fuzz/corpus/"$t"/* "$corpus"/
  args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -dict="$(dict_of "$t")"
        -artifact_prefix="$artifacts/" -print_final_stats=1)
  start=$SECONDS
  if TMPDIR=$work/tmp-$t "$build/tests/fuzz/fuzz_$t" "${args[@]}" "$corpus" >"$work/$t.log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log")
    echo "fuzz: $t: ok, ${runs:-?} inputs in $((SECONDS - start)) s"
  else
    failed+=("$t")
    tail -n 60 "$work/$t.log"
    echo "fuzz: $t FAILED; replay with: $build/tests/fuzz/fuzz_$t $artifacts/<crash-...>" >&2
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]}" >&2
  exit 1
fi
