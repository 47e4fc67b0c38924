package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rankgate/rankgate/internal/rank"
)

// Bans (issue 13 part 4). A ban lives in Redis (one hash and a version
// counter under the tag {bans}, in both modes); every gateway keeps a copy
// and checks the version at most banPoll after its last check, before it
// plans a batch, so an event of a banned member is refused within banPoll
// (+ one round trip) of the ban on every gateway — the contract allows 1 s.
// Should Redis not answer, a copy younger than banStale still serves; an
// older one fails the batch (503) rather than let a ban lapse.
//
// The ban call removes the member from the boards of the families' current
// periods, waits banSettle (every other gateway has seen the ban by then),
// and removes again: an event that another gateway accepted before it saw the
// ban is gone too when the call answers.
const (
	banPoll   = 200 * time.Millisecond
	banStale  = time.Second
	banSettle = 2*banPoll + 100*time.Millisecond
)

// banCovers reports whether the ban covers family.
func banCovers(b Ban, family string) bool {
	return len(b.Families) == 0 || slices.Contains(b.Families, family)
}

// banCache is a gateway's copy of the bans: an immutable snapshot behind an
// atomic pointer, so that the check before every batch reads it without a
// lock while it is fresh (younger than banPoll). Refreshing takes mu: one
// caller reads Redis, the others wait for its answer, as they would for
// their own.
type banCache struct {
	mu   sync.Mutex // held while the copy is refreshed or forgotten
	snap atomic.Pointer[banSnapshot]
}

// banSnapshot is one copy of the bans; never modified once published.
type banSnapshot struct {
	version int64
	bans    map[string]Ban
	checked time.Time // last answer from Redis (zero: never, or forgotten)
}

// fresh reports whether the copy was checked less than banPoll before now.
func (b *banSnapshot) fresh(now time.Time) bool {
	return b != nil && !b.checked.IsZero() && now.Sub(b.checked) < banPoll
}

