#!/usr/bin/env bash
# bench-live.sh — live boards against polling, in the same run (docs/performance.md,
# "Live boards").
#
# Builds the gateway and the load tool, starts its own Redis Cluster on BENCH_PORT..+5
# (7360..7365), one gateway with deploy/bench-live.yaml on a free loopback port (its
# RLIMIT_NOFILE raised to the hard limit: K streams are K sockets) and the plain Go
# server (loadtest/plainhttp: every GET answered with the gateway's Top-10 bytes, and
# GET /live streams that get those bytes as events, with no other work), prefills
# MEMBERS members, then runs the load tool's live scenario: for each K in KS, the phases
# PHASES (a warm-up poll that loads every board, writes alone, K live streams, K clients polling the same reads every second,
# …, then the same K clients on the plain server: streams at the events per
# client-second the live phases got, and polling), DURATION each, with RATE events/s
# written open loop to the gateway throughout. It prints delivery delay p50/p99, drops,
# gateway CPU per client (live ÷ poll, net of the writes), the plain server's live ÷
# poll in the same run (what pushing costs beside polling on this machine before any
# of the gateway's work), memory per subscriber and Redis commands/s per phase and per
# K. The cluster and the servers are stopped at the end.
#
#   make bench-live                                 # K = 1000 and 3000, 20 s per phase (≈ 16 min)
#   KS=1000 DURATION=10s make bench-live            # quick look
#   KS=1000,5000 RATE=200 MEMBERS=20000 make bench-live
#   GATEWAY=/tmp/gw-old KS=1000 make bench-live     # another build of the gateway, same load tool
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BENCH_PORT=${BENCH_PORT:-7360}
KS=${KS:-1000,3000}
PHASES=${PHASES:-warm,writes,live,writes,poll,writes,poll,writes,live,writes,plainlive,plainpoll,plainpoll,plainlive}
DURATION=${DURATION:-20s}
RATE=${RATE:-100}
MEMBERS=${MEMBERS:-10000}
MEMBER_SKEW=${MEMBER_SKEW:-1.1}
TOP_ONLY=${TOP_ONLY:-0.5}
# conn: the load tool reads each stream off its own connection (its cheapest
# reader); transport: through net/http and the Go client library.
CLIENT=${CLIENT:-conn}
CONFIG=${CONFIG:-deploy/bench-live.yaml}
OUT=${OUT:-loadtest/results/bench-live-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

CLUSTER=deploy/cluster/cluster.sh
gw=""
plain=""
cleanup() {
	if [[ -n $gw ]]; then kill "$gw" 2>/dev/null || true; wait "$gw" 2>/dev/null || true; fi
	if [[ -n $plain ]]; then kill "$plain" 2>/dev/null || true; wait "$plain" 2>/dev/null || true; fi
	$CLUSTER -p "$BENCH_PORT" down >/dev/null 2>&1 || true
}
trap cleanup EXIT

# GATEWAY: a gateway binary to measure instead of this tree's (an A/B
# against an older build: go build -o /tmp/gw-old ./cmd/gateway there).
if [[ -n ${GATEWAY:-} ]]; then cp "$GATEWAY" "$OUT/gateway"; else go build -o "$OUT/gateway" ./cmd/gateway; fi
go build -o "$OUT/loadtest" ./loadtest
go build -o "$OUT/plainhttp" ./loadtest/plainhttp

RANKGATE_CLUSTER_NODE_TIMEOUT= RANKGATE_CLUSTER_EXTRA_ARGS= $CLUSTER -p "$BENCH_PORT" up >/dev/null
ADDRS=$($CLUSTER -p "$BENCH_PORT" addrs)

# A free loopback port: bind port 0, read it back.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
ulimit -n "$(ulimit -Hn)"
RANKGATE_REDIS_ADDRS=$ADDRS RANKGATE_REDIS_PREFIX="bl$(date +%s)" "$OUT/gateway" -config "$CONFIG" -listen "127.0.0.1:$PORT" \
	-ready-file "$OUT/ready" 2>"$OUT/gateway.log" &
gw=$!
for _ in $(seq 1 120); do [[ -s $OUT/ready ]] && break; sleep 0.5; done
[[ -s $OUT/ready ]] || { echo "bench-live: the gateway did not start; see $OUT/gateway.log" >&2; exit 1; }

lt=("$OUT/loadtest" -gateway "http://127.0.0.1:$PORT" -config "$CONFIG" -family w4 -members "$MEMBERS" -member-skew "$MEMBER_SKEW")
"${lt[@]}" -prefill "$MEMBERS" -duration 0 >"$OUT/prefill.txt" 2>&1 ||
	{ echo "bench-live: prefill failed; see $OUT/prefill.txt" >&2; exit 1; }

# The plain server answers (and pushes) the gateway's own Top-10 bytes.
curl -fsS "http://127.0.0.1:$PORT/v1/boards/w4/current/national/top?limit=10" | tr -d '\n' >"$OUT/top10.json"
PLAIN_PORT=$(free_port)
"$OUT/plainhttp" -listen "127.0.0.1:$PLAIN_PORT" -body "$OUT/top10.json" -ready-file "$OUT/ready-plain" 2>"$OUT/plain.log" &
plain=$!
for _ in $(seq 1 20); do [[ -s $OUT/ready-plain ]] && break; sleep 0.25; done
[[ -s $OUT/ready-plain ]] || { echo "bench-live: the plain server did not start; see $OUT/plain.log" >&2; exit 1; }

echo "bench-live: K = $KS, phases $PHASES, $DURATION each, $RATE events/s; gateway on 127.0.0.1:$PORT, plain server on 127.0.0.1:$PLAIN_PORT, cluster on $BENCH_PORT..+5; results in $OUT" >&2
{
	echo "### make bench-live — $(date -u +%Y-%m-%dT%H:%MZ), $(git describe --always --dirty)"
	echo
	echo "$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load average $(cut -d' ' -f1-3 /proc/loadavg) at the start."
	echo "Command: KS=$KS PHASES=$PHASES DURATION=$DURATION RATE=$RATE MEMBERS=$MEMBERS MEMBER_SKEW=$MEMBER_SKEW TOP_ONLY=$TOP_ONLY CLIENT=$CLIENT make bench-live"
	echo
} >"$OUT/summary.md"
"${lt[@]}" -live "$KS" -live-phases "$PHASES" -live-plain "http://127.0.0.1:$PLAIN_PORT" -live-top-only "$TOP_ONLY" -client "$CLIENT" -duration "$DURATION" -rate "$RATE" -out "$OUT" | tee "$OUT/live.txt"
cat "$OUT/live.md" >>"$OUT/summary.md"
echo
echo "bench-live: $OUT/summary.md"
