#!/usr/bin/env bash
# bench-writes.sh — writes of this tree against an earlier commit, paired (docs/performance.md,
# "Writes against an earlier commit"): a regression of the write path shows in the ratio of
# the run that makes it.
#
# Builds the gateway of BASE (git archive BASE, built in a temporary directory with its own
# go.mod) and the gateway of the working tree, starts its own Redis Cluster on BENCH_PORT..+5
# and both gateways with deploy/bench-writes.yaml (BASE's config keys only), each under its own
# key prefix, at their default log level (info: what a user gets): BASE on 127.0.0.1:GATEWAY_PORT,
# this tree on GATEWAY_PORT+1. It prefills PREFILL members into each, then drives each with the
# load tool, closed loop, in A-B-B-A order (A = BASE, B = this tree), DURATION per run, ROUNDS
# rounds of each load:
#   events    POST /v1/events, WORKERS workers (16)
#   batches   POST /v1/events:batch of 100 events, BATCH_WORKERS workers (4)
# every event on three boards (a 16-shard national board, a province and a class board; the load
# tool's default world of MEMBERS members, 8 provinces, 50 classes). It prints writes/s per run,
# new ÷ base per pair and overall (geometric mean of the pairs), and the CPU per write of each
# run (utime + stime from /proc: the gateway; Redis: the cluster's six nodes).
# FEED=1 (the default) gives this tree's gateway a second family, w16feed, the same with
# index.enabled (every board write also appends to its shard's change feed, and the gateway
# follows the national board's feeds); its runs go in the middle of each round (A-B-F-F-B-A),
# and the script prints feed on ÷ feed off of this tree's gateway in the same rounds.
#
#   make bench-writes                              # BASE 61ffcf5, 2 rounds, 15 s per run (≈ 7 min)
#   BASE=HEAD~3 ROUNDS=1 DURATION=10s make bench-writes
#   BASE_GATEWAY=/tmp/gw-61ffcf5 FEED=0 make bench-writes    # reuse a built BASE gateway
#
# KEEP=1 leaves the cluster up after the run (its keys too); by default it is stopped.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BASE=${BASE:-61ffcf5}
BASE_GATEWAY=${BASE_GATEWAY:-}
BENCH_PORT=${BENCH_PORT:-7250}
GATEWAY_PORT=${GATEWAY_PORT:-18250}
DURATION=${DURATION:-15s}
ROUNDS=${ROUNDS:-2}
WORKERS=${WORKERS:-16}
BATCH_WORKERS=${BATCH_WORKERS:-4}
MEMBERS=${MEMBERS:-100000}
PREFILL=${PREFILL:-$MEMBERS}
FEED=${FEED:-1}
LOADS=${LOADS:-events batches}
KEEP=${KEEP:-0}
CONFIG=${CONFIG:-deploy/bench-writes.yaml}
OUT=${OUT:-loadtest/results/bench-writes-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

base_rev=$(git rev-parse --verify --short "$BASE^{commit}")
new_rev=$(git describe --always --dirty)

# shellcheck source=deploy/bench-lib.sh
source deploy/bench-lib.sh
BENCH_KEEP=$KEEP
trap bench_cleanup EXIT

# The gateways: BASE from its own tree (its own go.mod), this tree's, the load tool.
if [[ -z $BASE_GATEWAY ]]; then
	bench_build_base bench-writes
	BASE_GATEWAY=$OUT/gateway-base
fi
go build -o "$OUT/gateway-new" ./cmd/gateway
go build -o "$OUT/loadtest" ./loadtest

# Configs: BASE never sees the feed family; this tree's gateway has it with FEED=1.
sed '/^  # >>> feed/,/^  # <<< feed/d' "$CONFIG" >"$OUT/base.yaml"
if [[ $FEED == 1 ]]; then cp "$CONFIG" "$OUT/new.yaml"; else cp "$OUT/base.yaml" "$OUT/new.yaml"; fi

bench_cluster_up
REDIS_PIDS=$(for p in $(seq "$BENCH_PORT" $((BENCH_PORT + 5))); do
	timeout 5 redis-cli -p "$p" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p' || true
done)
[[ $(wc -w <<<"$REDIS_PIDS") == 6 ]] || { echo "bench-writes: could not find the six redis-server pids on $BENCH_PORT..+5" >&2; exit 1; }

run_id=$(date +%s)
start_gateway() { # name binary config port
	RANKGATE_REDIS_ADDRS=$ADDRS RANKGATE_REDIS_PREFIX="bw$1$run_id" "$2" -config "$3" -listen "127.0.0.1:$4" \
		-ready-file "$OUT/ready-$1" 2>"$OUT/gateway-$1.log" &
	pids+=($!)
}
start_gateway base "$BASE_GATEWAY" "$OUT/base.yaml" "$GATEWAY_PORT"
start_gateway new "$OUT/gateway-new" "$OUT/new.yaml" $((GATEWAY_PORT + 1))
for name in base new; do
	for _ in $(seq 1 120); do [[ -s $OUT/ready-$name ]] && break; sleep 0.5; done
	[[ -s $OUT/ready-$name ]] || { echo "bench-writes: gateway $name did not start; see $OUT/gateway-$name.log" >&2; exit 1; }
done
gw_pid() { if [[ $1 == base ]]; then echo "${pids[0]}"; else echo "${pids[1]}"; fi; }
url() { if [[ $1 == base ]]; then echo "http://127.0.0.1:$GATEWAY_PORT"; else echo "http://127.0.0.1:$((GATEWAY_PORT + 1))"; fi; }
# A target: base | new | feed (this tree's gateway, family w16feed).
gw_of() { if [[ $1 == base ]]; then echo base; else echo new; fi; }
family_of() { if [[ $1 == feed ]]; then echo w16feed; else echo w16; fi; }
config_of() { if [[ $1 == base ]]; then echo "$OUT/base.yaml"; else echo "$OUT/new.yaml"; fi; }

ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0))); done; echo "$t"; }
# shellcheck disable=SC2086 # word splitting of the pid list intended
cpu() { echo "$(ticks "$(gw_pid "$(gw_of "$1")")") $(ticks $REDIS_PIDS)"; }

