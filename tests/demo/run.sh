#!/usr/bin/env bash
# The edgesync demo, on loopback only: a gateway's local broker with simulated
# sensors, two regions (broker + hub each), and a gateway syncing with the
# nearest one. Midway the gateway's uplink is cut (both region brokers
# stopped) and restored; a live line shows ingest, backlog, sends and
# acknowledgements; where the binary serves a status page, its address is
# printed. Ends by itself after DEMO_SECONDS (or on Ctrl-C) with a summary
# (readings published = ingested = held by the regions, none lost, none
# duplicated) and a sample `edgesync query` of one device. Leaves nothing
# running.
#
#   tests/demo/run.sh build/edgesync      (make demo)
#   DEMO_SECONDS=180 DEMO_RATE=1000 DEMO_DEVICES=200 to change the defaults
set -euo pipefail

BIN=$(readlink -f "${1:-build/edgesync}")
BUILD=$(dirname "$BIN")
SIM="$BUILD/sensor_sim"
SECONDS_TOTAL=${DEMO_SECONDS:-150}
RATE=${DEMO_RATE:-1000}
DEVICES=${DEMO_DEVICES:-200}
CUT_AT=$((SECONDS_TOTAL / 4))
CUT_FOR=$((SECONDS_TOTAL / 4))
DIR="$BUILD/demo"

rm -rf "$DIR"
mkdir -p "$DIR"
PIDS=()
cleanup() {
  # A frozen broker handles no signal but SIGKILL until it is thawed.
  for pid in "${PIDS[@]}"; do kill -CONT "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  sleep 0.5
  for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT
# First Ctrl-C: stop the sensors, let the backlog drain, print the summary.
# Second Ctrl-C: skip the wait for the drain.
trap 'INTERRUPTED=$((INTERRUPTED + 1)); echo; echo "demo: interrupted (again to skip the drain)"' INT TERM
INTERRUPTED=0

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
  echo $((20000 + RANDOM % 20000)); }

start_broker() {  # name port
  local name=$1 port=$2 d="$DIR/$1"
  mkdir -p "$d/data"
  cat > "$d/mosquitto.conf" <<CONF
user root
listener $port 127.0.0.1
allow_anonymous true
persistence true
persistence_location $d/data/
autosave_interval 5
# edgesync's persistent session must not lose readings while it is down:
# the default queue limit (1000) drops the rest silently.
max_queued_messages 0
max_queued_bytes 0
max_inflight_messages 0
set_tcp_nodelay true
log_dest file $d/broker.log
CONF
  # Each part runs in its own session: Ctrl-C reaches this script only, which
  # then stops everything in order and still prints the summary.
  setsid mosquitto -c "$d/mosquitto.conf" &
  echo $! > "$d/pid"
  PIDS+=($!)
}

wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; return 1; }

LOCAL_PORT=$(free_port); EU_PORT=$(free_port); US_PORT=$(free_port)
start_broker local "$LOCAL_PORT"; start_broker eu "$EU_PORT"; start_broker us "$US_PORT"
wait_port "$LOCAL_PORT"; wait_port "$EU_PORT"; wait_port "$US_PORT"

for region in eu us; do
  port_var=${region^^}_PORT
  cat > "$DIR/$region/hub.toml" <<CONF
[gateway]
data_dir = "$DIR/$region"
[hub]
region = "$region"
broker_uri = "tcp://127.0.0.1:${!port_var}"
CONF
  setsid "$BIN" region --config "$DIR/$region/hub.toml" >> "$DIR/$region/hub.log" 2>&1 &
  PIDS+=($!)
done

# The status page and /metrics, where this build has them ([metrics] listen).
STATUS_CONF=""
STATUS_URL=""
if "$BIN" config example 2>/dev/null | awk '/^\[/ { m = ($0 == "[metrics]") } m && /^#? *listen *=/ { f = 1 } END { exit !f }'; then
  STATUS_PORT=$(free_port)
  STATUS_CONF=$'[metrics]\nlisten = "127.0.0.1:'"$STATUS_PORT"'"'
  STATUS_URL="http://127.0.0.1:$STATUS_PORT/"
fi

mkdir -p "$DIR/gateway"
cat > "$DIR/gateway/gateway.toml" <<CONF
[gateway]
id = "demo-gw"
data_dir = "$DIR/gateway"
[ingest]
broker_uri = "tcp://127.0.0.1:$LOCAL_PORT"
device_rate = 50.0
[uplink]
probe_interval_ms = 1000
failback_after_s = 10
[[region]]
name = "eu"
uri = "tcp://127.0.0.1:$EU_PORT"
preference = 0
[[region]]
name = "us"
uri = "tcp://127.0.0.1:$US_PORT"
preference = 1
$STATUS_CONF
CONF
setsid "$BIN" gateway --config "$DIR/gateway/gateway.toml" >> "$DIR/gateway/gateway.log" 2>&1 &
PIDS+=($!)
GW_PID=$!

