#!/usr/bin/env bash
# bench-refresh.sh — cached reads at a refresh (docs/performance.md, "Cached reads at a refresh"):
# a closed loop of WORKERS (16) connections reads one hot cached Top-100 of a 16-shard board
# (cache_ttl 1s) through the gateway of BASE and through this tree's, interleaved A-B-B-A, in the
# same run. Each cache expiry makes BASE's readers of that moment wait for the 16-shard fan-out;
# this tree serves the previous copy while one refresh runs. It prints p50, p99, p99.9 and max
# per run and p99 ÷ p50 per target.
#
# Builds BASE's gateway from `git archive` in a temporary directory, starts its own Redis Cluster
# on BENCH_PORT..+5 (7320..7325; deploy/cluster/cluster.sh) and tears it down after, runs both
# gateways with deploy/bench-writes.yaml (family w16: 16-shard national board, cache_ttl 1s),
# each under its own key prefix, and prefills MEMBERS members into each.
#
#   make bench-refresh                                 # BASE f06cb1f, 2 rounds, 15 s per run
#   BASE=HEAD~1 ROUNDS=1 DURATION=10s make bench-refresh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BASE=${BASE:-f06cb1f}
BENCH_PORT=${BENCH_PORT:-7320}
GATEWAY_PORT=${GATEWAY_PORT:-18320}
DURATION=${DURATION:-15s}
ROUNDS=${ROUNDS:-2}
WORKERS=${WORKERS:-16}
MEMBERS=${MEMBERS:-20000}
CONFIG=${CONFIG:-deploy/bench-writes.yaml}
OUT=${OUT:-loadtest/results/bench-refresh-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

base_rev=$(git rev-parse --verify --short "$BASE^{commit}")
new_rev=$(git describe --always --dirty)
# shellcheck source=deploy/bench-lib.sh
source deploy/bench-lib.sh
BENCH_KEEP=0 # the cluster is always stopped at the end
trap bench_cleanup EXIT

bench_build_base bench-refresh
go build -o "$OUT/gateway-new" ./cmd/gateway
go build -o "$OUT/loadtest" ./loadtest

bench_cluster_up
run_id=$(date +%s)
start_gateway() { # name port
	RANKGATE_REDIS_ADDRS=$ADDRS RANKGATE_REDIS_PREFIX="br$1$run_id" "$OUT/gateway-$1" -config "$CONFIG" \
		-listen "127.0.0.1:$2" -ready-file "$OUT/ready-$1" 2>"$OUT/gateway-$1.log" &
	pids+=($!)
}
start_gateway base "$GATEWAY_PORT"
start_gateway new $((GATEWAY_PORT + 1))
for name in base new; do
	for _ in $(seq 1 120); do [[ -s $OUT/ready-$name ]] && break; sleep 0.5; done
	[[ -s $OUT/ready-$name ]] || { echo "bench-refresh: gateway $name did not start; see $OUT/gateway-$name.log" >&2; exit 1; }
done
url() { if [[ $1 == base ]]; then echo "http://127.0.0.1:$GATEWAY_PORT"; else echo "http://127.0.0.1:$((GATEWAY_PORT + 1))"; fi; }
loadtest() { # target out args…
	local t=$1 out=$2
	shift 2
	"$OUT/loadtest" -gateway "$(url "$t")" -config "$CONFIG" -family w16 -members "$MEMBERS" -no-plots -quiet \
		-out "$out" "$@" >"$out.txt" 2>&1 || { echo "bench-refresh: load tool failed on $t; see $out.txt" >&2; exit 1; }
}
for t in base new; do loadtest "$t" "$OUT/prefill-$t" -prefill "$MEMBERS" -duration 0; done

order=(base new new base)
echo "bench-refresh: BASE $base_rev vs this tree ($new_rev), $ROUNDS rounds of ${order[*]}, $DURATION per run; results in $OUT" >&2
for r in $(seq 1 "$ROUNDS"); do
	for i in "${!order[@]}"; do
		t=${order[$i]}
		loadtest "$t" "$OUT/r$r-$i-$t" -duration "$DURATION" -mode closed -workers "$WORKERS" \
			-mix top=1 -limit 100 -board national -consistency cached
		jq -r --arg r "$r" --arg t "$t" '.ops[] | select(.op == "top") |
			"\($r) \($t) \(.count) \(.errors) \(.p50_ms) \(.p99_ms) \(.p999_ms) \(.max_ms)"' "$OUT/r$r-$i-$t/gateway.json" >>"$OUT/runs.txt"
	done
done

{
	echo "### make bench-refresh — $(date -u +%Y-%m-%dT%H:%MZ), BASE $base_rev vs this tree ($new_rev)"
	echo
	echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end; $ROUNDS rounds of ${order[*]}, $DURATION per run;" \
		"closed loop, $WORKERS workers, cached Top-100 of the 16-shard national board ($MEMBERS members), cache_ttl 1s."
	echo
	echo "| round | target | reads | errors | p50 ms | p99 ms | p99.9 ms | max ms | p99 ÷ p50 |"
	echo "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	awk -v B="BASE $base_rev" '{ printf "| %s | %s | %s | %s | %.2f | %.2f | %.2f | %.2f | %.1f |\n", $1, ($2 == "base" ? B : "this tree"), $3, $4, $5, $6, $7, $8, ($5 > 0 ? $6 / $5 : 0) }' "$OUT/runs.txt"
	echo
	echo "This tree's gateway, cache counters at the end (stale serves and refreshes show that expiries were served from the previous copy):"
	echo
	curl -s "$(url new)/metrics" | grep -E '^rankgate_cache_(requests|stale_serves|refreshes|refresh_errors)_total\{family="w16"' | sed 's/^/    /' || true
} | tee "$OUT/summary.md"
