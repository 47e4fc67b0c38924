//go:build faults

// Package faults is rankgate's fault-injection suite (issue "Reliability and
// security", item 1). It is built only with the faults tag:
//
//	go test -tags faults ./internal/faults/ -count=1 -v   (make test-faults)
//
// Every scenario starts its own local Redis Cluster with
// deploy/cluster/cluster.sh on base ports 7500–7589 (cluster-node-timeout
// 2000 ms), runs load through an in-process gateway.Service while it kills,
// pauses, restarts or reconfigures nodes, measures the write and read outage
// from the load's own timestamps, and audits every acknowledged event at the
// end. The clusters are stopped when the suite ends. Only loopback traffic;
// every loop is bounded in count and time. Results: docs/reliability.md.
//
// Test-only (build tag faults): production code must not import it.
package faults
