#!/usr/bin/env bash
# bench-ledger.sh — ledger mode against Redis-only mode, side by side, in one run
# (docs/performance.md, "Ledger mode against Redis-only"). One gateway per mode on the same
# Redis Cluster (its own key prefix each); the ledger gateway writes to a fresh
# PostgreSQL database, dropped at the end. Every phase runs once per mode, the
# modes alternating (ledger first in odd rounds, Redis-only first in even ones),
# and every figure printed is ledger ÷ Redis-only of the same rounds.
#
#   make bench-ledger                                   # dev cluster (CLUSTER_PORT 7000), defaults below
#   make bench-ledger CLUSTER_PORT=7310 BENCH_PORT=18300 BENCH_DURATION=20s BENCH_ROUNDS=3
# The cluster is started when it is not up, and left running (make cluster-down CLUSTER_PORT=…).
#
# Phases (closed loop unless said otherwise; the events scenario, 3 boards per event):
#   batch    batches of 100 events, BENCH_BATCH_WORKERS (4) workers
#   single   single events, 16 workers
#   workers  single events with 1, 4, 16, 64 workers (BENCH_WORKERS)
#   open     single events at a constant rate (open loop) below both modes'
#            saturation: BENCH_OPEN_RATE, default half the slower mode's single-event rate
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BASE=${BENCH_CLUSTER_PORT:-7000}
PORT=${BENCH_PORT:-18090}                 # Redis-only gateway; the ledger gateway takes PORT+1
PG=${BENCH_PG:-postgres://postgres@127.0.0.1:5432}
DURATION=${BENCH_DURATION:-10s}           # per phase, per mode, per round
ROUNDS=${BENCH_ROUNDS:-2}
BATCH_WORKERS=${BENCH_BATCH_WORKERS:-4}
WORKERS=${BENCH_WORKERS:-1 4 16 64}
OPEN_RATE=${BENCH_OPEN_RATE:-}
PHASES=" ${BENCH_PHASES:-batch single workers open} "  # a subset for a quick look
OUT=${BENCH_OUT:-loadtest/results/bench-ledger-$(date -u +%Y%m%dT%H%M%SZ)}
DB=rankgate_bench_$(date +%s)_$$
mkdir -p "$OUT"

deploy/cluster/cluster.sh -p "$BASE" up >/dev/null
ADDRS=$(deploy/cluster/cluster.sh -p "$BASE" addrs)
psql -qX "$PG/postgres" -c "CREATE DATABASE $DB" >/dev/null
export RANKGATE_BENCH_LEDGER_DSN="$PG/$DB?sslmode=disable"
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	psql -qX "$PG/postgres" -c "DROP DATABASE IF EXISTS $DB" >/dev/null || true
}
trap cleanup EXIT

# The PostgreSQL settings in force (durability at the server's defaults).
psql -qXAt "$RANKGATE_BENCH_LEDGER_DSN" -c "SELECT name || ' = ' || setting FROM pg_settings
	WHERE name IN ('synchronous_commit', 'fsync', 'commit_delay', 'commit_siblings', 'wal_sync_method', 'full_page_writes', 'server_version')
	ORDER BY name" | tee "$OUT/pg-settings.txt" | sed 's/^/bench-ledger: pg: /'

go build -o "$OUT/gateway" ./cmd/gateway
# Both gateways run the dev config (families with sort columns included: the
# ledger keeps columns and metadata since migration 0006); the ledger one with
# the DSN variable set.
cp deploy/rankgate.dev.yaml "$OUT/redis.yaml"
sed 's/^  dsn_env: ""/  dsn_env: RANKGATE_BENCH_LEDGER_DSN/' "$OUT/redis.yaml" >"$OUT/ledger.yaml"
grep -q 'dsn_env: RANKGATE_BENCH_LEDGER_DSN' "$OUT/ledger.yaml"
grep -q '^  learning:' "$OUT/redis.yaml"
start_gateway() { # mode port config prefix
	RANKGATE_REDIS_ADDRS=$ADDRS RANKGATE_REDIS_PREFIX=$4 "$OUT/gateway" -config "$3" -listen "127.0.0.1:$2" \
		-ready-file "$OUT/$1.ready" -log-level warn 2>"$OUT/$1-gateway.log" &
	PIDS+=($!)
}
start_gateway redis "$PORT" "$OUT/redis.yaml" "bench_r$$"
start_gateway ledger "$((PORT + 1))" "$OUT/ledger.yaml" "bench_l$$"
for m in redis ledger; do
	for _ in $(seq 1 120); do [[ -s $OUT/$m.ready ]] && break; sleep 0.5; done
	[[ -s $OUT/$m.ready ]] || { echo "bench-ledger: the $m gateway did not start; see $OUT/$m-gateway.log" >&2; exit 1; }
