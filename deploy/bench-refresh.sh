#!/usr/bin/env bash
# bench-refresh.sh — cached reads at a refresh (docs/performance.md, "Cached reads at a refresh"):
# a closed loop of WORKERS (16) connections reads one hot cached Top-100 of a 16-shard board
# (cache_ttl 1s) through the gateway of BASE, through this tree's, and — the yardstick — from a
# plain Go net/http handler that answers the same bytes with no work at all (loadtest/plainhttp),
# interleaved base new plain plain new base, in the same run. Each cache expiry makes BASE's
# readers of that moment wait for the 16-shard fan-out; this tree serves the previous copy while
# one refresh runs; the plain handler shows what tail the machine and net/http alone give.
# It prints p50, p99, p99.9 and max per run, p99 ÷ p50 per run, and the gateways' GC cycles per
# second and stop-the-world pauses during each run.
#
# Each of CLIENTS runs every round: "conn" (the load tool's cheapest client: one HTTP/1.1
# connection per worker, read and written by the worker) and "transport" (net/http's Client).
#
# Builds BASE's gateway from `git archive` in a temporary directory, starts its own Redis Cluster
# on BENCH_PORT..+5 (7320..7325; deploy/cluster/cluster.sh) and tears it down after, runs both
# gateways with deploy/bench-writes.yaml (family w16: 16-shard national board, cache_ttl 1s),
# each under its own key prefix, and prefills MEMBERS members into each. The gateways listen on
# GATEWAY_PORT (BASE) and GATEWAY_PORT+1, the plain handler on GATEWAY_PORT+2.
#
# PIN=1 keeps the servers and the load tool off each other's core (taskset): the gateways and the
# plain handler on CPU 0, the load tool on CPU 1 (the Redis nodes unpinned). On a 2-core machine
# unpinned, the tool's and the server's threads take turns on both cores and the time slices they
# wait for are most of the tail; in production the clients are other machines.
#
#   make bench-refresh                                 # BASE f06cb1f, 2 rounds, 15 s per run
#   BASE=HEAD~1 ROUNDS=1 DURATION=10s CLIENTS=conn make bench-refresh
#   PIN=1 ROUNDS=2 DURATION=10s make bench-refresh     # server and load tool on a core each
#   SERVER_GOGC=400 PIN=1 make bench-refresh           # the servers' GC target (GOGC), not the tool's
#
# SERVER_GOGC sets GOGC for both gateways and the plain handler (unset: Go's default, 100): a
# gateway that answers mostly cached reads has a small heap and collects it many times a second;
# docs/config.md ("Go runtime") says when to raise it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BASE=${BASE:-f06cb1f}
BENCH_PORT=${BENCH_PORT:-7320}
GATEWAY_PORT=${GATEWAY_PORT:-18320}
DURATION=${DURATION:-15s}
ROUNDS=${ROUNDS:-2}
WORKERS=${WORKERS:-16}
CLIENTS=${CLIENTS:-conn transport}
MEMBERS=${MEMBERS:-20000}
CONFIG=${CONFIG:-deploy/bench-writes.yaml}
PIN=${PIN:-0}
SERVER_GOGC=${SERVER_GOGC:-}
server_cpu=() tool_cpu=()
if [[ $PIN == 1 ]]; then
	command -v taskset >/dev/null || { echo "bench-refresh: PIN=1 needs taskset (util-linux)" >&2; exit 1; }
	server_cpu=(taskset -c 0) tool_cpu=(taskset -c 1)
fi
server_env=(env)
[[ -n $SERVER_GOGC ]] && server_env+=("GOGC=$SERVER_GOGC")
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
go build -o "$OUT/plainhttp" ./loadtest/plainhttp

bench_cluster_up
run_id=$(date +%s)
start_gateway() { # name port
	RANKGATE_REDIS_ADDRS=$ADDRS RANKGATE_REDIS_PREFIX="br$1$run_id" "${server_env[@]}" "${server_cpu[@]}" "$OUT/gateway-$1" -config "$CONFIG" \
		-listen "127.0.0.1:$2" -ready-file "$OUT/ready-$1" 2>"$OUT/gateway-$1.log" &
	pids+=($!)
}
start_gateway base "$GATEWAY_PORT"
start_gateway new $((GATEWAY_PORT + 1))
for name in base new; do
	for _ in $(seq 1 120); do [[ -s $OUT/ready-$name ]] && break; sleep 0.5; done
	[[ -s $OUT/ready-$name ]] || { echo "bench-refresh: gateway $name did not start; see $OUT/gateway-$name.log" >&2; exit 1; }
done
url() {
	case $1 in
	base) echo "http://127.0.0.1:$GATEWAY_PORT" ;;
	new) echo "http://127.0.0.1:$((GATEWAY_PORT + 1))" ;;
	plain) echo "http://127.0.0.1:$((GATEWAY_PORT + 2))" ;;
	esac
}
loadtest() { # target out args…
	local t=$1 out=$2
	shift 2
	"${tool_cpu[@]}" "$OUT/loadtest" -gateway "$(url "$t")" -config "$CONFIG" -family w16 -members "$MEMBERS" -no-plots -quiet \
		-out "$out" "$@" >"$out.txt" 2>&1 || { echo "bench-refresh: load tool failed on $t; see $out.txt" >&2; exit 1; }
}
for t in base new; do loadtest "$t" "$OUT/prefill-$t" -prefill "$MEMBERS" -duration 0; done

