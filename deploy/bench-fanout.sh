#!/usr/bin/env bash
# bench-fanout.sh — the sharded-read yardstick (docs/performance.md, "Sharded reads").
# Starts (or reuses) its own Redis Cluster on BENCH_PORT..+5, a gateway on
# 127.0.0.1:GATEWAY_PORT, loads MEMBERS members into a 16-shard board and a
# 1-shard board straight into Redis (pipelined ZADD; skipped when already
# loaded), then measures in ROUNDS interleaved rounds, closed loop:
#   (a) gateway, uncached Top-100, 16 shards        (b) naive goroutine-per-shard fan-out
#   (c) naive fan-out in one cluster pipeline        (d) one sorted set, ZREVRANGE
#   (e) rank: gateway 16 shards vs ZREVRANK+ZSCORE   (f) gateway on the 1-shard board
# plus rank and around-me through the read plan without HTTP, native and with the Lua scripts;
# the measurements of a round take turns in 10 short slices (the same machine load for each).
# It prints req/s per round and the ratios against the goals, the CPU per request of each
# measurement (this process, the gateway, the masters: fanoutbench -cpu) and what Redis's own
# CPU leaves of each goal; then the cache level across 3
# gateways (ports GATEWAY_PORT..+2 without cache_shared, +3..+5 with it): fan-outs per TTL
# of one hot cached Top-100; then INFO commandstats per read (100 calls of each).
# With COMPARE=1 (the default) the gateway on GATEWAY_PORT+1 reads through
# redis.read_transport COMPARE_TRANSPORT (go-redis) and its reads are measured
# beside the main gateway's (rueidis, the default) in the same rounds (*_b).
#
#   make bench-fanout                          # 1M members, 2 rounds, 5 s each (≈ 4-5 min)
#   MEMBERS=100000 ROUNDS=1 make bench-fanout  # quick look
#   BENCH_PORT=7210 GATEWAY_PORT=18200 WORKERS=8 DURATION=5s KEEP=1 make bench-fanout
#
# KEEP=1 leaves the cluster (and the boards) up for the next run; by default
# the cluster is stopped at the end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BENCH_PORT=${BENCH_PORT:-7210}
GATEWAY_PORT=${GATEWAY_PORT:-18200}
MEMBERS=${MEMBERS:-1000000}
ROUNDS=${ROUNDS:-2}
WORKERS=${WORKERS:-8}
DURATION=${DURATION:-5s}
KEEP=${KEEP:-0}
COMPARE=${COMPARE:-1}
COMPARE_TRANSPORT=${COMPARE_TRANSPORT:-go-redis}
CONFIG=${CONFIG:-deploy/bench-fanout.yaml}
OUT=${OUT:-loadtest/results/fanout-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"

# shellcheck source=deploy/bench-lib.sh
source deploy/bench-lib.sh
bench_cluster_up
export RANKGATE_REDIS_ADDRS=$ADDRS

bench_build_fanoutbench

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [[ $KEEP != 1 ]]; then $CLUSTER -p "$BENCH_PORT" down >/dev/null || true; fi
}
trap cleanup EXIT

# The measuring gateway, two more with the same config (the cache level
# without cache_shared, 3 gateways) and three with cache_shared: true.
sed 's/cache_shared: false/cache_shared: true/' "$CONFIG" >"$OUT/shared.yaml"
sed -e '/^  read_transport:/d' -e "s/^redis:\$/redis:\n  read_transport: $COMPARE_TRANSPORT/" "$CONFIG" >"$OUT/compare.yaml"
start_gateway() { # port config name
	"$OUT/gateway" -config "$2" -listen "127.0.0.1:$1" -ready-file "$OUT/ready-$3" -log-level warn 2>"$OUT/gateway-$3.log" &
	pids+=($!)
}
local_urls=() shared_urls=()
compare=()
for k in 0 1 2; do
	if [[ $k == 1 && $COMPARE == 1 ]]; then
		start_gateway $((GATEWAY_PORT + k)) "$OUT/compare.yaml" "local$k"
		compare=(-compare "http://127.0.0.1:$((GATEWAY_PORT + k))" -compare-transport "$COMPARE_TRANSPORT")
	else
		start_gateway $((GATEWAY_PORT + k)) "$CONFIG" "local$k"
	fi
	local_urls+=("http://127.0.0.1:$((GATEWAY_PORT + k))")
	start_gateway $((GATEWAY_PORT + 3 + k)) "$OUT/shared.yaml" "shared$k"
	shared_urls+=("http://127.0.0.1:$((GATEWAY_PORT + 3 + k))")
done
for name in local0 local1 local2 shared0 shared1 shared2; do
	for _ in $(seq 1 120); do [[ -s $OUT/ready-$name ]] && break; sleep 0.5; done
	[[ -s $OUT/ready-$name ]] || { echo "bench-fanout: gateway $name did not start; see $OUT/gateway-$name.log" >&2; exit 1; }
done

"$OUT/fanoutbench" -config "$CONFIG" -gateway "http://127.0.0.1:$GATEWAY_PORT" -members "$MEMBERS" \
	-rounds "$ROUNDS" -workers "$WORKERS" -duration "$DURATION" \
	-cache-local "$(IFS=,; echo "${local_urls[*]}")" -cache-shared "$(IFS=,; echo "${shared_urls[*]}")" "${compare[@]}" | tee "$OUT/result.md"
echo
echo "bench-fanout: results in $OUT/result.md (command: MEMBERS=$MEMBERS ROUNDS=$ROUNDS WORKERS=$WORKERS DURATION=$DURATION make bench-fanout)"
