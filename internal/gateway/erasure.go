package gateway

import (
	"context"
	"errors"
	"github.com/rankgate/rankgate/api/wire"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// EraseBackend carries a member's data rights: the member board index
// (shard.Layout.MemberBoards, kept by every write's pipeline), the erasure
// script, and the keys of the member's own slot.
type EraseBackend interface {
	EraseMember(ctx context.Context, es []store.Erase) []store.EraseResult
	TakeIndex(ctx context.Context, index string) ([]string, error)
	MemberBoards(ctx context.Context, key string) ([]string, error)
	IndexMemberBoards(ctx context.Context, idx map[string][]string) error
	HashesOf(ctx context.Context, keys []string) ([]map[string]string, error)
	ForgetField(ctx context.Context, hashes []string, field string) error
	ForgetBoards(ctx context.Context, key string, zs []string) error
	DeleteMemberKeys(ctx context.Context, keys []string) (bool, error)
}

var _ EraseBackend = (*store.Store)(nil)

// Erasure is the body of DELETE /v1/members/{member}: who erases and why.
type Erasure = wire.Removal

// ErasureResult answers DELETE /v1/members/{member}: what was erased.
type ErasureResult = wire.ErasureResult

// Export answers GET /v1/members/{member}/export.
type Export = wire.Export

// ExportStanding is a member's standing on one board of an export.
type ExportStanding = wire.ExportStanding

// eraseChunk is how many indexed board shards one round of an erasure
// erases (one pipeline per node) before it forgets them in the index.
const eraseChunk = 500

// EraseMember erases a member (DELETE /v1/members/{member}): in ledger mode
// their ledger rows first (one transaction; the boards the ledger lists are
// added to the member's board index before), then, from the member's board
// index, every board shard they were written to — every period and state,
// every dimension, tournament boards and their seats, and the boards of the
// families derived from them — one in-slot script each, in rounds of one
// pipeline per node. The erasure takes the index first (store.TakeIndex:
// its elements move to the erasures' work set); a round's board shards
// leave that set only once they are erased, so an erasure cut short (a
// crash, a failed node) is finished by running it again; a second run
// answers zeros. The profile and the
// member's per-family rate windows go last.
func (s *Service) EraseMember(ctx context.Context, user string, r Erasure) (ErasureResult, error) {
	if !rank.ValidMember(user) {
		return ErasureResult{}, rank.Invalid("member", "member must match [A-Za-z0-9_.@-]{1,64}")
	}
	if err := checkModerator(r.Operator, r.Reason); err != nil {
		return ErasureResult{}, err
	}
	start := s.now()
	out := ErasureResult{Member: user}
	idx := s.layout.MemberBoards(user)
	if s.ledger != nil {
		mbs, err := s.ledger.MemberBoards(ctx, user)
		if err != nil {
			return out, ledgerErr(err)
		}
		// Boards written before the index existed are in the ledger: the
		// index learns them before the ledger forgets them.
		if err := s.eraseBE.IndexMemberBoards(ctx, map[string][]string{idx: s.ledgerShards(ctx, user, mbs)}); err != nil {
			return out, rank.Unavailable(err, "indexing the boards of %s; retry the erasure", user)
		}
		er, err := s.ledger.EraseMember(ctx, user)
		if err != nil {
			return out, ledgerErr(err)
		}
		out.LedgerRows = er.Rows()
	}
	// The index moves to the erasures' work set; writes that run meanwhile
	// add to a fresh index, which this erasure leaves alone (they survive
	// it, indexed).
	zs, err := s.eraseBE.TakeIndex(ctx, idx)
	if err != nil {
		return out, rank.Unavailable(err, "taking the board index of %s; retry the erasure", user)
	}
	work := shard.IndexWork(idx)
	sort.Strings(zs)
	left := map[string]shard.Board{} // board name → board, of the boards the member left
	for len(zs) > 0 {
		n := min(len(zs), s.eraseChunk)
		if err := s.eraseRound(ctx, user, work, zs[:n], left); err != nil {
			out.Boards = len(left)
			s.dropErased(ctx, left)
			return out, err
		}
		zs = zs[n:]
	}
	out.Boards = len(left)
	keys := []string{s.layout.Profile(user)}
	for _, name := range s.cfg.FamilyNames {
		keys = append(keys, s.layout.MemberRate(user, name))
	}
	lk, err := s.eraseLeagues(ctx, user)
	if err != nil {
		s.dropErased(ctx, left)
		return out, rank.Unavailable(err, "erasing the league entries of %s; retry the erasure", user)
	}
	keys = append(keys, lk...)
	if out.Profile, err = s.eraseBE.DeleteMemberKeys(ctx, keys); err != nil {
		s.dropErased(ctx, left)
		return out, rank.Unavailable(err, "deleting the profile of %s; retry the erasure", user)
	}
	s.dropErased(ctx, left)
	s.log.Info("member erased", "boards", out.Boards, "ledger_rows", out.LedgerRows, "profile", out.Profile,
		"operator", r.Operator, "reason", r.Reason, "took", s.now().Sub(start).String())
	return out, nil
}

// eraseRound erases the member from a round of indexed board shards (and
// the derived boards of each), then forgets in the erasures' work set
// (work) those whose every erasure succeeded; left gains the boards the
// member was removed from.
func (s *Service) eraseRound(ctx context.Context, user, work string, zs []string, left map[string]shard.Board) error {
	var es []store.Erase
	var boards []shard.Board
	owner := make([]int, 0, len(zs)) // es index → zs index
	seen := map[string]bool{}
	add := func(z string, b shard.Board, feedLen int64, from int) {
		if seen[z] {
			return
		}
		seen[z] = true
		es = append(es, store.Erase{Z: z, Member: user, FeedLen: feedLen})
		boards = append(boards, b)
		owner = append(owner, from)
	}
	for i, z := range zs {
		ref, ok := s.layout.ParseZKey(z)
		if !ok {
			// Not a board shard key of this layout: nothing to erase.
			continue
		}
		f := s.families[ref.Board.Family]
		if f == nil {
			f, _ = s.lookupTournament(ref.Board.Family)
		}
		var feedLen int64
		if f != nil {
			feedLen = f.feedLen
		}
		add(z, ref.Board, feedLen, i)
		for _, d := range s.derivedOf(ref.Board) {
			b := d.board(ref.Board.Period, ref.Board.DimType, ref.Board.DimValue)
			add(s.layout.ZKey(b, ref.Shard, shard.ShardCount(ref.Width)), b, d.feedLen, i)
		}
	}
	failed := make([]bool, len(zs))
	var firstErr error
	if len(es) > 0 {
		for j, r := range s.eraseBE.EraseMember(ctx, es) {
			switch {
			case r.Err != nil:
				failed[owner[j]] = true
				if firstErr == nil {
					firstErr = r.Err
				}
			case r.Removed:
				left[boards[j].String()] = boards[j]
			}
		}
	}
	done := make([]string, 0, len(zs))
	for i, z := range zs {
		if !failed[i] {
			done = append(done, z)
		}
	}
	if err := s.eraseBE.ForgetBoards(ctx, work, done); err != nil && firstErr == nil {
		firstErr = err
	}
	if firstErr != nil {
		return rank.Unavailable(firstErr, "the erasure of %s stopped part way (what is erased stays erased); retry it to finish", user)
	}
	return nil
}

// derivedOf returns the configured families derived from b's family that
// keep b's dimension type: their board of b's period and dimension sits in
// b's shard's slot (derived families share their inputs' key group).
func (s *Service) derivedOf(b shard.Board) []*family {
	var out []*family
	for _, name := range s.cfg.FamilyNames {
		f := s.families[name]
		if f == nil || !f.cfg.Derived() || f.cfg.DerivedFrom == nil {
			continue
		}
		if _, ok := f.cfg.Dimensions[b.DimType]; !ok && b.DimType != shard.National {
			continue
		}
		if slices.ContainsFunc(f.cfg.DerivedFrom.Inputs, func(in config.DerivedInput) bool { return in.Family == b.Family }) {
			out = append(out, f)
		}
	}
	return out
}

// ledgerShards maps the ledger's boards of a member to the sorted sets of
// the member's shards (families no longer configured are left out: their
// keys cannot be named).
func (s *Service) ledgerShards(ctx context.Context, user string, mbs []ledger.MemberBoard) []string {
	out := make([]string, 0, len(mbs))
	for _, mb := range mbs {
		f, err := s.family(mb.Family)
		if err != nil {
			continue
		}
		t, v, ok := shard.ParseDimension(mb.Board)
		if !ok {
			continue
		}
		sc, err := s.shardCounts(ctx, f, mb.Period)
		n := 0
		if err == nil {
			n = sc[t]
		}
		if n <= 0 {
			if d, ok := f.cfg.Dimensions[t]; ok {
				n = d.Shards
			}
		}
		n = max(n, 1)
		out = append(out, s.layout.ZKey(f.board(mb.Period, t, v), shard.Of(user, n), n))
	}
	return out
}

// dropErased drops cached answers after an erasure (see dropCached).
func (s *Service) dropErased(ctx context.Context, left map[string]shard.Board) {
	if len(left) == 0 {
		return
	}
	byPeriod := map[[2]string][]string{}
	for _, b := range left {
		k := [2]string{b.Family, b.Period}
		byPeriod[k] = append(byPeriod[k], b.Dimension())
	}
	for k, dims := range byPeriod {
		f := s.families[k[0]]
		if f == nil {
			s.cache.Purge()
			continue
		}
		s.dropCached(ctx, f, k[1], dims)
	}
}

// MaxExportEvents bounds the events of one export.
const MaxExportEvents = 10000

// exportWorkers bounds the boards an export reads at once.
const exportWorkers = 8

// ExportMember gathers what rankgate keeps of a member: their profile, their
// standing on every board of their board index (and the derived boards of
// those; in ledger mode also the boards of their ledger totals), read from
// the primaries, and in ledger mode their events. A member of whom nothing
// is kept: 404 not_ranked.
func (s *Service) ExportMember(ctx context.Context, user string) (Export, error) {
	if !rank.ValidMember(user) {
		return Export{}, rank.Invalid("member", "member must match [A-Za-z0-9_.@-]{1,64}")
	}
	out := Export{Member: user, Standings: []ExportStanding{}}
	zs, err := s.eraseBE.MemberBoards(ctx, s.layout.MemberBoards(user))
	if err != nil {
		return Export{}, rank.Unavailable(err, "reading the board index of %s", user)
	}
	if s.ledger != nil {
		mbs, err := s.ledger.MemberBoards(ctx, user)
		if err != nil {
			return Export{}, ledgerErr(err)
		}
		zs = append(zs, s.ledgerShards(ctx, user, mbs)...)
		if out.Events, err = s.ledger.MemberEvents(ctx, user, MaxExportEvents); err != nil {
			return Export{}, ledgerErr(err)
		}
	}
	refs := map[string]BoardRef{}
	for _, z := range zs {
		ref, ok := s.layout.ParseZKey(z)
		if !ok {
			continue
		}
		b := ref.Board
		refs[b.String()] = BoardRef{Family: b.Family, Period: b.Period, Dimension: b.Dimension()}
		for _, d := range s.derivedOf(b) {
			db := d.board(b.Period, b.DimType, b.DimValue)
			refs[db.String()] = BoardRef{Family: db.Family, Period: db.Period, Dimension: db.Dimension()}
		}
	}
	names := make([]string, 0, len(refs))
	for n := range refs {
		names = append(names, n)
	}
	sort.Strings(names)
	got := make([]*ExportStanding, len(names))
	errs := make([]error, len(names))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(exportWorkers, len(names)) {
		wg.Go(func() {
			for i := range next {
				ms, err := s.Member(ctx, refs[names[i]], user, ReadOptions{Consistency: ConsistencyPrimary})
				switch code := rank.CodeOf(err); {
				case err == nil:
					got[i] = &ExportStanding{Board: names[i], Points: ms.Points, Rank: ms.Rank}
				case code == rank.CodeNotRanked || code == rank.CodeUnknownFamily || code == rank.CodeUnknownBoard:
				default:
					errs[i] = err
					cancel()
				}
			}
		})
	}
	for i := range names {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, e := range errs {
			if e != nil {
				return Export{}, e
			}
		}
	}
	for _, st := range got {
		if st != nil {
			out.Standings = append(out.Standings, *st)
		}
	}
	profiles, err := s.readBE.Profiles(ctx, []string{s.layout.Profile(user)}, false)
	if err != nil {
		return Export{}, rank.Unavailable(err, "reading the profile of %s", user)
	}
	out.Profile = profiles[0]
	if len(out.Standings) == 0 && out.Profile == nil && len(out.Events) == 0 {
		return Export{}, rank.Errorf(rank.CodeNotRanked, "nothing is kept of member %s", user)
	}
	return out, nil
}

// eraseLeagues removes the member from the placement and moves hashes of
// every league period their league hashes name (p:<period> → cohort
// "<tier>-<n>"), and answers those league hashes, to be deleted with the
// member's other keys: they go last, so a cut-short erasure finds the
// periods again.
func (s *Service) eraseLeagues(ctx context.Context, user string) ([]string, error) {
	var keys, fams []string
	for _, name := range s.cfg.FamilyNames {
		if fc := s.cfg.Families[name]; fc != nil && fc.Cohorts != nil {
			keys, fams = append(keys, s.layout.LeagueMember(user, name)), append(fams, name)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	hs, err := s.eraseBE.HashesOf(ctx, keys)
	if err != nil {
		return nil, err
	}
	var hashes []string
	for i, h := range hs {
		for field, cohort := range h {
			period, ok := strings.CutPrefix(field, "p:")
			cut := strings.LastIndexByte(cohort, '-')
			if !ok || cut <= 0 {
				continue
			}
			hashes = append(hashes, s.layout.Placement(fams[i], period, cohort[:cut]).Placed, s.layout.Moves(fams[i], period).Moves)
		}
	}
	if err := s.eraseBE.ForgetField(ctx, hashes, user); err != nil {
		return nil, err
	}
	return keys, nil
}
