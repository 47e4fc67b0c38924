package gateway

import (
	"context"
	"fmt"
	"sort"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
)

// Boards lists the boards that exist in a family period with member counts.
func (s *Service) Boards(ctx context.Context, familyName, periodID string) (BoardList, error) {
	f, p, err := s.familyPeriod(familyName, periodID)
	if err != nil {
		return BoardList{}, err
	}
	dims, err := s.lifeBE.Boards(ctx, s.layout.Period(f.cfg.Name, p.ID))
	if err != nil {
		return BoardList{}, rank.Unavailable(err, "listing boards of %s/%s", f.cfg.Name, p.ID)
	}
	sort.Strings(dims)
	out := BoardList{ReadMeta: ReadMeta{Board: f.cfg.Name + "/" + p.ID, Source: SourcePrimary, AsOf: s.now().UTC()},
		Family: f.cfg.Name, Period: p.ID, Boards: make([]BoardSummary, 0, len(dims))}
	for _, d := range dims {
		b, err := s.resolve(ctx, BoardRef{Family: f.cfg.Name, Period: p.ID, Dimension: d})
		if err != nil {
			continue // a dimension the config no longer declares
		}
		counts, err := fanout(ctx, s, "card", b.n, func(ctx context.Context, i int) (int64, error) {
			return s.lifeBE.Card(ctx, s.layout.ZKey(b.b, i, b.n), false)
		})
		if err != nil {
			return BoardList{}, err
		}
		var n int64
		for _, c := range counts {
			n += c
		}
		out.Boards = append(out.Boards, BoardSummary{Board: b.name(), Dimension: d, Shards: b.n, Members: n})
	}
	return out, nil
}

// Layout reports every board shard of the given family periods (all
// families' current periods when familyName is empty) → key, slot, master,
// members and memory, and warns when a board's shards pile onto one node.
func (s *Service) Layout(ctx context.Context, familyName, periodID string) (Layout, error) {
	names := s.cfg.FamilyNames
	if familyName != "" {
		if _, err := s.family(familyName); err != nil {
			return Layout{}, err
		}
		names = []string{familyName}
	}
	if periodID == "" {
		periodID = "current"
	}
	slots, err := s.lifeBE.Slots(ctx)
	if err != nil {
		return Layout{}, rank.Unavailable(err, "reading the slot map")
	}
	nodeOf := func(slot int) string {
		i := sort.Search(len(slots), func(i int) bool { return slots[i].End >= slot })
		if i < len(slots) && slots[i].Start <= slot {
			return slots[i].Master
		}
		return "uncovered"
	}
	loads := map[string]*NodeLoad{}
	for _, r := range slots {
		nl := loads[r.Master]
		if nl == nil {
			nl = &NodeLoad{Node: r.Master, Replicas: r.Replicas}
			loads[r.Master] = nl
		}
		nl.Slots += r.End - r.Start + 1
	}
	out := Layout{ReadMeta: ReadMeta{Board: "*", Source: SourcePrimary, AsOf: s.now().UTC()}, Boards: []BoardPlacement{}, Warnings: []string{}}
	for _, name := range names {
		list, err := s.Boards(ctx, name, periodID)
		if err != nil {
			return Layout{}, err
		}
		for _, bs := range list.Boards {
			b, err := s.resolve(ctx, BoardRef{Family: name, Period: list.Period, Dimension: bs.Dimension})
			if err != nil {
				return Layout{}, err
			}
			type got struct{ members, memory int64 }
			res, err := fanout(ctx, s, "layout", b.n, func(ctx context.Context, i int) (got, error) {
				k := s.layout.ZKey(b.b, i, b.n)
				n, err := s.lifeBE.Card(ctx, k, false)
				if err != nil {
					return got{}, err
				}
				m, err := s.lifeBE.MemoryUsage(ctx, k)
				return got{n, m}, err
			})
			if err != nil {
				return Layout{}, err
			}
			bp := BoardPlacement{Board: b.name(), Nodes: map[string]int{}}
			for i := 0; i < b.n; i++ {
				k := s.layout.ZKey(b.b, i, b.n)
				sl := shard.Slot(k)
				node := nodeOf(sl)
				bp.Shards = append(bp.Shards, ShardPlacement{Shard: i, Key: k, Slot: sl, Node: node, Members: res[i].members, Memory: res[i].memory})
				bp.Nodes[node]++
				if nl := loads[node]; nl != nil {
					nl.Shards++
					nl.Members += res[i].members
					nl.Memory += res[i].memory
				}
			}
			if w := pileUp(bp, b.n, len(loads)); w != "" {
				out.Warnings = append(out.Warnings, w)
			}
			out.Boards = append(out.Boards, bp)
		}
	}
	for _, nl := range loads {
		out.Nodes = append(out.Nodes, *nl)
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].Node < out.Nodes[j].Node })
	return out, nil
}

// pileUp warns when a sharded board puts clearly more of its shards on one
// master than an even spread would (shard.PileUp, the rule the capacity
// planner applies too).
func pileUp(bp BoardPlacement, n, masters int) string {
	node, c, fair, ok := shard.PileUp(bp.Nodes, n, masters)
	if !ok {
		return ""
	}
	return fmt.Sprintf("board %s: %d of its %d shards sit on %s (an even spread is %d); hot reads on it load one master", bp.Board, c, n, node, fair)
}
