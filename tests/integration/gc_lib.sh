# Shared by the collection tests (gc_delete_test, gc_kill_test); sourced after lib.sh.
# blob_path SHA: where the coordinator keeps a blob; sha_of FILE; job_spec NAME INPUT...: writes
# $T/NAME.toml, a 2-task job over those inputs whose outputs hash them.
blob_path() { echo "$T/coord/blobs/${1:0:2}/$1"; }
sha_of() { sha256sum "$1" | cut -d' ' -f1; }
job_spec() {  # job_spec NAME INPUT...
  local name=$1; shift
  local ins; ins=$(printf '"%s",' "$@"); ins=${ins%,}
  cat >"$T/$name.toml" <<TOML
name = "$name"
command = ["sh", "-c", "cat * | sha256sum > out-{index}.txt; echo $name-{index} >> out-{index}.txt"]
count = 2
inputs = [$ins]
outputs = ["out-*.txt"]
TOML
}
