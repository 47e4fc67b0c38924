package main

import (
	"slices"
	"testing"
	"time"
)

func TestMatchDeliveries(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	cases := []struct {
		name   string
		acks   []ack
		obs    []observation
		cutoff time.Time
		delays []time.Duration
		missed int
	}{
		{name: "no acks", obs: []observation{{at(0), 5}}, cutoff: at(1000)},
		{
			name:   "one write, next event reflects it",
			acks:   []ack{{Points: 7, At: at(100)}},
			obs:    []observation{{at(0), 5}, {at(900), 7}},
			cutoff: at(2000),
			delays: []time.Duration{800 * time.Millisecond},
		},
		{
			name:   "event with more points delivers every write up to them",
			acks:   []ack{{Points: 6, At: at(100)}, {Points: 9, At: at(300)}},
			obs:    []observation{{at(0), 5}, {at(1000), 9}},
			cutoff: at(2000),
			delays: []time.Duration{900 * time.Millisecond, 700 * time.Millisecond},
		},
		{
			name:   "an event that overtakes the write's answer is a delay of 0",
			acks:   []ack{{Points: 6, At: at(500)}},
			obs:    []observation{{at(0), 5}, {at(400), 6}},
			cutoff: at(2000),
			delays: []time.Duration{0},
		},
		{
			name:   "acks out of points order (concurrent writes of one member)",
			acks:   []ack{{Points: 10, At: at(200)}, {Points: 8, At: at(250)}},
			obs:    []observation{{at(0), 5}, {at(1000), 8}, {at(2000), 10}},
			cutoff: at(3000),
			delays: []time.Duration{1800 * time.Millisecond, 750 * time.Millisecond},
		},
		{
			name:   "never reflected before the cutoff is missed",
			acks:   []ack{{Points: 6, At: at(100)}},
			obs:    []observation{{at(0), 5}},
			cutoff: at(2000),
			missed: 1,
		},
		{
			name:   "not reflected but acked after the cutoff is left out",
			acks:   []ack{{Points: 6, At: at(2500)}},
			obs:    []observation{{at(0), 5}},
			cutoff: at(2000),
		},
		{
			name:   "an observation that went backwards does not undo a delivery",
			acks:   []ack{{Points: 9, At: at(100)}},
			obs:    []observation{{at(0), 5}, {at(500), 9}, {at(600), 7}},
			cutoff: at(2000),
			delays: []time.Duration{400 * time.Millisecond},
		},
		{
			name:   "no observations at all",
			acks:   []ack{{Points: 1, At: at(100)}},
			cutoff: at(2000),
			missed: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := matchDeliveries(tc.acks, tc.obs, tc.cutoff)
			if !slices.Equal(r.Delays, tc.delays) || r.Missed != tc.missed {
				t.Fatalf("got delays %v missed %d, want %v missed %d", r.Delays, r.Missed, tc.delays, tc.missed)
			}
		})
	}
}

