#!/usr/bin/env bash
# size-bench.sh — Top-100 p50 against board size: one national board of 16
# shards per size (its own key prefix and its own gateway), prefilled straight
# into Redis (-prefill-direct), then uncached Top-100 reads in open loop,
# the sizes alternated ROUNDS times, gateway and baseline each time. Prints,
# per round, large ÷ small for the gateway and for the baseline.
#
#   make size-bench                                   # 100k vs 10M, 3 rounds
#   SIZES="10000 1000000" ROUNDS=2 make size-bench
#   PREFILL=0 make size-bench                         # boards already loaded
#   CLEAN=1 make size-bench                           # delete the boards afterwards
#
# A 10M board takes about 3.5 minutes to prefill here and ≈ 2.7 GB on the
# masters (as much again on the replicas).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

SIZES=${SIZES:-"100000 10000000"}
ROUNDS=${ROUNDS:-3}
RATE=${RATE:-50}
DURATION=${DURATION:-10s}
PREFILL=${PREFILL:-1}
CLEAN=${CLEAN:-0}
CONFIG=${CONFIG:-deploy/rankgate.dev.yaml}
BASE_PORT=${BASE_PORT:-18090}
OUT=${OUT:-loadtest/results/size-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"

deploy/cluster/cluster.sh -p 7000 up >/dev/null
go build -o "$OUT/gateway" ./cmd/gateway
go build -o "$OUT/loadtest" ./loadtest

pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT
i=0
for n in $SIZES; do
	port=$((BASE_PORT + i))
	i=$((i + 1))
	RANKGATE_REDIS_PREFIX="ltsize$n" "$OUT/gateway" -config "$CONFIG" -listen "127.0.0.1:$port" \
		-ready-file "$OUT/ready-$n" -log-level warn 2>"$OUT/gateway-$n.log" &
	pids+=($!)
	for _ in $(seq 1 60); do [[ -s $OUT/ready-$n ]] && break; sleep 0.5; done
	[[ -s $OUT/ready-$n ]] || { echo "size-bench: gateway for $n did not start; see $OUT/gateway-$n.log" >&2; exit 1; }
	if [[ $PREFILL == 1 ]]; then
		echo "size-bench: prefill $n members (national board only, straight into Redis)"
		RANKGATE_REDIS_PREFIX="ltsize$n" "$OUT/loadtest" -config "$CONFIG" -gateway "http://127.0.0.1:$port" \
			-members "$n" -provinces 0 -classes 0 -prefill "$n" -prefill-direct -prefill-batch 1000 \
			-prefill-concurrency 6 -prefill-timeout 30m -duration 0
	fi
done

for r in $(seq 1 "$ROUNDS"); do
	i=0
	for n in $SIZES; do
		port=$((BASE_PORT + i))
		i=$((i + 1))
		echo "size-bench: round $r, $n members"
		RANKGATE_REDIS_PREFIX="ltsize$n" "$OUT/loadtest" -config "$CONFIG" -gateway "http://127.0.0.1:$port" \
			-members "$n" -provinces 0 -classes 0 -mix top@national=1 -limit 100 -consistency primary \
			-mode open -rate "$RATE" -duration "$DURATION" -warmup 1s -compare-baseline \
			-out "$OUT/r$r-$n" >"$OUT/r$r-$n.txt"
	done
done

set -- $SIZES
small=$1
large=${!#}
for r in $(seq 1 "$ROUNDS"); do
	for target in gateway baseline; do
		echo
		echo "== round $r, $target: $small → $large members"
		"$OUT/loadtest" -compare "$OUT/r$r-$small/$target.json" "$OUT/r$r-$large/$target.json"
	done
done
echo
echo "size-bench: results in $OUT"

if [[ $CLEAN == 1 ]]; then
	for n in $SIZES; do
		for p in 7000 7001 7002 7003 7004 7005; do
			redis-cli -p "$p" --scan --pattern "ltsize$n:*" | xargs -r -n 1 redis-cli -p "$p" unlink >/dev/null 2>&1 || true # one key a call: keys of several slots would be CROSSSLOT
		done
	done
	echo "size-bench: boards deleted"
fi
