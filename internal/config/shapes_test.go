package config

import (
	"testing"
	"time"
)

func TestParsePeriodShapes(t *testing.T) {
	t.Parallel()
	yaml := `redis: {addrs: ["127.0.0.1:7000"]}
families:
  sprint:
    period: seasons
    seasons:
      - {id: s1, starts: "2026-12-01T00:00:00Z", ends: "2026-12-15T00:00:00Z"}
      - {id: s2, starts: "2026-12-20T00:00:00+01:00", ends: "2027-01-10T00:00:00Z"}
    dimensions: {national: {shards: 4}}
  weekly_reset:
    period: cron
    reset: "0 4 * * 1"
    timezone: Europe/Berlin
    dimensions: {national: {shards: 2}}
  hourly:
    period: hour
    timezone: Asia/Shanghai
    dimensions: {national: {}}
`
	c, err := Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	sp := c.Families["sprint"]
	if len(sp.Seasons) != 2 || sp.Seasons[1].ID != "s2" || !sp.Seasons[1].Start.Equal(time.Date(2026, 12, 19, 23, 0, 0, 0, time.UTC)) {
		t.Fatalf("seasons = %+v", sp.Seasons)
	}
	if p := sp.PeriodSpec().At(time.Date(2026, 12, 21, 0, 0, 0, 0, time.UTC)); p.ID != "s2" {
		t.Fatalf("sprint period = %+v", p)
	}
	wr := c.Families["weekly_reset"]
	if wr.Reset != "0 4 * * 1" {
		t.Fatalf("reset = %q", wr.Reset)
	}
	if p := wr.PeriodSpec().At(time.Date(2026, 12, 9, 0, 0, 0, 0, time.UTC)); p.ID != "20261207T0400" {
		t.Fatalf("weekly_reset period = %+v", p)
	}
	if p := c.Families["hourly"].PeriodSpec().At(time.Date(2026, 12, 1, 2, 30, 0, 0, time.UTC)); p.ID != "2026-12-01T10" {
		t.Fatalf("hourly period = %+v", p)
	}
}