func TestDelayQuantiles(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	cases := []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0.99, 0},
		{"single", ms(700), 0.5, 700 * time.Millisecond},
		{"median of four is the second", ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{"p99 of 1..100 is 99", ms(hundred...), 0.99, 99 * time.Millisecond},
		{"p100 is the max", ms(hundred...), 1, 100 * time.Millisecond},
		{"p0 is the min", ms(3, 5), 0, 3 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percentile(tc.sorted, tc.q); got != tc.want {
				t.Fatalf("Percentile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}

func TestPromValue(t *testing.T) {
	text := `# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.5
process_cpu_seconds_total_extra 99
go_memstats_heap_inuse_bytes 1.048576e+06
rankgate_live_events_total{family="a"} 3
rankgate_live_events_total{family="b",x="}"} 4
`
	cases := []struct {
		name   string
		metric string
		want   float64
		ok     bool
	}{
		{"plain counter, not its longer namesake", "process_cpu_seconds_total", 12.5, true},
		{"exponent notation", "go_memstats_heap_inuse_bytes", 1048576, true},
		{"summed over label sets", "rankgate_live_events_total", 7, true},
		{"absent", "process_resident_memory_bytes", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := promValue(text, tc.metric)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("promValue(%s) = %v, %v; want %v, %v", tc.metric, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestCommandCalls(t *testing.T) {
	cases := []struct {
		name string
		info string
		want int64
	}{
		{"empty", "", 0},
		{"sums every command", "# Commandstats\r\ncmdstat_get:calls=10,usec=5,usec_per_call=0.5,rejected_calls=0,failed_calls=0\r\ncmdstat_evalsha:calls=32,usec=100\r\n", 42},
		{"ignores other sections", "# Stats\r\ntotal_commands_processed:999\r\ncmdstat_ping:calls=1,usec=1\r\n", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := commandCalls(tc.info); got != tc.want {
				t.Fatalf("commandCalls = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestNetCPU(t *testing.T) {
	all := []livePhase{
		{Kind: "writes", K: 1000, CPUPerClient: 10},
		{Kind: "live", K: 1000, CPUPerClient: 12},
		{Kind: "live", K: 1000, CPUPerClient: 14},
		{Kind: "poll", K: 1000, CPUPerClient: 60},
		{Kind: "poll", K: 5000, CPUPerClient: 99},
		// A baseline that drifts: each phase is net of the writes next to it.
		{Kind: "writes", K: 2000, CPUPerClient: 10},
		{Kind: "live", K: 2000, CPUPerClient: 13},
		{Kind: "writes", K: 2000, CPUPerClient: 20},
		{Kind: "poll", K: 2000, CPUPerClient: 70},
		{Kind: "writes", K: 2000, CPUPerClient: 30},
		{Kind: "live", K: 2000, CPUPerClient: 35},
	}
	cases := []struct {
		name string
		k    int
		kind string
		want float64
		ok   bool
	}{
		{"mean of the live phases net of the writes", 1000, "live", 3, true},
		{"poll net of the writes", 1000, "poll", 50, true},
		{"no writes phase: raw", 5000, "poll", 99, true},
		{"no phase of that kind", 5000, "live", 0, false},
		{"live net of its neighbouring writes", 2000, "live", 1.5, true}, // (13 − 15 + 35 − 30) / 2
		{"poll net of its neighbouring writes", 2000, "poll", 45, true},  // 70 − (20 + 30) / 2
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := netCPU(all, tc.k, tc.kind)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("netCPU = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestParseIntList(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []int
		wantErr bool
	}{
		{"two", "1000,5000", []int{1000, 5000}, false},
		{"spaces", " 10 , 20 ", []int{10, 20}, false},
		{"zero", "0", nil, true},
		{"empty", "", nil, true},
		{"word", "1000,lots", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseIntList(tc.in)
			if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
				t.Fatalf("parseIntList(%q) = %v, %v", tc.in, got, err)
			}
		})
	}
}

func TestMemPerClient(t *testing.T) {
	all := []livePhase{
		{Kind: "writes", K: 1024, RSSMean: 100 << 20, HeapMin: 50 << 20},
		{Kind: "live", K: 1024, RSSMean: 110 << 20, HeapMin: 55 << 20},
		{Kind: "live", K: 1024, RSSMean: 120 << 20, HeapMin: 65 << 20},
		{Kind: "writes", K: 1024, RSSMean: 115 << 20, HeapMin: 60 << 20}, // after a live phase: still holds some of it
		{Kind: "live", K: 2048, RSSDelta: 40 << 20, HeapDelta: 20 << 20},
	}
	cases := []struct {
		name      string
		k         int
		rss, heap float64
		ok        bool
	}{
		{"mean over the lowest writes phase, per client", 1024, 15 << 10, 10 << 10, true},
		{"no writes phase: before/after attaching", 2048, 20 << 10, 10 << 10, true},
		{"no phase of that K", 3000, 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rss, heap, ok := memPerClient(all, tc.k, "live")
			if rss != tc.rss || heap != tc.heap || ok != tc.ok {
				t.Fatalf("memPerClient = %v, %v, %v; want %v, %v, %v", rss, heap, ok, tc.rss, tc.heap, tc.ok)
			}
		})
	}
}
