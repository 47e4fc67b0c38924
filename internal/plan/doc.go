// Package plan is rankgate's capacity model: from a season's scenario
// (members, boards, operations and their rates), a family's rules, a
// calibration and a slot → master map, Project computes the memory and the
// Redis commands per master, per slot and per board, says which boards need
// more shards and warns of what will not fit; WriteTable prints the plan.
//
// It owns the scenario (scenario.go), the world of boards and members it
// implies (world.go), the placement of slots on masters (placement.go), the
// calibration's data (calibration.go: plain numbers, filled by package
// internal/plan/calibrate or by hand in tests), the projection itself
// (model.go) and its report (report.go).
//
// It is pure: no Redis, no network, no clock. It must not import go-redis,
// internal/store, internal/gateway or net/http; the live measurement that
// feeds it lives in internal/plan/calibrate.
package plan
