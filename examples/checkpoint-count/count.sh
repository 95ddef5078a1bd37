#!/bin/sh
# A task that checkpoints: counts to N, one step per DELAY seconds, and keeps its step in
# $IDLEPOOL_CHECKPOINT_DIR/step. Restarted on another machine, it resumes from there.
#
# The checkpoint protocol (docs/guide/lending.md, "Checkpoints: the protocol for task authors"):
#   - read your state from $IDLEPOOL_CHECKPOINT_DIR when you start (idlepool restored the
#     task's latest checkpoint there, from whichever worker saved it);
#   - replace files atomically (write a temporary file, then rename it over the old one): the
#     worker may read the directory at any moment while you run;
#   - on SIGTERM, save and exit within the vacate grace (10 s by default).
N=${1:-100}
DELAY=${2:-0.1}
CK=$IDLEPOOL_CHECKPOINT_DIR/step
i=0
[ -s "$CK" ] && i=$(cat "$CK")
start=$i
save() { echo "$i" > "$CK.tmp" && mv "$CK.tmp" "$CK"; }
trap 'save; exit 143' TERM
while [ "$i" -lt "$N" ]; do
  sleep "$DELAY"
  i=$((i + 1))
  save
done
echo "resumed from $start, counted to $i" > count.txt