loadtest() { # target out args…
	local t=$1 out=$2
	shift 2
	"$OUT/loadtest" -gateway "$(url "$(gw_of "$t")")" -config "$(config_of "$t")" -family "$(family_of "$t")" \
		-members "$MEMBERS" -no-plots -quiet -out "$out" "$@" >"$out.txt" 2>&1 ||
		{ echo "bench-writes: load tool failed on $t; see $out.txt" >&2; exit 1; }
}

targets=(base new)
[[ $FEED == 1 ]] && targets+=(feed)
if ((PREFILL > 0)); then
	mkdir -p "$OUT/prefill"
	for t in "${targets[@]}"; do loadtest "$t" "$OUT/prefill/$t" -prefill "$PREFILL" -duration 0; done
fi

# run load round pos target: one closed-loop run → $OUT/load/rROUND-POS-TARGET/gateway.json and .cpu
run() {
	local load=$1 round=$2 pos=$3 t=$4 dir args
	dir=$OUT/$load/r$round-$pos-$t
	mkdir -p "$OUT/$load"
	case $load in
	events) args=(-mode closed -workers "$WORKERS" -mix event=1) ;;
	batches) args=(-mode closed -workers "$BATCH_WORKERS" -mix batch=1 -batch-size 100) ;;
	*) echo "bench-writes: unknown load $load" >&2; exit 1 ;;
	esac
	cpu "$t" >"$dir.cpu"
	loadtest "$t" "$dir" -duration "$DURATION" "${args[@]}"
	cpu "$t" >>"$dir.cpu"
	echo "$dir" >>"$OUT/$load/runs"
}
order=(base new new base)
[[ $FEED == 1 ]] && order=(base new feed feed new base)
echo "bench-writes: BASE $base_rev vs this tree ($new_rev), $ROUNDS rounds of ${order[*]}, $DURATION per run; results in $OUT" >&2
for load in $LOADS; do
	for r in $(seq 1 "$ROUNDS"); do
		for i in "${!order[@]}"; do run "$load" "$r" "$i" "${order[$i]}"; done
	done
done

