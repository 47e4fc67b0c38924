package plan

import (
	"fmt"
	"sort"

	"github.com/rankgate/rankgate/internal/shard"
)

// SlotRange is a range of slots served by one master.
type SlotRange struct {
	Start  int    `json:"start"`
	End    int    `json:"end"`
	Master string `json:"master"`
}

// Placement maps slots to masters: the live cluster's map, or an even split
// for a planned master count.
type Placement struct {
	Source string      `json:"source"` // "live cluster" or "even split over N masters"
	Ranges []SlotRange `json:"ranges"`
}

// EvenPlacement splits the slots into n contiguous ranges, as
// `redis-cli --cluster create` does, on masters named master-1 … master-n.
func EvenPlacement(n int) Placement {
	p := Placement{Source: fmt.Sprintf("even split over %d planned masters", n)}
	for i := range n {
		p.Ranges = append(p.Ranges, SlotRange{Start: i * shard.SlotCount / n, End: (i+1)*shard.SlotCount/n - 1,
			Master: fmt.Sprintf("master-%d", i+1)})
	}
	return p
}

// Master returns the master serving slot, or "uncovered".
func (p Placement) Master(slot int) string {
	rs := p.Ranges
	i := sort.Search(len(rs), func(i int) bool { return rs[i].End >= slot })
	if i < len(rs) && rs[i].Start <= slot {
		return rs[i].Master
	}
	return "uncovered"
}

// Masters returns every master with its number of slots, sorted by name.
func (p Placement) Masters() ([]string, map[string]int) {
	slots := map[string]int{}
	for _, r := range p.Ranges {
		slots[r.Master] += r.End - r.Start + 1
	}
	names := make([]string, 0, len(slots))
	for m := range slots {
		names = append(names, m)
	}
	sort.Strings(names)
	return names, slots
}

// sorted returns p with its ranges sorted by start.
func (p Placement) sorted() Placement {
	rs := append([]SlotRange(nil), p.Ranges...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Start < rs[j].Start })
	p.Ranges = rs
	return p
}