# The yardstick answers what this tree's gateway answers for a cached hit.
top_path="/v1/boards/w16/current/national/top?consistency=cached&limit=100"
curl -sf "$(url new)$top_path" >/dev/null
curl -sf "$(url new)$top_path" >"$OUT/top100.json"
"${server_env[@]}" "${server_cpu[@]}" "$OUT/plainhttp" -listen "127.0.0.1:$((GATEWAY_PORT + 2))" -body "$OUT/top100.json" -ready-file "$OUT/ready-plain" 2>"$OUT/plain.log" &
pids+=($!)
for _ in $(seq 1 20); do [[ -s $OUT/ready-plain ]] && break; sleep 0.25; done
[[ -s $OUT/ready-plain ]] || { echo "bench-refresh: the plain handler did not start; see $OUT/plain.log" >&2; exit 1; }

# gc_stats TARGET: "cycles pause_sum_s" of a gateway's Go runtime (none for the plain handler).
gc_stats() {
	[[ $1 == plain ]] && { echo "0 0"; return; }
	curl -s "$(url "$1")/metrics" | awk '/^go_gc_duration_seconds_count/ { c = $2 } /^go_gc_duration_seconds_sum/ { s = $2 } END { print c + 0, s + 0 }'
}

order=(base new plain plain new base)
echo "bench-refresh: BASE $base_rev vs this tree ($new_rev) vs a plain handler, clients: $CLIENTS; $ROUNDS rounds of ${order[*]}, $DURATION per run; results in $OUT" >&2
for r in $(seq 1 "$ROUNDS"); do
	for c in $CLIENTS; do
		for i in "${!order[@]}"; do
			t=${order[$i]}
			read -r gc0 ps0 < <(gc_stats "$t")
			loadtest "$t" "$OUT/r$r-$c-$i-$t" -duration "$DURATION" -mode closed -workers "$WORKERS" -client "$c" \
				-mix top=1 -limit 100 -board national -consistency cached
			read -r gc1 ps1 < <(gc_stats "$t")
			jq -r --arg r "$r" --arg c "$c" --arg t "$t" --arg gc "$((gc1 - gc0))" --arg ps "$(awk -v a="$ps0" -v b="$ps1" 'BEGIN { print (b - a) * 1000 }')" \
				'.ops[] | select(.op == "top") |
				"\($r) \($c) \($t) \(.count) \(.errors) \(.p50_ms) \(.p99_ms) \(.p999_ms) \(.max_ms) \($gc) \($ps) \(.rate)"' \
				"$OUT/r$r-$c-$i-$t/gateway.json" >>"$OUT/runs.txt"
		done
	done
done

{
	echo "### make bench-refresh — $(date -u +%Y-%m-%dT%H:%MZ), BASE $base_rev vs this tree ($new_rev) vs a plain net/http handler"
	echo
	echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end; $ROUNDS rounds of ${order[*]} per client, $DURATION per run;" \
		"$([[ $PIN == 1 ]] && echo "servers on CPU 0, the load tool on CPU 1 (PIN=1);" || echo "nothing pinned;")" \
		"servers' GOGC ${SERVER_GOGC:-100, the Go default};" \
		"closed loop, $WORKERS workers, cached Top-100 of the 16-shard national board ($MEMBERS members), cache_ttl 1s."
	echo "GC/s and STW ms: the gateway's GC cycles per second and their stop-the-world pauses summed, during the run."
	echo
	echo "| round | client | target | reads/s | errors | p50 ms | p99 ms | p99.9 ms | max ms | p99 ÷ p50 | GC/s | STW ms |"
	echo "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	awk -v B="BASE $base_rev" -v D="${DURATION%s}" '{
		name = ($3 == "base" ? B : ($3 == "new" ? "this tree" : "plain handler"))
		gc = ($3 == "plain" ? "—" : sprintf("%.1f", $10 / D)); stw = ($3 == "plain" ? "—" : sprintf("%.1f", $11))
		printf "| %s | %s | %s | %.0f | %s | %.2f | %.2f | %.2f | %.2f | %.1f | %s | %s |\n", $1, $2, name, $12, $5, $6, $7, $8, $9, ($6 > 0 ? $7 / $6 : 0), gc, stw
	}' "$OUT/runs.txt"
	echo
	echo "p99 ÷ p50 by client and target (median over runs, then the range):"
	echo
	for c in $CLIENTS; do
		for t in base new plain; do
			awk -v c="$c" -v t="$t" '$2 == c && $3 == t && $6 > 0 { printf "%.2f\n", $7 / $6 }' "$OUT/runs.txt" | sort -n |
				awk -v c="$c" -v t="$t" '{ v[NR] = $1 } END { if (NR) printf "    %-9s %-5s median %.1f  range %.1f–%.1f  (%d runs)\n", c, t, (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1], v[NR], NR }'
		done
	done
	echo
	echo "This tree's gateway, cache counters at the end (stale serves and refreshes show that expiries were served from the previous copy):"
	echo
	curl -s "$(url new)/metrics" | grep -E '^rankgate_cache_(requests|stale_serves|refreshes|refresh_errors)_total\{family="w16"' | sed 's/^/    /' || true
} | tee "$OUT/summary.md"
