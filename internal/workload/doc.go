// Package workload is the shape of a load-test scenario that the load tool
// (loadtest/) runs and the capacity planner (internal/plan) models: the
// operation kinds and their parameters, the data shape (members, dimension
// boards, skews), how a member is assigned to its dimension boards, and the
// Zipf distributions both use. Keeping them in one place is what makes a
// plan and a load-test run of one scenario describe the same traffic.
//
// The package is pure: no Redis, no HTTP, no I/O.
//
// It must not import go-redis, net/http or any other rankgate package.
package workload
