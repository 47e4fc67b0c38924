# bench-lib.sh — sourced (not run) by the deploy/bench-*.sh scripts, from the repository root:
# the parts they share. Each script sets its own BENCH_PORT, OUT and (for BASE builds) base_rev.
# shellcheck shell=bash

CLUSTER=deploy/cluster/cluster.sh
pids=() # the processes the script started, stopped by bench_cleanup
tmp=""  # a temporary directory, removed by bench_cleanup

# bench_cleanup stops the processes in pids, removes tmp and, unless BENCH_KEEP is 1, stops the
# cluster on BENCH_PORT..+5 (for `trap bench_cleanup EXIT`).
bench_cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	[[ -z $tmp ]] || rm -rf "$tmp"
	if [[ ${BENCH_KEEP:-0} != 1 ]]; then $CLUSTER -p "$BENCH_PORT" down >/dev/null 2>&1 || true; fi
}

# bench_build_base NAME builds the gateway of base_rev (git archive, its own go.mod) as
# $OUT/gateway-base, in a temporary directory named after NAME (tmp).
bench_build_base() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/$1-base.XXXXXX")
	git archive "$base_rev" | tar -x -C "$tmp"
	(cd "$tmp" && go build -o "$OUT/gateway-base" ./cmd/gateway)
}

# bench_cluster_up starts the script's own Redis Cluster on BENCH_PORT..+5 and sets ADDRS to its
# addresses (comma-separated).
bench_cluster_up() {
	RANKGATE_CLUSTER_NODE_TIMEOUT= RANKGATE_CLUSTER_EXTRA_ARGS= $CLUSTER -p "$BENCH_PORT" up >/dev/null
	ADDRS=$($CLUSTER -p "$BENCH_PORT" addrs)
}

# bench_build_fanoutbench builds the gateway and loadtest/fanoutbench into $OUT.
bench_build_fanoutbench() {
	go build -o "$OUT/gateway" ./cmd/gateway
	go build -o "$OUT/fanoutbench" ./loadtest/fanoutbench
}
