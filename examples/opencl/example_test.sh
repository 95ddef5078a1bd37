#!/usr/bin/env bash
# The OpenCL example program run directly (no pool): on the first OpenCL device (PoCL's CPU
# device in CI), on a device named by IDLEPOOL_OPENCL_DEVICES, and refusing a device that does
# not exist. Skips (77) where there is no OpenCL device at all.
set -euo pipefail
PROG=${1:?usage: example_test.sh idlepool-opencl-example}
T=$(mktemp -d "${TMPDIR:-/tmp}/idlepool-opencl.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PROG" --list >"$T/list" || fail "--list exited $?"
[ -s "$T/list" ] || { echo "skip: no OpenCL device here"; exit 77; }
first=$(awk 'NR==1 {print $1}' "$T/list")
echo "devices:"; cat "$T/list"

# 1..1000000: the longest chain is 837799's, 524 steps (a known result, independent of the
# program's own CPU check).
"$PROG" --task 0 --count 1000000 --out "$T/t0.txt" || fail "task 0 exited $?"
cat "$T/t0.txt"
grep -q "^device .* ($first)$" "$T/t0.txt" || fail "task 0 did not default to $first"
grep -qx "range 1..1000000" "$T/t0.txt" || fail "task 0 range"
grep -qx "longest 524 steps at 837799" "$T/t0.txt" || fail "task 0 longest chain"
grep -qx "verified on the CPU" "$T/t0.txt" || fail "task 0 not verified"

# The device from the environment, as a worker gives it; task 3 of 1000 numbers.
IDLEPOOL_OPENCL_DEVICES="$first,9:9" "$PROG" --task 3 --count 1000 --out "$T/t3.txt" \
  || fail "task 3 on $first exited $?"
grep -q "^device .* ($first)\$" "$T/t3.txt" || fail "task 3 did not use $first: $(head -1 "$T/t3.txt")"
grep -qx "range 3001..4000" "$T/t3.txt" || fail "task 3 range"

# A device that does not exist: exit 2, nothing written.
rc=0; IDLEPOOL_OPENCL_DEVICES=99:0 "$PROG" --out "$T/bad.txt" 2>"$T/bad.err" || rc=$?
[ "$rc" -eq 2 ] || fail "device 99:0: exit $rc, want 2"
[ ! -e "$T/bad.txt" ] || fail "device 99:0 wrote output"
echo "ok: OpenCL example verified on $first"