done
url() { if [[ $1 == redis ]]; then echo "http://127.0.0.1:$PORT"; else echo "http://127.0.0.1:$((PORT + 1))"; fi; }

go build -o "$OUT/loadtest" ./loadtest

# CPU time (utime + stime from /proc, clock ticks) around every run: the
# run's gateway, the bench database's backends (ledger mode) and the six
# redis-servers (both modes share them; only one mode runs at a time).
REDIS_PIDS=$(for p in $(seq "$BASE" $((BASE + 5))); do
	timeout 5 redis-cli -p "$p" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p' || true
done)
ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0))); done; echo "$t"; }
pg_pids() { psql -qXAt "$RANKGATE_BENCH_LEDGER_DSN" -c "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"; }
cpu() { # mode → "gateway postgres redis" ticks
	local gw=${PIDS[0]} pg=""
	[[ $1 == ledger ]] && { gw=${PIDS[1]}; pg=$(pg_pids); }
	# shellcheck disable=SC2086 # word splitting of pid lists intended
	echo "$(ticks "$gw") $(ticks $pg) $(ticks $REDIS_PIDS)"
}
# The ledger gateway's stage histograms (rankgate_ledger_group_stage_seconds,
# rankgate_ledger_tx_stage_seconds, …) around every run; stages.sh turns two
# of them into quantiles of the run. An empty scrape (a wrong port, the
# metrics renamed) is a warning on stderr, and stages.sh refuses to print a
# table of it (the summary says so).
metrics() {
	[[ $1 == ledger ]] || return 0
	local out
	out=$(curl -fsS --max-time 10 "$(url ledger)/metrics" | grep '^rankgate_ledger_') ||
		echo "bench-ledger: WARNING: no rankgate_ledger_ metrics at $(url ledger)/metrics: the ledger stage quantiles will be missing" >&2
	[[ -z $out ]] || printf '%s\n' "$out"
}
# run phase mode round args… → $OUT/phase/mode-rN/gateway.json, …/mode-rN.cpu (ticks before, after)
run() {
	local phase=$1 mode=$2 round=$3
	shift 3
	cpu "$mode" >"$OUT/$phase/$mode-r$round.cpu"
	metrics "$mode" >"$OUT/$phase/$mode-r$round.before.prom"
	"$OUT/loadtest" -scenario loadtest/scenarios/events.yaml -gateway "$(url "$mode")" -config "$OUT/redis.yaml" \
		-duration "$DURATION" -no-plots -quiet -out "$OUT/$phase/$mode-r$round" "$@" >"$OUT/$phase/$mode-r$round.txt" 2>&1 ||
		{ echo "bench-ledger: $phase $mode round $round failed; see $OUT/$phase/$mode-r$round.txt" >&2; exit 1; }
	cpu "$mode" >>"$OUT/$phase/$mode-r$round.cpu"
	metrics "$mode" >"$OUT/$phase/$mode-r$round.after.prom"
}
# both phase args… : every round, both modes, alternating which goes first
both() {
	local phase=$1
	shift
	mkdir -p "$OUT/$phase"
	for r in $(seq 1 "$ROUNDS"); do
		if ((r % 2)); then run "$phase" ledger "$r" "$@"; run "$phase" redis "$r" "$@"
		else run "$phase" redis "$r" "$@"; run "$phase" ledger "$r" "$@"; fi
	done
}
# stat phase mode field → the write op's field summed over rounds (item_rate) or its mean (latency)
stat() {
	jq -s --arg f "$3" '[.[] | .ops[] | select(.op == "event" or .op == "batch") | .[$f]] |
		if ($f == "item_rate") then add / length else add / length end' "$OUT/$1"/"$2"-r*/gateway.json
}
errors() { jq -s '[.[] | .ops[] | select(.op == "event" or .op == "batch") | .errors] | add' "$OUT/$1"/"$2"-r*/gateway.json; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
row() { # label phase
	local l r
	l=$(stat "$2" ledger item_rate)
	r=$(stat "$2" redis item_rate)
	printf '| %s | %.0f events/s, p50 %.1f ms, p99 %.1f ms | %.0f events/s, p50 %.1f ms, p99 %.1f ms | **%s ×** | %s / %s |\n' "$1" \
		"$r" "$(stat "$2" redis p50_ms)" "$(stat "$2" redis p99_ms)" "$l" "$(stat "$2" ledger p50_ms)" "$(stat "$2" ledger p99_ms)" \
		"$(ratio "$l" "$r")" "$(errors "$2" redis)" "$(errors "$2" ledger)"
}

cpu_row() { # phase mode
	local items
	items=$(jq -s '[.[] | .ops[] | select(.op == "event" or .op == "batch") | .items] | add' "$OUT/$1"/"$2"-r*/gateway.json)
	cat "$OUT/$1"/"$2"-r*.cpu | awk -v n="$items" -v hz="$(getconf CLK_TCK)" -v ph="$1" -v m="$2" '
		NR % 2 == 1 { g -= $1; p -= $2; r -= $3 } NR % 2 == 0 { g += $1; p += $2; r += $3 }
		END { f = 1e6 / hz / (n > 0 ? n : 1); printf "| %s | %s | %.0f | %.0f | %.0f | %.0f |\n", ph, m, g * f, p * f, r * f, (g + p + r) * f }'
}

echo "bench-ledger: $ROUNDS rounds of $DURATION per phase and mode; results in $OUT"
has() { [[ $PHASES == *" $1 "* ]]; }
has batch && both batch -mode closed -workers "$BATCH_WORKERS" -mix batch=1 -batch-size 100
has single || has open || has workers && both single -mode closed -workers 16 -mix event=1
if has workers; then
	for w in $WORKERS; do
		[[ $w == 16 ]] && { mkdir -p "$OUT/w16"; cp -r "$OUT"/single/* "$OUT/w16/"; continue; }
		both "w$w" -mode closed -workers "$w" -mix event=1
	done
fi
if has open && [[ -z $OPEN_RATE ]]; then
	OPEN_RATE=$(awk -v a="$(stat single ledger rate)" -v b="$(stat single redis rate)" 'BEGIN { m = (a < b ? a : b); printf "%d", m / 2 }')
fi
has open && both open -mode open -rate "$OPEN_RATE" -mix event=1

{
	echo "### make bench-ledger — $(date -u +%Y-%m-%dT%H:%MZ), $ROUNDS interleaved rounds of $DURATION per phase and mode"
	echo
	echo "PostgreSQL: $(paste -sd';' "$OUT/pg-settings.txt" | sed 's/;/, /g')"
	echo
	echo "| load | Redis-only | ledger | ledger ÷ Redis-only | errors (Redis-only / ledger) |"
	echo "| --- | --- | --- | --- | --- |"
	! has batch || row "batches of 100 events, $BATCH_WORKERS workers" batch
	! [[ -d $OUT/single ]] || row "single events, 16 workers" single
	! has workers || for w in $WORKERS; do row "single events, $w workers" "w$w"; done
	! has open || row "single events, open loop $OPEN_RATE/s" open
	echo
	echo "CPU per event (µs, utime + stime over the runs ÷ events written; PostgreSQL: the bench database's backends; Redis: the six nodes):"
	echo
	echo "| load | mode | gateway | PostgreSQL | Redis | total |"
	echo "| --- | --- | --- | --- | --- | --- |"
	for ph in batch single open; do
		[[ -d $OUT/$ph ]] || continue
		for m in redis ledger; do cpu_row "$ph" "$m"; done
	done
	if has open; then
		echo
		echo "Ledger stages in the open loop (quantiles from the histograms' deltas over the rounds, bucket upper bounds):"
		echo
		deploy/tools/stages.sh -w rankgate_ledger_group_stage_seconds -w rankgate_ledger_tx_stage_seconds \
			"$OUT"/open/ledger-r*.before.prom -- "$OUT"/open/ledger-r*.after.prom ||
			echo "**No stage quantiles from the ledger gateway's scrapes ($OUT/open/ledger-r*.prom): see the WARNING on stderr.**"
		echo
		printf 'open loop %s/s: single-event p99 ledger ÷ Redis-only = **%s ×** (goal ≤ 3 ×)\n' "$OPEN_RATE" \
			"$(ratio "$(stat open ledger p99_ms)" "$(stat open redis p99_ms)")"
	fi
} | tee "$OUT/summary.md"
# What the ledger's tables went through (HOT updates of totals, dead rows).
psql -qXA "$RANKGATE_BENCH_LEDGER_DSN" -c "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del, n_live_tup, n_dead_tup
	FROM pg_stat_user_tables ORDER BY n_tup_ins + n_tup_upd DESC" >"$OUT/pg-tables.txt" || true
