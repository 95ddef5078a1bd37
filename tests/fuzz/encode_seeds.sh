#!/usr/bin/env bash
# Writes the binary seeds of the message fuzzers (corpus/worker_message, corpus/client_message)
# from their text-format sources (seeds/*/NAME.txtpb -> corpus/*/NAME.bin) with protoc. Run it
# after editing a seed or changing proto/idlepool.proto, and commit both.
set -euo pipefail
cd "$(dirname "$0")"
proto=../../proto
encode() {  # TARGET MESSAGE
  for src in seeds/"$1"/*.txtpb; do
    protoc --proto_path="$proto" --encode="idlepool.v1.$2" "$proto/idlepool.proto" \
      <"$src" >"corpus/$1/$(basename "$src" .txtpb).bin"
  done
}
encode worker_message WorkerMessage
encode client_message PlanRequest  # a SubmitJobRequest is the same bytes (field 1, the spec)
# join_request: the first byte picks the surface (even: a JoinRequest, odd: a token's text).
for src in seeds/join_request/*.txtpb; do
  { printf '\0'; protoc --proto_path="$proto" --encode=idlepool.v1.JoinRequest \
      "$proto/idlepool.proto" <"$src"; } >"corpus/join_request/$(basename "$src" .txtpb).bin"
done
