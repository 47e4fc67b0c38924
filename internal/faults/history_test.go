//go:build faults

package faults

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// obs is one member's total as a read answered it.
type obs struct {
	user   int
	points int64
	via    string // which gateway answered, when the load has several
}

type obsKey struct{}

type viaKey struct{}

// via tags the observations of a read with the gateway that answered it.
func via(ctx context.Context, gw string) context.Context { return context.WithValue(ctx, viaKey{}, gw) }

// observing gives a read a collector for what its answer showed.
func observing(ctx context.Context) (context.Context, *[]obs) {
	seen := new([]obs)
	return context.WithValue(ctx, obsKey{}, seen), seen
}

// observe records that a read answered user name with points (a read that
// is not observing, or a user not of the load, records nothing).
func observe(ctx context.Context, name string, points int64) {
	seen, _ := ctx.Value(obsKey{}).(*[]obs)
	if seen == nil || !strings.HasPrefix(name, "u") {
		return
	}
	i, err := strconv.Atoi(name[1:])
	if err != nil || i < 0 || i >= users {
		return
	}
	gw, _ := ctx.Value(viaKey{}).(string)
	*seen = append(*seen, obs{user: i, points: points, via: gw})
}

// violation is a read whose total lies outside what the history allows.
type violation struct {
	user       int
	via        string
	points     int64
	lo, hi     int64
	start, end time.Time
}

func (v violation) String() string {
	s := fmt.Sprintf("%s read %d at [%s, %s], allowed [%d, %d]", userName(v.user), v.points,
		v.start.Format("15:04:05.000"), v.end.Format("15:04:05.000"), v.lo, v.hi)
	if v.via != "" {
		s += " via gateway " + v.via
	}
	return s
}

// history is the checker's verdict over one load.
type history struct {
	reads, checked int // successful reads with observations; totals checked
	below, above   []violation
}

// add sums another audit's verdict into h.
func (h *history) add(o history) {
	h.reads += o.reads
	h.checked += o.checked
	h.below = append(h.below, o.below...)
	h.above = append(h.above, o.above...)
}

func (h history) violations() int { return len(h.below) + len(h.above) }

func (h history) String() string {
	return fmt.Sprintf("%d reads, %d totals checked, %d violations (%d below the acknowledged sum, %d above the invoked sum)",
		h.reads, h.checked, h.violations(), len(h.below), len(h.above))
}

// checkHistory checks every total a read showed (consistency=primary, the
// national board; every event of the load adds its delta there) against the
// load's own timestamps: it must be at least the sum of the events of that
// member acknowledged before the read began, and at most the sum of those
// invoked (first attempt started) before the read ended. For a counter whose
// increments are idempotent this is linearizability: the read can be placed
// at a point between its invoke and response at which exactly some set of
// increments took effect — all that completed before it began, none that
// began after it ended (the approach of porcupine, specialised to sums, so
// it runs in time linear in the history rather than searching orders).
// Below: an acknowledged event lost (or not yet visible); above: an event
// counted twice or a total from nowhere. Reads before l.histFrom (checked by
// an earlier audit) are skipped.
func (l *load) checkHistory() history {
	l.mu.Lock()
	defer l.mu.Unlock()
	type ev struct {
		invoked, acked time.Time
		delta          int64
	}
	per := make([][]ev, users)
	for _, e := range l.events {
		if e.invoked.IsZero() {
			continue // never sent: allowed in neither bound
		}
		x := ev{invoked: e.invoked, delta: e.delta}
		if e.acked {
			x.acked = e.ackedAt
		}
		per[e.user] = append(per[e.user], x)
	}
	for _, es := range per {
		sort.Slice(es, func(i, j int) bool { return es[i].invoked.Before(es[j].invoked) })
	}
	var h history
	for _, o := range l.ops {
		if o.write || o.err != nil || len(o.seen) == 0 || o.start.Before(l.histFrom) {
			continue
		}
		h.reads++
		for _, s := range o.seen {
			h.checked++
			var lo, hi int64
			for _, e := range per[s.user] {
				if !e.invoked.Before(o.end) {
					break
				}
				hi += e.delta
				if !e.acked.IsZero() && e.acked.Before(o.start) {
					lo += e.delta
				}
			}
			v := violation{user: s.user, via: s.via, points: s.points, lo: lo, hi: hi, start: o.start, end: o.end}
			switch {
			case s.points < lo:
				h.below = append(h.below, v)
			case s.points > hi:
				h.above = append(h.above, v)
			}
		}
	}
	return h
}