// bans returns the bans, refreshed when the copy is older than banPoll.
func (s *Service) bans(ctx context.Context) (map[string]Ban, error) {
	c := &s.banned
	if cur := c.snap.Load(); cur.fresh(time.Now()) {
		return cur.bans, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	cur := c.snap.Load()
	if cur.fresh(now) {
		return cur.bans, nil // refreshed while this caller waited
	}
	if cur == nil {
		cur = &banSnapshot{}
	}
	next := *cur
	k := s.layout.Bans()
	v, err := s.banBE.BanVersion(ctx, k)
	if err == nil && (v != cur.version || cur.checked.IsZero()) {
		var all map[string]string
		if all, v, err = s.banBE.Bans(ctx, k); err == nil {
			if v != cur.version {
				// A ban (or its lifting) moved since this gateway last looked
				// (or it never looked): its cached pages may show a member
				// another gateway just removed.
				s.cache.Purge()
			}
			next.bans, next.version = parseBans(all, s), v
		}
	}
	if err != nil {
		if !cur.checked.IsZero() && now.Sub(cur.checked) < banStale {
			return cur.bans, nil
		}
		return nil, writeUnavailable(err, "reading the member bans")
	}
	next.checked = now
	c.snap.Store(&next)
	return next.bans, nil
}

func parseBans(all map[string]string, s *Service) map[string]Ban {
	out := make(map[string]Ban, len(all))
	for m, js := range all {
		var b Ban
		if err := json.Unmarshal([]byte(js), &b); err != nil {
			s.log.Error("unreadable ban; treated as a ban of every family", "member", m, "err", err)
			b = Ban{User: m}
		}
		out[m] = b
	}
	return out
}

// banError is the refusal of a banned member's write.
func banError(user, family string) error {
	return rank.Errorf(rank.CodeMemberBanned, "member %s is banned from %s; the event is kept for review", user, family)
}

// checkBan refuses a write of a banned member (projections, corrections).
func (s *Service) checkBan(ctx context.Context, user, family string) error {
	bans, err := s.bans(ctx)
	if err != nil {
		return err
	}
	if b, ok := bans[user]; ok && banCovers(b, family) {
		return rank.Errorf(rank.CodeMemberBanned, "member %s is banned from %s", user, family)
	}
	return nil
}

// refuseBanned marks the plans of banned members: refused with 403
// member_banned and kept for review (reason "banned") like late events.
func (s *Service) refuseBanned(ctx context.Context, plans []plan) error {
	bans, err := s.bans(ctx)
	if err != nil {
		return err
	}
	if len(bans) == 0 {
		return nil
	}
	for i := range plans {
		p := &plans[i]
		if p.err != nil || p.fam == nil {
			continue
		}
		if b, ok := bans[p.ev.User]; ok && banCovers(b, p.fam.cfg.Name) {
			p.late, p.err = "banned", banError(p.ev.User, p.fam.cfg.Name)
		}
	}
	return nil
}

// PutBan bans a member from families (none: every family), removes it from
// every board of their current periods and answers where it was removed.
// Banning again replaces the ban (and removes again).
func (s *Service) PutBan(ctx context.Context, user string, r BanRequest) (BanResult, error) {
	if !rank.ValidMember(user) {
		return BanResult{}, rank.Invalid("member", "member must match [A-Za-z0-9_.@-]{1,64}")
	}
	if err := checkModerator(r.Operator, r.Reason); err != nil {
		return BanResult{}, err
	}
	fams := []string{}
	for _, name := range r.Families {
		if _, err := s.family(name); err != nil {
			var re *rank.Error
			if errors.As(err, &re) {
				re.Field = "families"
			}
			return BanResult{}, err
		}
		if !slices.Contains(fams, name) {
			fams = append(fams, name)
		}
	}
	sort.Strings(fams)
	ban := Ban{User: user, Families: fams, Operator: r.Operator, Reason: r.Reason, At: s.now().UTC()}
	js, _ := json.Marshal(ban)
	if _, err := s.banBE.PutBan(ctx, s.layout.Bans(), user, js); err != nil {
		return BanResult{}, writeUnavailable(err, "storing the ban of %s", user)
	}
	s.forgetBans()
	s.log.Info("member banned", "member", user, "families", fams, "operator", r.Operator, "reason", r.Reason)
	removed, err := s.sweepBanned(ctx, ban)
	if err != nil {
		return BanResult{}, err
	}
	select {
	case <-ctx.Done():
		return BanResult{}, rank.Unavailable(ctx.Err(), "the ban is stored; removing %s again after %s did not finish; retry", user, banSettle)
	case <-time.After(banSettle):
	}
	again, err := s.sweepBanned(ctx, ban)
	if err != nil {
		return BanResult{}, err
	}
	// Answers computed while the first removal landed may have been cached
	// after it dropped the cache: drop them once more.
	s.dropBanned(ctx, append(removed, again...))
	return BanResult{Ban: ban, Removed: append(removed, again...)}, nil
}

// forgetBans makes the next check read the bans from Redis.
func (s *Service) forgetBans() {
	c := &s.banned
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.snap.Load(); cur != nil {
		next := *cur
		next.checked = time.Time{}
		c.snap.Store(&next)
	}
}

// sweepBanned removes a banned member from every board of the current
// period of each family the ban covers.
func (s *Service) sweepBanned(ctx context.Context, ban Ban) ([]BoardPoints, error) {
	names := make([]string, 0, len(s.families))
	for name := range s.families {
		if banCovers(ban, name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := []BoardPoints{}
	for _, name := range names {
		f := s.families[name]
		p := f.spec.At(s.now())
		if err := s.checkOpenFor(ctx, f, p); rank.CodeOf(err) == rank.CodePeriodClosed {
			continue // a closed period keeps its standings
		} else if err != nil {
			return nil, err
		}
		got, err := s.removeMember(ctx, f, p, ban.User, nil, ban.Operator, "ban: "+ban.Reason)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// DeleteBan lifts a member's ban (points are not restored); 404 not_found
// when the member is not banned.
func (s *Service) DeleteBan(ctx context.Context, user string) (Ban, error) {
	if !rank.ValidMember(user) {
		return Ban{}, rank.Invalid("member", "member must match [A-Za-z0-9_.@-]{1,64}")
	}
	js, ok, err := s.banBE.DeleteBan(ctx, s.layout.Bans(), user)
	if err != nil {
		return Ban{}, writeUnavailable(err, "lifting the ban of %s", user)
	}
	if !ok {
		return Ban{}, rank.Errorf(rank.CodeNotFound, "member %s is not banned", user)
	}
	s.forgetBans()
	ban := parseBans(map[string]string{user: string(js)}, s)[user]
	ban.User = user
	s.log.Info("ban lifted", "member", user)
	return ban, nil
}

// ListBans answers every ban, by member, read from Redis.
func (s *Service) ListBans(ctx context.Context) (BanList, error) {
	all, _, err := s.banBE.Bans(ctx, s.layout.Bans())
	if err != nil {
		return BanList{}, rank.Unavailable(err, "reading the bans")
	}
	out := BanList{Bans: make([]Ban, 0, len(all))}
	for _, b := range parseBans(all, s) {
		if b.Families == nil {
			b.Families = []string{}
		}
		out.Bans = append(out.Bans, b)
	}
	sort.Slice(out.Bans, func(i, j int) bool { return out.Bans[i].User < out.Bans[j].User })
	return out, nil
}

// dropBanned drops the cached answers of the boards a ban removed the member
// from (BoardPoints.Board: "family/period/dimension").
func (s *Service) dropBanned(ctx context.Context, removed []BoardPoints) {
	type fp struct{ family, period string }
	dims := map[fp][]string{}
	var order []fp
	for _, bp := range removed {
		parts := strings.SplitN(bp.Board, "/", 3)
		if len(parts) != 3 {
			continue
		}
		k := fp{parts[0], parts[1]}
		if _, seen := dims[k]; !seen {
			order = append(order, k)
		}
		if !slices.Contains(dims[k], parts[2]) {
			dims[k] = append(dims[k], parts[2])
		}
	}
	for _, k := range order {
		if f, ok := s.families[k.family]; ok {
			s.dropCached(ctx, f, k.period, dims[k])
		}
	}
}
