# attack_disk_fill: fills the coordinator's data dir with abandoned partial uploads (issue 21
# point 8). With the submit token, idlepool-abandon-uploads (built next to idlepool) starts
# DISK_FILL_COUNT uploads (default 300) of made-up blobs that each declare DISK_FILL_MIB MiB
# (default 8192: 8 GiB, 2.4 TB for all of them), sends the last DISK_FILL_CHUNKS 1 MiB chunks of
# each (default 1) and leaves: every admitted one is a sparse partial of 8 GiB apparent holding
# 1 MiB and its 280 KB manifest. A coordinator that checked only the bytes still to come admitted
# them all (and, on a small disk, filled it until its next store commit failed and it died);
# now each is counted at its declared size against the space above the reserve, so all but a
# few are refused with RESOURCE_EXHAUSTED, and what was admitted is removed once idle for 2
# minutes (--partial-idle-ms on the coordinator shortens that).
#
# Bounded: at most DISK_FILL_COUNT uploads, DISK_FILL_COUNT * (DISK_FILL_CHUNKS MiB + the
# manifest) on disk (about 400 MB with the defaults, on a coordinator without the reserve), one
# connection at a time; a few seconds here. Uses IDLEPOOL, T, ADDR, TOKEN (as
# IDLEPOOL_COORDINATOR and IDLEPOOL_TOKEN) and the pool CA fetched by pin. Prints the tool's
# JSON summary (abandoned, refused, first_refusal) to $T/disk_fill.json and stdout.
attack_disk_fill() {
  local tool
  tool=$(dirname "$IDLEPOOL")/idlepool-abandon-uploads
  [ -x "$tool" ] || { echo "attack_disk_fill: no $tool (build it: ninja idlepool-abandon-uploads)" >&2; return 1; }
  IDLEPOOL_COORDINATOR=$ADDR IDLEPOOL_TOKEN=$TOKEN "$tool" \
    --count "${DISK_FILL_COUNT:-300}" --declared-mib "${DISK_FILL_MIB:-8192}" \
    --send-chunks "${DISK_FILL_CHUNKS:-1}" --seed "disk-fill-$$-$RANDOM" | tee "$T/disk_fill.json"
}
