# Shared by the tests of the serving gateway through idlepool-gateway-harness in front of
# idlepool-fake-engine replicas (gateway_test.sh, gateway_churn_test.sh); sourced after lib.sh.
# Skips (77) without the two tools, curl or jq. Sets KEY (the bearer key, in $T/key) and H (its
# curl header).
BIN=$(dirname "$IDLEPOOL")
ENGINE=$BIN/idlepool-fake-engine
GATEWAY=$BIN/idlepool-gateway-harness
[ -x "$ENGINE" ] && [ -x "$GATEWAY" ] || { echo "SKIP: no $ENGINE or $GATEWAY"; exit 77; }
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: no curl or jq"; exit 77; }
echo "key-$$-$RANDOM" >"$T/key"
KEY=$(cat "$T/key")

port_in() { sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$1" | head -1; }
# start_engine NAME ARGS...: sets PORT_NAME, PID_NAME.
start_engine() {
  local name=$1; shift
  "$ENGINE" --listen 127.0.0.1:0 --model m1 --id "$name" "$@" >"$T/$name.log" 2>&1 &
  PIDS+=($!)
  printf -v "PID_$name" '%s' "$!"
  wait_until 10 grep -q "listening on" "$T/$name.log"
  printf -v "PORT_$name" '%s' "$(port_in "$T/$name.log")"
}
# start_gateway NAME MAXC ENGINE... [-- EXTRA ARGS]: replicas 1..n in the given order; control
# commands go to fd GW_NAME (ctl NAME CMD); sets GPORT, GPID.
start_gateway() {
  local name=$1 maxc=$2 id=0 e p; shift 2
  local args=(--key-file "$T/key" --service "llm:openai:m1:$maxc")
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    e=PORT_$1; id=$((id + 1)); args+=(--replica "llm:$id:127.0.0.1:${!e}"); shift
  done
  [ $# -gt 0 ] && shift
  mkfifo "$T/$name.ctl"
  "$GATEWAY" "${args[@]}" "$@" <"$T/$name.ctl" >"$T/$name.log" 2>&1 &
  GPID=$!
  PIDS+=($GPID)
  exec {p}>"$T/$name.ctl"
  printf -v "GW_$name" '%s' "$p"
  wait_until 10 grep -q "listening on" "$T/$name.log"
  GPORT=$(port_in "$T/$name.log")
}
ctl() {  # ctl GATEWAY COMMAND: waits until the harness ran it
  local fd=GW_$1; echo "$2" >&"${!fd}"
  wait_until 10 grep -qx "ok $2" "$T/$1.log"
}
H=(-H "Authorization: Bearer $KEY")
gw() { echo "http://127.0.0.1:$GPORT$1"; }
code() { curl -s -o "$T/body" -w '%{http_code}' "$@"; }  # the status; the body in $T/body
chat() { curl -s "${H[@]}" "$(gw /v1/chat/completions)" -d "{\"model\":\"m1\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]$1}"; }
stat() { curl -s "http://127.0.0.1:$(p=PORT_$1; echo "${!p}")/stats" | jq -r ".$2"; }
stat_is() { [ "$(stat "$1" "$2")" = "$3" ]; }