# The gateway's first run creates its persistent session: sensors that
# publish before it has subscribed are nobody's (later runs find the session
# in place and the broker queues for it).
for _ in $(seq 100); do
  "$BIN" status --json --config "$DIR/gateway/gateway.toml" 2>/dev/null | tr -d ' \n' |
    grep -q '"ingest_mqtt":{"connected":true' && break
  kill -0 "$GW_PID" 2>/dev/null || { echo "demo: the gateway did not start:"; tail -5 "$DIR/gateway/gateway.log"; exit 1; }
  sleep 0.2
done
sleep 1

setsid "$SIM" --uri "tcp://127.0.0.1:$LOCAL_PORT" --devices "$DEVICES" --rate "$RATE" --seconds "$SECONDS_TOTAL" \
  --count-file "$DIR/published" > "$DIR/sim.log" 2>&1 &
SIM_PID=$!
PIDS+=($SIM_PID)

echo "demo: local broker :$LOCAL_PORT, regions eu :$EU_PORT, us :$US_PORT; $DEVICES devices, $RATE readings/s, ${SECONDS_TOTAL}s"
echo "demo: the uplink is cut at ${CUT_AT}s for ${CUT_FOR}s; logs and stores in $DIR"
if [ -n "$STATUS_URL" ]; then
  echo "demo: the gateway's status page: $STATUS_URL (Prometheus metrics: ${STATUS_URL}metrics)"
fi
start=$(date +%s)
cut=0
while kill -0 "$SIM_PID" 2>/dev/null && [ "$INTERRUPTED" = 0 ]; do
  t=$(( $(date +%s) - start ))
  if [ $cut = 0 ] && [ $t -ge $CUT_AT ]; then
    kill -STOP "$(cat "$DIR/eu/pid")" "$(cat "$DIR/us/pid")"; cut=1
    printf '\n-- uplink cut (region brokers frozen) --\n'
  elif [ $cut = 1 ] && [ $t -ge $((CUT_AT + CUT_FOR)) ]; then
    kill -CONT "$(cat "$DIR/eu/pid")" "$(cat "$DIR/us/pid")"; cut=2
    printf '\n-- uplink restored --\n'
  fi
  printf '\r[%4ss] %s   ' "$t" "$("$BIN" status --config "$DIR/gateway/gateway.toml" --line 2>/dev/null || echo starting)"
  sleep 1
done
[ $cut = 1 ] && kill -CONT "$(cat "$DIR/eu/pid")" "$(cat "$DIR/us/pid")"
kill "$SIM_PID" 2>/dev/null || true  # SIGTERM: it flushes and writes its final count
wait "$SIM_PID" 2>/dev/null || true
echo
echo "demo: sensors stopped; waiting for the backlog to drain"
published=$(cat "$DIR/published" 2>/dev/null || echo 0)
for _ in $(seq 180); do
  [ "$INTERRUPTED" -ge 2 ] && break
  line=$("$BIN" status --config "$DIR/gateway/gateway.toml" --line 2>/dev/null || true)
  printf '\r%s   ' "$line"
  ingested=$(echo "$line" | sed -n 's/^ingested \([0-9]*\) .*/\1/p')
  # Done when the broker has handed over every reading the sensors published
  # and the region has acknowledged all of them.
  case "$line" in *"backlog 0 "*) [ "${ingested:-0}" -ge "$published" ] && break ;; esac
  sleep 1
done
echo
kill "$GW_PID" 2>/dev/null || true
wait "$GW_PID" 2>/dev/null || true
summary=0
"$BUILD/demo_summary" --published "$published" --gateway "$DIR/gateway/store.db" \
  --region "$DIR/eu/store.db" --region "$DIR/us/store.db" || summary=$?

# What a field engineer asks a gateway: the readings of one device, from its
# own store and the read view of the regions.
DEVICE=$(printf 'dev-%05d' $((DEVICES > 7 ? 7 : 0)))
QUERY=("$BIN" query --config "$DIR/gateway/gateway.toml" --device "$DEVICE" --limit 8)
if "$BIN" query --help 2>/dev/null | grep -q -- '--format'; then QUERY+=(--format table); fi
echo
echo "demo: a sample query: edgesync ${QUERY[*]:1}"
"${QUERY[@]}"
# A machine whose kernel says its clock is not synchronised (no NTP) gets
# its receive times flagged, as a board booted offline would: say why.
if python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["clock"]["trusted"] is False else 1)' \
    "$DIR/gateway/status.json" 2>/dev/null; then
  echo "demo: this machine's clock is not synchronised (adjtimex), so the gateway flags the times it stamps"
  echo "      'untrusted' until it is (docs/INGEST.md, Clock trust)"
fi
exit "$summary"
