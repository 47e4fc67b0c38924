#!/usr/bin/env bash
# soak.sh — SOAK_DURATION (default 10m) of mixed load through a real gateway
# on the dev cluster, then a before/after report of the gateway's heap,
# goroutines and error rate, read from its own /metrics.
#
#   make soak                      # 10 minutes at 300 req/s
#   SOAK_DURATION=2m SOAK_RATE=200 make soak
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DURATION=${SOAK_DURATION:-10m}
RATE=${SOAK_RATE:-300}
PORT=${SOAK_PORT:-18080}
CONFIG=${SOAK_CONFIG:-deploy/rankgate.dev.yaml}
OUT=${SOAK_OUT:-loadtest/results/soak-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"

deploy/cluster/cluster.sh -p 7000 up >/dev/null
go build -o "$OUT/gateway" ./cmd/gateway
"$OUT/gateway" -config "$CONFIG" -listen "127.0.0.1:$PORT" -ready-file "$OUT/ready" -log-level warn 2>"$OUT/gateway.log" &
GW=$!
trap 'kill $GW 2>/dev/null || true; wait $GW 2>/dev/null || true' EXIT
for _ in $(seq 1 60); do [[ -s $OUT/ready ]] && break; sleep 0.5; done
[[ -s $OUT/ready ]] || { echo "soak: gateway did not start; see $OUT/gateway.log" >&2; exit 1; }

sample() { # name → heap bytes, goroutines, requests, 5xx
	local m
	m=$(curl -fsS "http://127.0.0.1:$PORT/metrics")
	awk -v name="$1" '
		/^go_memstats_heap_alloc_bytes / { heap = $2 }
		/^go_goroutines / { gr = $2 }
		/^rankgate_http_requests_total\{/ { total += $NF; if ($0 ~ /code="5/) errs += $NF }
		END { printf "%s heap_bytes=%d goroutines=%d requests=%d errors_5xx=%d\n", name, heap, gr, total, errs }' <<<"$m"
}

echo "soak: warm-up (prefill 20000 members, 20 s of load)"
go run ./loadtest -scenario loadtest/scenarios/mixed.yaml -gateway "http://127.0.0.1:$PORT" -config "$CONFIG" \
	-prefill 20000 -duration 20s -rate "$RATE" -out "$OUT/warmup" >/dev/null
start=$(sample start)
echo "soak: $start"
echo "soak: $DURATION at $RATE req/s (progress on stderr)"
go run ./loadtest -scenario loadtest/scenarios/mixed.yaml -gateway "http://127.0.0.1:$PORT" -config "$CONFIG" \
	-duration "$DURATION" -rate "$RATE" -out "$OUT/run" >"$OUT/loadtest.txt"
end=$(sample end)
echo "soak: $end"
awk -v s="$start" -v e="$end" 'BEGIN {
	split(s, a, /[ =]/); split(e, b, /[ =]/)
	req = b[7] - a[7]; err = b[9] - a[9]
	printf "soak: during the run: %d requests, %d 5xx (%.4f%%); heap %.1f → %.1f MiB; goroutines %d → %d\n",
		req, err, (req > 0 ? 100 * err / req : 0), a[3] / 1048576, b[3] / 1048576, a[5], b[5]
}' | tee "$OUT/summary.txt"
echo "soak: results in $OUT (loadtest report: $OUT/run)"
