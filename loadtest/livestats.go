package main

import (
	"bufio"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The pure parts of the live scenario (live.go): matching acknowledged
// writes to the events (or polled reads) that reflect them, and parsing
// /metrics and INFO commandstats.

// ack is one acknowledged write of a followed (board, member): the member's
// points on that board after the write, and when the write was acknowledged.
type ack struct {
	Points int64
	At     time.Time
}

// observation is a standing a follower received: the member's points at
// that time. A follower's observations are in time order.
type observation struct {
	At     time.Time
	Points int64
}

// deliveryResult is the matching of one follower's observations against the
// acknowledged writes of its (board, member).
type deliveryResult struct {
	Delays []time.Duration // one per delivered write (0: seen before its ack came back)
	// Missed counts writes acknowledged before the cutoff that no
	// observation reflected; writes acknowledged after the cutoff and not
	// (yet) reflected are left out: the run ended before their update was due.
	Missed int
}

// matchDeliveries returns, for each ack, the delay from its At to the first
// observation with Points ≥ its Points (0 when an observation made before the
// ack already reflected it: the event overtook the write's answer). Points
// only grow (a sum family with positive deltas), so the first such
// observation is the one that delivered the write. Acks made before the
// follower's first observation still match (the first observation is the
// subscription's snapshot): callers only pass acks made after it.
func matchDeliveries(acks []ack, obs []observation, cutoff time.Time) deliveryResult {
	var r deliveryResult
	// maxTo[i]: the highest points in obs[:i+1] (guards against an
	// observation that went backwards, e.g. a replica read behind).
	maxTo := make([]int64, len(obs))
	var m int64
	for i, o := range obs {
		m = max(m, o.Points)
		maxTo[i] = m
	}
	for _, a := range acks {
		i := sort.Search(len(obs), func(i int) bool { return maxTo[i] >= a.Points })
		if i == len(obs) {
			if !a.At.After(cutoff) {
				r.Missed++
			}
			continue
		}
		r.Delays = append(r.Delays, max(0, obs[i].At.Sub(a.At)))
	}
	return r
}

// promValue sums the samples of metric name (every label set) in a
// Prometheus text exposition; ok is false when there is none.
func promValue(text, name string) (v float64, ok bool) {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		switch {
		case strings.HasPrefix(rest, " "):
		case strings.HasPrefix(rest, "{"):
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			rest = rest[end+1:]
		default:
			continue // another metric with this prefix
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		x, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		v += x
		ok = true
	}
	return v, ok
}

// commandCalls sums calls= over the cmdstat_ lines of INFO commandstats.
func commandCalls(info string) int64 {
	var n int64
	for line := range strings.SplitSeq(info, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		_, fields, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for f := range strings.SplitSeq(fields, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				if x, err := strconv.ParseInt(v, 10, 64); err == nil {
					n += x
				}
			}
		}
	}
	return n
}

// parseIntList parses "1000,5000" into positive ints.
func parseIntList(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, &strconv.NumError{Func: "parseIntList", Num: f, Err: strconv.ErrSyntax}
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, &strconv.NumError{Func: "parseIntList", Num: s, Err: strconv.ErrSyntax}
	}
	return out, nil
}
