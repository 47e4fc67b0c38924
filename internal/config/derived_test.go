package config

import (
	"strings"
	"testing"
)

const derivedBase = `listen: "127.0.0.1:0"
families:
  base:
    period: week
    key_group: season
    max_points: 1000
    dimensions:
      national: {shards: 4}
  bonus:
    period: week
    key_group: season
    max_points: 1000
    dimensions:
      national: {shards: 4}
`

func TestDerivedFamilies(t *testing.T) {
	t.Parallel()
	good := derivedBase + `  final:
    source: derived
    period: week
    key_group: season
    max_points: 3000
    derived_from:
      inputs:
        - {family: base}
        - {family: bonus, weight: 2}
    dimensions:
      national: {shards: 4}
`
	c, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	f := c.Families["final"]
	if !f.Derived() || f.DerivedFrom.Aggregate != AggregateSum || len(f.DerivedFrom.Inputs) != 2 || f.DerivedFrom.Inputs[1].Weight != 2 ||
		f.DerivedFrom.Inputs[0].Weight != 1 || f.KeyGroup != "season" {
		t.Fatalf("derived family = %+v %+v", f, f.DerivedFrom)
	}
	for _, tc := range []struct {
		title, yaml, key string
	}{
		{"input shard count differs", strings.Replace(good, "    derived_from:\n      inputs:\n        - {family: base}\n        - {family: bonus, weight: 2}\n    dimensions:\n      national: {shards: 4}",
			"    derived_from:\n      inputs:\n        - {family: base}\n        - {family: bonus, weight: 2}\n    dimensions:\n      national: {shards: 8}", 1), "families.final.dimensions.national.shards"},
		{"input in another key group", strings.Replace(good, "  bonus:\n    period: week\n    key_group: season", "  bonus:\n    period: week", 1), "families.final.derived_from.inputs[1].family"},
		{"unknown input", strings.Replace(good, "{family: bonus, weight: 2}", "{family: nope, weight: 2}", 1), "families.final.derived_from.inputs[1].family"},
		{"zero weight", strings.Replace(good, "weight: 2", "weight: 0", 1), "families.final.derived_from.inputs[1].weight"},
		{"max_points too low", strings.Replace(good, "max_points: 3000", "max_points: 2999", 1), "families.final.max_points"},
		{"tie first", strings.Replace(good, "    source: derived\n", "    source: derived\n    tie: first\n    seq_capacity: 1024\n", 1), "families.final.tie"},
		{"bad aggregate", strings.Replace(good, "      inputs:", "      aggregate: avg\n      inputs:", 1), "families.final.derived_from.aggregate"},
		{"no derived_from", strings.Replace(good, "    derived_from:\n      inputs:\n        - {family: base}\n        - {family: bonus, weight: 2}\n", "", 1), "families.final.derived_from"},
		{"derived_from on an events family", strings.Replace(good, "    source: derived\n", "", 1), "families.final.derived_from"},
		{"input with sort columns", strings.Replace(good, "  bonus:\n    period: week\n", "  bonus:\n    period: week\n    columns:\n      - {name: a, max: 9}\n", 1), "families.final.derived_from.inputs[1].family"},
		{"other period", strings.Replace(good, "  final:\n    source: derived\n    period: week", "  final:\n    source: derived\n    period: day", 1), "families.final.derived_from.inputs[0].family"},
	} {
		_, err := Parse([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.key+":") {
			t.Errorf("%s: err = %v, want one naming %s", tc.title, err, tc.key)
		}
	}
}
