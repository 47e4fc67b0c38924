#!/usr/bin/env bash
# bench-index.sh — the read index's yardstick (docs/performance.md, "The read index").
# Starts (or reuses) its own Redis Cluster on BENCH_PORT..+5, loads MEMBERS members
# into three boards straight into Redis (pipelined ZADD; skipped when already
# loaded): fan16 (16 shards), fan1 (1 shard) and idx16 (16 shards, index.enabled;
# its change feeds start empty), then runs fanoutbench -index, which starts its own
# gateways (the measuring one on 127.0.0.1:GATEWAY_PORT, pprof on GATEWAY_PORT+10;
# a heap baseline that holds no board on GATEWAY_PORT+1) and measures in ROUNDS
# interleaved rounds:
#   1. reads from the index over HTTP (consistency=index) against the 16- and the
#      1-shard fan-out (consistency=primary) and one sorted set read directly:
#      rank, around-me (radius 5), Top-100, the page at offset 100 000
#   2. events (single and batches of 100), feed on (idx16) ÷ feed off (fan16)
#   3. freshness: open loops of FRESH (events/s / events per request) on idx16,
#      write acknowledged → visible through consistency=index, and the gateway's
#      rankgate_index_visible_seconds
#   4. the board's load time at gateway start, 5. gateway heap per member,
#   6. idle cost (gateway CPU, Redis commands of the index) over 10 s.
# Each closed-loop measurement runs DURATION per round in 10 slices, taking turns.
#
#   make bench-index                            # 1M members, 2 rounds, 5 s each (≈ 8 min)
#   MEMBERS=100000 ROUNDS=1 make bench-index    # quick look
#   BENCH_PORT=7230 GATEWAY_PORT=18220 WORKERS=8 DURATION=5s KEEP=1 make bench-index
#
# PROFILE=1 adds, after the rounds, a CPU profile of the gateway under each load
# (index reads, batches feed on/off, freshness, idle) in $OUT/profiles
# (go tool pprof -top $OUT/gateway $OUT/profiles/cpu-idle.pprof).
# KEEP=1 leaves the cluster (and the boards) up for the next run; by default the
# cluster is stopped at the end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BENCH_PORT=${BENCH_PORT:-7230}
GATEWAY_PORT=${GATEWAY_PORT:-18220}
MEMBERS=${MEMBERS:-1000000}
ROUNDS=${ROUNDS:-2}
WORKERS=${WORKERS:-8}
DURATION=${DURATION:-5s}
OFFSET=${OFFSET:-$((MEMBERS >= 200000 ? 100000 : MEMBERS / 2))} # the deep page (100 000 on the 1M board)
# The freshness open loops, RATE/BATCH: events/s in requests of BATCH events
# (1: POST /v1/events). 2 000 single events/s is about what the gateway takes
# at all on the 2-core machine; 2000/20 is the goal's rate at 100 requests/s.
FRESH=${FRESH:-2000/20,1000/1,2000/1}
KEEP=${KEEP:-0}
PHASES=${PHASES:-reads,writes,fresh,idle}  # what each round measures after the load and heap
PROFILE=${PROFILE:-0}  # 1: after the rounds, CPU profiles of the gateway under each load in $OUT/profiles
CONFIG=${CONFIG:-deploy/bench-index.yaml}
OUT=${OUT:-loadtest/results/index-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"

# shellcheck source=deploy/bench-lib.sh
source deploy/bench-lib.sh
bench_cluster_up
export RANKGATE_REDIS_ADDRS=$ADDRS

bench_build_fanoutbench

profile=()
if [[ $PROFILE == 1 ]]; then profile=(-profile "$OUT/profiles"); fi

cleanup() {
	# The gateways fanoutbench started and has not stopped (an interrupted
	# run): it keeps their pids in $OUT/pids, one a line.
	if [[ -f $OUT/pids ]]; then
		while read -r p; do kill "$p" 2>/dev/null || true; done <"$OUT/pids"
	fi
	if [[ $KEEP != 1 ]]; then $CLUSTER -p "$BENCH_PORT" down >/dev/null || true; fi
}
trap cleanup EXIT

"$OUT/fanoutbench" -index -config "$CONFIG" -gateway-bin "$OUT/gateway" -out "$OUT" \
	-index-listen "127.0.0.1:$GATEWAY_PORT" -index-pprof "127.0.0.1:$((GATEWAY_PORT + 10))" \
	-before-listen "127.0.0.1:$((GATEWAY_PORT + 1))" -before-pprof "127.0.0.1:$((GATEWAY_PORT + 11))" \
	-members "$MEMBERS" -rounds "$ROUNDS" -workers "$WORKERS" -duration "$DURATION" \
	-offset "$OFFSET" -fresh "$FRESH" -phases "$PHASES" "${profile[@]}" | tee "$OUT/result.md"
echo
echo "bench-index: results in $OUT/result.md (command: MEMBERS=$MEMBERS ROUNDS=$ROUNDS WORKERS=$WORKERS DURATION=$DURATION FRESH=$FRESH make bench-index)"
