package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestCohortsSection(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(withFamily("tie: first\ncohorts: {size: 30, tiers: [bronze, silver, gold], promote: 7, demote: 5}")))
	if err != nil {
		t.Fatal(err)
	}
	f := c.Families["f"]
	want := &Cohorts{Size: 30, Tiers: []string{"bronze", "silver", "gold"}, Promote: 7, Demote: 5}
	if !reflect.DeepEqual(f.Cohorts, want) {
		t.Errorf("cohorts = %+v, want %+v", f.Cohorts, want)
	}
	if n, ok := f.Shards(DimCohort); !ok || n != 1 {
		t.Errorf("cohort dimension: %d shards, declared %v; want 1, true", n, ok)
	}
	if !reflect.DeepEqual(f.DimensionTypes, []string{DimCohort}) {
		t.Errorf("dimension types = %v, want [cohort]", f.DimensionTypes)
	}
	if got := want.TierIndex("gold"); got != 2 {
		t.Errorf("TierIndex(gold) = %d, want 2", got)
	}
	if got := want.TierIndex("ruby"); got != -1 {
		t.Errorf("TierIndex(ruby) = %d, want -1", got)
	}
	// Validate again (a Config built in code is validated twice): still valid.
	if err := c.Validate(); err != nil {
		t.Errorf("second Validate: %v", err)
	}
	if c, err := Parse([]byte(withFamily(""))); err != nil || c.Families["f"].Cohorts != nil {
		t.Errorf("without cohorts: %v; want no cohorts", err)
	} else if _, ok := c.Families["f"].Shards(DimCohort); ok {
		t.Error("a family without cohorts has a cohort dimension")
	}
}

func TestCohortsErrors(t *testing.T) {
	t.Parallel()
	co := func(s string) string { return withFamily("cohorts: {" + s + "}") }
	tests := []struct {
		name, yaml, key, msg string
	}{
		{"size 0", co("size: 0, tiers: [a], promote: 0, demote: 0"), "families.f.cohorts.size", "out of range 1..1000"},
		{"size over max_top", "limits:\n  max_top: 20\n" + co("size: 30, tiers: [a], promote: 1, demote: 1"), "families.f.cohorts.size", "limits.max_top"},
		{"tiers empty", co("size: 30, tiers: [], promote: 1, demote: 1"), "families.f.cohorts.tiers", "at least one tier"},
		{"tiers missing", co("size: 30, promote: 1, demote: 1"), "families.f.cohorts.tiers", "at least one tier"},
		{"tier repeated", co("size: 30, tiers: [a, b, a], promote: 1, demote: 1"), "families.f.cohorts.tiers[2]", "listed twice"},
		{"tier name", co("size: 30, tiers: [Gold], promote: 1, demote: 1"), "families.f.cohorts.tiers[0]", "[a-z0-9_]{1,32}"},
		{"promote + demote over size", co("size: 10, tiers: [a, b], promote: 6, demote: 5"), "families.f.cohorts.promote", "must be ≤ size (10)"},
		{"negative promote", co("size: 10, tiers: [a], promote: -1, demote: 0"), "families.f.cohorts.promote", "≥ 0"},
		{"negative demote", co("size: 10, tiers: [a], promote: 0, demote: -2"), "families.f.cohorts.demote", "≥ 0"},
		{"unknown key", co("size: 10, tiers: [a], promote: 1, demote: 1, groups: 2"), "families.f.cohorts.groups", "unknown key"},
		{"projection family", withFamily("source: projection\ncohorts: {size: 10, tiers: [a], promote: 1, demote: 1}"), "families.f.cohorts", "source: events"},
		{"with columns", withFamily("columns: [{name: t, order: asc, max: 10}]\ncohorts: {size: 10, tiers: [a], promote: 1, demote: 1}"), "families.f.cohorts", "columns"},
		{"cohort dimension of many shards", withFamily("cohorts: {size: 10, tiers: [a], promote: 1, demote: 1}\ndimensions:\n  national: {shards: 1}\n  cohort: {shards: 4}"),
			"families.f.dimensions.cohort", "one shard each"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.yaml))
			if err == nil {
				t.Fatalf("Parse succeeded, want an error naming %q", tt.key)
			}
			if !hasKey(err, tt.key) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %v; want one naming %q with %q", err, tt.key, tt.msg)
			}
		})
	}
}