# One line per run: load round pos target writes/s errors gateway-µs/write redis-µs/write.
hz=$(getconf CLK_TCK)
stats() { # dir → "writes/s errors gateway-µs redis-µs"
	local items rate errs
	read -r items rate errs < <(jq -r '[.ops[] | select(.op == "event" or .op == "batch")] |
		"\(map(.items) | add) \(map(.item_rate) | add) \(map(.errors) | add)"' "$1/gateway.json")
	awk -v n="$items" -v r="$rate" -v e="$errs" -v hz="$hz" 'NR == 1 { g0 = $1; r0 = $2 } NR == 2 { g1 = $1; r1 = $2 }
		END { f = 1e6 / hz / (n > 0 ? n : 1); printf "%.0f %d %.1f %.1f\n", r, e, (g1 - g0) * f, (r1 - r0) * f }' "$1.cpu"
}
for load in $LOADS; do
	while read -r dir; do
		b=$(basename "$dir")
		IFS=- read -r round pos t <<<"$b"
		echo "$load ${round#r} $pos $t $(stats "$dir")"
	done <"$OUT/$load/runs"
done >"$OUT/runs.txt"

# Pairs: neighbours in the order (A-B, B-A; with FEED B-F, F-B), by round.
pairs() { # load num den → one ratio num÷den per pair, a line each: "round ratio"
	awk -v L="$1" -v N="$2" -v D="$3" '$1 == L { r[$2 "," $3] = $5; t[$2 "," $3] = $4; if ($3 > m) m = $3; if ($2 > R) R = $2 }
		END { for (i = 1; i <= R; i++) for (p = 0; p < m; p++) {
			a = t[i "," p]; b = t[i "," p + 1]
			if (a == N && b == D) printf "%d %.3f\n", i, r[i "," p] / r[i "," p + 1]
			if (a == D && b == N) printf "%d %.3f\n", i, r[i "," p + 1] / r[i "," p] } }' "$OUT/runs.txt"
}
geomean() { awk '{ s += log($2); n++ } END { if (n) printf "%.3f", exp(s / n); else printf "-" }'; }
mean_of() { # load target column → mean
	awk -v L="$1" -v T="$2" -v C="$3" '$1 == L && $4 == T { s += $C; n++ } END { if (n) printf "%.0f", s / n; else printf "-" }' "$OUT/runs.txt"
}
mean1() { awk -v L="$1" -v T="$2" -v C="$3" '$1 == L && $4 == T { s += $C; n++ } END { if (n) printf "%.1f", s / n; else printf "-" }' "$OUT/runs.txt"; }
name_of() { case $1 in base) echo "BASE $base_rev" ;; new) echo "this tree" ;; feed) echo "this tree, feed on" ;; esac; }

{
	echo "### make bench-writes — $(date -u +%Y-%m-%dT%H:%MZ), BASE $base_rev vs this tree ($new_rev)"
	echo
	echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end; $ROUNDS rounds of ${order[*]}, $DURATION per run, closed loop;" \
		"$MEMBERS members (prefill $PREFILL), every event on 3 boards (national: 16 shards); both gateways at log level info."
	echo
	echo "| load | round | target | writes/s | errors | gateway CPU µs/write | Redis CPU µs/write |"
	echo "| --- | ---: | --- | ---: | ---: | ---: | ---: |"
	awk '{ printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $4, $5, $6, $7, $8 }' "$OUT/runs.txt" |
		sed -e "s/| base |/| $(name_of base) |/" -e "s/| new |/| $(name_of new) |/" -e "s/| feed |/| $(name_of feed) |/"
	echo
	echo "| load | new ÷ base per pair | **new ÷ base** (geometric mean) | writes/s base / new | gateway CPU µs/write base / new | Redis CPU µs/write base / new |"
	echo "| --- | --- | ---: | --- | --- | --- |"
	for load in $LOADS; do
		printf '| %s, %s workers | %s | **%s** | %s / %s | %s / %s | %s / %s |\n' "$load" \
			"$([[ $load == events ]] && echo "$WORKERS" || echo "$BATCH_WORKERS × 100")" \
			"$(pairs "$load" new base | awk '{ printf "%s%s", sep, $2; sep = ", " }')" "$(pairs "$load" new base | geomean)" \
			"$(mean_of "$load" base 5)" "$(mean_of "$load" new 5)" "$(mean1 "$load" base 7)" "$(mean1 "$load" new 7)" \
			"$(mean1 "$load" base 8)" "$(mean1 "$load" new 8)"
	done
	if [[ $FEED == 1 ]]; then
		echo
		echo "| load | feed on ÷ off per pair | **feed on ÷ off** (geometric mean) | writes/s off / on | gateway CPU µs/write off / on | Redis CPU µs/write off / on |"
		echo "| --- | --- | ---: | --- | --- | --- |"
		for load in $LOADS; do
			printf '| %s | %s | **%s** | %s / %s | %s / %s | %s / %s |\n' "$load" \
				"$(pairs "$load" feed new | awk '{ printf "%s%s", sep, $2; sep = ", " }')" "$(pairs "$load" feed new | geomean)" \
				"$(mean_of "$load" new 5)" "$(mean_of "$load" feed 5)" "$(mean1 "$load" new 7)" "$(mean1 "$load" feed 7)" \
				"$(mean1 "$load" new 8)" "$(mean1 "$load" feed 8)"
		done
	fi
	errs=$(awk '{ s += $6 } END { print s + 0 }' "$OUT/runs.txt")
	if ((errs > 0)); then
		echo
		echo "**WARNING: $errs failed writes** (see $OUT/*/r*.txt)"
	fi
	echo
	echo "Gateway logs: BASE $(wc -c <"$OUT/gateway-base.log") bytes, this tree $(wc -c <"$OUT/gateway-new.log") bytes."
} | tee "$OUT/summary.md"
echo
echo "bench-writes: results in $OUT/summary.md (command: BASE=$BASE ROUNDS=$ROUNDS DURATION=$DURATION FEED=$FEED make bench-writes)"
