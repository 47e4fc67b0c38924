package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/rankgate/rankgate/internal/rank"
)

// ReadKind selects what one ShardRead asks.
type ReadKind uint8

// Read kinds.
const (
	ReadSeek      ReadKind = iota + 1 // Seek: ZREVRANGE from the head, else seek.lua
	ReadPositions                     // Probes: position.lua
	ReadScores                        // Members: ZMSCORE (with Cols: members.lua)
	ReadCount                         // Lo, Hi: ZCOUNT
	ReadCard                          // ZCARD
	ReadPlace                         // Probes natively: ZCARD, then per probe ZCOUNT and its points group
	ReadHash                          // Members: HMGET Key (metadata)
	ReadWindow                        // around Probes[0] natively: ZCOUNT, its points group, the Seek.Limit nearest above and below
)

// DefaultBand is how many members of a probe's points group a native
// position probe (ReadPlace) reads at most; a larger group is left to
// position.lua (ShardReply.Open).
const DefaultBand = 32

// ShardRead is one read of one shard key inside a batch.
type ShardRead struct {
	Kind    ReadKind
	Key     string
	Seek    SeekArgs
	Probes  []Probe
	Members []string
	Lo, Hi  int64
	// Band (ReadPlace): the most members of a probe's points group to read;
	// 0 is DefaultBand.
	Band int
	// Cols (ReadScores on a family with sort columns): the shard's user →
	// prefix hash; Members are users and the reply names their stored members.
	Cols string
}

// ShardReply is the answer to one ShardRead; Err is that read's own error
// (a failed node fails only the reads it serves).
type ShardReply struct {
	Seek      SeekResult
	Positions Positions
	Scores    []int64
	Found     []bool
	Stored    []string // ReadScores with Cols: each user's stored member
	Values    []string // ReadHash: each field's value ("" when absent)
	N         int64    // ReadCount, ReadCard
	// Open (ReadPlace, ReadWindow): some probe's points group holds Band
	// members or more on this shard, so Positions (Seek) is not filled: ask
	// position.lua (seek.lua) instead.
	Open bool
	Err  error
}

// Commands returns how many Redis commands a read sends: one (a ZREVRANGE,
// an EVALSHA, a ZMSCORE, a ZCOUNT or a ZCARD), for a native position probe a
// ZCARD and two per probe, for a native window two, and two more when it
// reads entries (Seek.Limit > 0).
func (r ShardRead) Commands() int {
	switch {
	case r.Kind == ReadPlace:
		return 1 + 2*len(r.Probes)
	case r.Kind == ReadWindow && r.Seek.Limit > 0:
		return 4
	case r.Kind == ReadWindow:
		return 2
	}
	return 1
}

func (r ShardRead) band() int64 {
	if r.Band > 0 {
		return int64(r.Band)
	}
	return DefaultBand
}

// Native reports whether a seek is answered by a plain ZREVRANGE: a read from
// the head of a shard with no count and no floor (every first round of a
// Top-N and of an offset page). Every other seek needs seek.lua.
func (a SeekArgs) Native() bool {
	return a.Mode == SeekTop && a.MoreMin == nil && a.StopMin == nil && a.Guard == ""
}

// NodeOf names the master that serves key, for grouping a fan-out into one
// pipeline per node; "" on a standalone node (everything is one node) or
// when the slot map is not known yet (go-redis still routes every command).
func (s *Store) NodeOf(ctx context.Context, key string) string {
	cc, ok := s.rw.(*redis.ClusterClient)
	if !ok {
		return ""
	}
	n, err := cc.MasterForKey(ctx, key)
	if err != nil {
		return ""
	}
	return n.Options().Addr
}

// ReadShards sends every read in one pipeline — one round trip per node —
// and writes each answer into out[i] (len(out) ≥ len(reads)). Seeks from
// the head of a shard are a native ZREVRANGE; the other seeks and the
// position probes run their scripts with EVALSHA (a NOSCRIPT inside the
// pipeline is re-run alone, which falls back to EVAL).
//
// A read of the masters whose keys one master serves (readplan.Fanout's
// per-node groups) goes straight to that master's own client: no slot
// mapping per command and no goroutine per node inside go-redis's cluster
// pipeline. When any of its commands fails (a MOVED or ASK while slots move,
// a refused connection, …) the whole read is sent again through the cluster
// pipeline, which follows redirects and retries as before; so does every
// read of several nodes or of replicas.
func (s *Store) ReadShards(ctx context.Context, reads []ShardRead, replica bool, out []ShardReply) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	c, ro := s.reader(replica)
	if node := s.masterOf(ctx, c, ro, reads); node != nil {
		var rc rueidis.Client
		if s.direct != nil {
			rc, _, _ = s.direct.get(node)
		}
		if rc != nil && s.readRueidis(ctx, node, rc, reads, out) {
			return
		}
		if one, ok := c.(*redis.Client); ok && one == node && rc == nil {
			s.readPipeline(ctx, c, reads, ro, out, false) // standalone: there is no other route
			return
		}
		if rc == nil && s.readPipeline(ctx, node, reads, ro, out, true) {
			return
		}
	}
	s.readPipeline(ctx, c, reads, ro, out, false)
}

// masterOf is the client of the master that serves every read's key — on a
// standalone node that node — or nil (replica reads, keys of several
// masters, slot map unknown).
func (s *Store) masterOf(ctx context.Context, c redis.UniversalClient, ro bool, reads []ShardRead) *redis.Client {
	if one, ok := c.(*redis.Client); ok && !ro && len(reads) > 0 {
		return one // a standalone node serves every key
	}
	cc, ok := c.(*redis.ClusterClient)
	if !ok || ro || len(reads) == 0 {
		return nil
	}
	node, err := cc.MasterForKey(ctx, reads[0].Key)
	if err != nil {
		return nil
	}
	addr := node.Options().Addr
	for i := 1; i < len(reads); i++ {
		if reads[i].Key == reads[i-1].Key {
			continue
		}
		n, err := cc.MasterForKey(ctx, reads[i].Key)
		if err != nil || n.Options().Addr != addr {
			return nil
		}
	}
	return node
}

// readPipeline runs reads as one pipeline on c and parses the replies into
// out. With direct (c is one master's own client) it gives up at the first
// failed command that another route could answer — anything but NOSCRIPT
// (re-run below) and an expired snapshot (an answer) — while ctx is live,
// and reports false: the caller sends the read again through the cluster.
func (s *Store) readPipeline(ctx context.Context, c redis.UniversalClient, reads []ShardRead, ro bool, out []ShardReply, direct bool) bool {
	cmds := make([]redis.Cmder, len(reads))
	var multi [][]redis.Cmder // ReadPlace, ReadWindow: their commands, the first in cmds
	pipe := c.Pipeline()
	for i := range reads {
		if k := reads[i].Kind; k == ReadPlace || k == ReadWindow {
			if multi == nil {
				multi = make([][]redis.Cmder, len(reads))
			}
			if k == ReadPlace {
				multi[i] = queuePlace(ctx, pipe, &reads[i])
			} else {
				multi[i] = queueWindow(ctx, pipe, &reads[i])
			}
			cmds[i] = multi[i][0]
			continue
		}
		cmds[i] = s.queueRead(ctx, pipe, &reads[i], ro)
	}
	if direct {
		s.m.directGoRedis.Inc()
	}
	all, _ := pipe.Exec(ctx) // per-command errors are read below
	if direct && ctx.Err() == nil {
		for _, cmd := range all {
			if !answered(cmd.Err()) {
				s.m.directRetries.Inc()
				return false
			}
		}
	}
	for i := range reads {
		r := &reads[i]
		switch r.Kind {
		case ReadPlace:
			out[i] = s.parsePlace(r, goRedisReplies(multi[i]))
			continue
		case ReadWindow:
			out[i] = s.parseWindow(r, goRedisReplies(multi[i]))
			continue
		}
		cmd := cmds[i]
		if sc, ok := cmd.(*redis.Cmd); ok && isNoScript(sc.Err()) {
			s.m.noscript.Inc()
			cmd = s.runScriptAlone(ctx, c, r, ro)
		}
		out[i] = s.parseRead(r, cmd)
	}
	return true
}

// answered: a command's error (or none) is the answer, not a failure another
// route could answer — NOSCRIPT is re-run alone, an expired snapshot is an
// answer; anything else sends a direct read again through the cluster.
func answered(err error) bool {
	return err == nil || isNoScript(err) || redis.HasErrorPrefix(err, "SNAPSHOT_EXPIRED")
}

// replies gives one read's command replies, whichever client brought them.
type replies interface {
	len() int
	err(i int) error
	n(i int) (int64, error)           // an integer reply
	items(i int) ([]rank.Item, error) // a ZRANGE … WITHSCORES reply, in its order
}

// goRedisReplies: the replies of go-redis commands.
type goRedisReplies []redis.Cmder

func (c goRedisReplies) len() int               { return len(c) }
func (c goRedisReplies) err(i int) error        { return c[i].Err() }
func (c goRedisReplies) n(i int) (int64, error) { return c[i].(*redis.IntCmd).Result() }
func (c goRedisReplies) items(i int) ([]rank.Item, error) {
	return zItems(c[i].(*redis.ZSliceCmd).Val())
}

// queuePlace queues a native position probe: ZCARD, then per probe
// ZCOUNT key MoreMin +inf (strictly more points) and the probe's points group
// [SameMin, MoreMin−1] with scores, at most Band of it. Every command is a
// read, so the same commands serve a replica.
func queuePlace(ctx context.Context, p redis.Pipeliner, r *ShardRead) []redis.Cmder {
	cmds := make([]redis.Cmder, 0, 1+2*len(r.Probes))
	cmds = append(cmds, p.ZCard(ctx, r.Key))
	for _, pr := range r.Probes {
		cmds = append(cmds,
			p.ZCount(ctx, r.Key, fmtScore(pr.MoreMin), "+inf"),
			p.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: r.Key, Start: fmtScore(pr.SameMin), Stop: fmtScore(pr.MoreMin - 1),
				ByScore: true, Count: r.band()}))
	}
	return cmds
}

// parsePlace derives what position.lua answers from a native probe's
// replies. For a probe (s, m) whose points group is G (scores in [SameMin,
// MoreMin)) and whose strictly-more count is M: ahead = M + members of G with
// a higher score + members of G with score s and greater bytes (ZREVRANGE
// order), at least as many points = M + |G|. When G filled the band it may
// hold more than was read: the reply is Open and Positions stays empty.
func (s *Store) parsePlace(r *ShardRead, rs replies) ShardReply {
	var out ShardReply
	for i := range rs.len() {
		if err := rs.err(i); err != nil {
			out.Err = s.fail("position", err)
			return out
		}
	}
	for _, pr := range r.Probes {
		if pr.SameMin > pr.Score || pr.Score >= pr.MoreMin {
			out.Err = fmt.Errorf("position: native probe needs SameMin ≤ Score < MoreMin, got %d ≤ %d < %d", pr.SameMin, pr.Score, pr.MoreMin)
			return out
		}
	}
	n := len(r.Probes)
	cols := make([]int64, 3*n)
	card, err := rs.n(0)
	if err != nil {
		out.Err = fmt.Errorf("position: %w", err)
		return out
	}
	p := Positions{Card: card, Ahead: cols[:n:n], More: cols[n : 2*n : 2*n], AtLeast: cols[2*n:]}
	for j, pr := range r.Probes {
		more, err := rs.n(1 + 2*j)
		if err != nil {
			out.Err = fmt.Errorf("position: %w", err)
			return out
		}
		group, err := rs.items(2 + 2*j)
		if err != nil {
			out.Err = fmt.Errorf("position: %w", err)
			return out
		}
		if int64(len(group)) >= r.band() {
			return ShardReply{Open: true}
		}
		ahead, better, least := more, more, more+int64(len(group))
		if pr.MoreMember != "" {
			least = more // on (points, columns): counted below
		}
		for _, z := range group {
			sc, m := z.Score, z.Member
			if sc > pr.Score || (sc == pr.Score && m > pr.Member) {
				ahead++
			}
			if pr.MoreMember != "" { // a family with sort columns (position.lua's more/same members)
				if sc > pr.Score || (sc == pr.Score && m > pr.MoreMember) {
					better++
				}
				if sc > pr.Score || (sc == pr.Score && m > pr.SameMember) {
					least++
				}
			}
		}
		p.Ahead[j], p.More[j], p.AtLeast[j] = ahead, better, least
	}
	out.Positions = p
	return out
}

func (s *Store) queueRead(ctx context.Context, p redis.Pipeliner, r *ShardRead, ro bool) redis.Cmder {
	switch r.Kind {
	case ReadSeek:
		if r.Seek.Native() {
			return p.ZRevRangeWithScores(ctx, r.Key, 0, int64(r.Seek.Limit)-1)
		}
		keys, args := seekKeysArgs(r.Key, r.Seek)
		if ro {
			return seekScript.EvalShaRO(ctx, p, keys, args...)
		}
		return seekScript.EvalSha(ctx, p, keys, args...)
	case ReadPositions:
		args := positionArgs(r.Probes)
		if ro {
			return positionScript.EvalShaRO(ctx, p, []string{r.Key}, args...)
		}
		return positionScript.EvalSha(ctx, p, []string{r.Key}, args...)
	case ReadScores:
		if r.Cols != "" {
			if ro {
				return membersScript.EvalShaRO(ctx, p, []string{r.Key, r.Cols}, membersArgs(r.Members)...)
			}
			return membersScript.EvalSha(ctx, p, []string{r.Key, r.Cols}, membersArgs(r.Members)...)
		}
		// A generic command: ZMSCORE's nil for an absent member must survive.
		args := make([]any, 0, 2+len(r.Members))
		args = append(args, "ZMSCORE", r.Key)
		for _, m := range r.Members {
			args = append(args, m)
		}
		return p.Do(ctx, args...)
	case ReadCount:
		return p.ZCount(ctx, r.Key, fmtScore(r.Lo), fmtScore(r.Hi))
	case ReadCard:
		return p.ZCard(ctx, r.Key)
	case ReadHash:
		return p.HMGet(ctx, r.Key, r.Members...)
	}
	cmd := redis.NewCmd(ctx)
	cmd.SetErr(fmt.Errorf("store: unknown read kind %d", r.Kind))
	return cmd
}

// runScriptAlone re-runs a script read that met NOSCRIPT: Run loads it.
func (s *Store) runScriptAlone(ctx context.Context, c redis.UniversalClient, r *ShardRead, ro bool) redis.Cmder {
	sc, keys, args := seekScript, []string(nil), []any(nil)
	switch r.Kind {
	case ReadPositions:
		sc, keys, args = positionScript, []string{r.Key}, positionArgs(r.Probes)
	case ReadScores:
		sc, keys, args = membersScript, []string{r.Key, r.Cols}, membersArgs(r.Members)
	default:
		keys, args = seekKeysArgs(r.Key, r.Seek)
	}
	if ro {
		return sc.RunRO(ctx, c, keys, args...)
	}
	return sc.Run(ctx, c, keys, args...)
}

func (s *Store) parseRead(r *ShardRead, cmd redis.Cmder) ShardReply {
	var out ShardReply
	err := cmd.Err()
	switch r.Kind {
	case ReadSeek:
		if redis.HasErrorPrefix(err, "SNAPSHOT_EXPIRED") {
			out.Err = ErrSnapshotExpired
			return out
		}
		if err != nil {
			if !r.Seek.Native() && !errors.Is(err, context.Canceled) {
				s.m.scriptErrors.WithLabelValues("seek").Inc()
			}
			out.Err = s.fail("seek", err)
			return out
		}
		switch c := cmd.(type) {
		case *redis.ZSliceCmd:
			out.Seek, out.Err = parseZSlice(c.Val())
		case *redis.Cmd:
			if r.Seek.Mode == SeekAround {
				out.Seek, out.Err = parseAround(c.Val())
			} else {
				out.Seek, out.Err = parseSeek(c.Val())
			}
		}
	case ReadPositions:
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				s.m.scriptErrors.WithLabelValues("position").Inc()
			}
			out.Err = s.fail("position", err)
			return out
		}
		out.Positions, out.Err = parsePositions(cmd.(*redis.Cmd).Val(), len(r.Probes))
	case ReadScores:
		if err != nil {
			out.Err = s.fail("zmscore", err)
			return out
		}
		if r.Cols != "" {
			out.Stored, out.Scores, out.Found, out.Err = parseMembers(cmd.(*redis.Cmd).Val(), len(r.Members))
			return out
		}
		out.Scores, out.Found, out.Err = parseZMScore(cmd.(*redis.Cmd).Val(), len(r.Members))
	case ReadHash:
		if err != nil {
			out.Err = s.fail("hmget", err)
			return out
		}
		vals := cmd.(*redis.SliceCmd).Val()
		out.Values = make([]string, len(vals))
		for i, v := range vals {
			out.Values[i], _ = v.(string)
		}
	case ReadCount:
		out.N, err = cmd.(*redis.IntCmd).Result()
		out.Err = s.fail("zcount", err)
	case ReadCard:
		out.N, err = cmd.(*redis.IntCmd).Result()
		out.Err = s.fail("zcard", err)
	default:
		out.Err = err
	}
	return out
}

func seekKeysArgs(key string, a SeekArgs) ([]string, []any) {
	moreMin, stopMin := "", ""
	if a.MoreMin != nil {
		moreMin = fmtScore(*a.MoreMin)
	}
	if a.StopMin != nil {
		stopMin = fmtScore(*a.StopMin)
	}
	keys := []string{key}
	if a.Guard != "" {
		keys = append(keys, a.Guard)
	}
	if a.MoreMember != "" {
		return keys, []any{a.Mode, fmtScore(a.Score), a.Member, a.Limit, moreMin, stopMin, a.MoreMember}
	}
	return keys, []any{a.Mode, fmtScore(a.Score), a.Member, a.Limit, moreMin, stopMin}
}

func positionArgs(probes []Probe) []any {
	args := make([]any, 0, 1+6*len(probes))
	args = append(args, len(probes))
	for _, p := range probes {
		args = append(args, fmtScore(p.Score), p.Member, fmtScore(p.MoreMin), fmtScore(p.SameMin), p.MoreMember, p.SameMember)
	}
	return args
}

// queueWindow queues a native around-me read of one shard (ReadWindow): the
// count of strictly more points (ZCOUNT MoreMin +inf), the member's points
// group [SameMin, MoreMin−1] (at most Band of it), and — when Seek.Limit > 0 —
// the Limit entries just above its score and the Limit just below it.
func queueWindow(ctx context.Context, p redis.Pipeliner, r *ShardRead) []redis.Cmder {
	pr := r.Probes[0]
	cmds := make([]redis.Cmder, 0, 4)
	cmds = append(cmds,
		p.ZCount(ctx, r.Key, fmtScore(pr.MoreMin), "+inf"),
		p.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: r.Key, Start: fmtScore(pr.SameMin), Stop: fmtScore(pr.MoreMin - 1),
			ByScore: true, Count: r.band()}))
	if r.Seek.Limit > 0 {
		lim, s := int64(r.Seek.Limit), "("+fmtScore(pr.Score)
		cmds = append(cmds,
			p.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: r.Key, Start: s, Stop: "+inf", ByScore: true, Count: lim}),
			p.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: r.Key, Start: s, Stop: "-inf", ByScore: true, Rev: true, Count: lim}))
	}
	return cmds
}

// parseWindow builds what seek.lua's around mode answers from a native
// window read (its more: members with score ≥ MoreMin, and with MoreMember
// set — sort columns — those of the points group above (Score,
// MoreMember) too): the entries just before (s, m) in board order are the
// nearest ones with a higher score, then the members of its score with
// greater bytes; the entries just after are the members of its score with
// smaller bytes, then the nearest with a lower score. Open (nothing else
// filled) when the points group filled the band: the score's own members
// may not all have been read.
func (s *Store) parseWindow(r *ShardRead, rs replies) ShardReply {
	var out ShardReply
	for i := range rs.len() {
		if err := rs.err(i); err != nil {
			out.Err = s.fail("seek", err)
			return out
		}
	}
	pr, lim := r.Probes[0], r.Seek.Limit
	if pr.SameMin > pr.Score || pr.Score >= pr.MoreMin {
		out.Err = fmt.Errorf("seek around: native window needs SameMin ≤ Score < MoreMin, got %d ≤ %d < %d", pr.SameMin, pr.Score, pr.MoreMin)
		return out
	}
	more, err := rs.n(0)
	if err != nil {
		out.Err = fmt.Errorf("seek around: %w", err)
		return out
	}
	group, err := rs.items(1)
	if err != nil {
		out.Err = fmt.Errorf("seek around: %w", err)
		return out
	}
	if int64(len(group)) >= r.band() {
		return ShardReply{Open: true}
	}
	ahead, better := more, more
	var tieAbove, tieBelow []rank.Item // pr.Score's members after / before pr.Member in bytes, ascending
	for _, z := range group {
		sc, m := z.Score, z.Member
		if pr.MoreMember != "" && (sc > pr.Score || sc == pr.Score && m > pr.MoreMember) {
			better++ // a family with sort columns: strictly better on (points, columns)
		}
		switch {
		case sc > pr.Score:
			ahead++
		case sc == pr.Score && m > pr.Member:
			ahead++
			tieAbove = append(tieAbove, rank.Item{Score: sc, Member: m})
		case sc == pr.Score && m < pr.Member:
			tieBelow = append(tieBelow, rank.Item{Score: sc, Member: m})
		}
	}
	var up, down []rank.Item // nearest first
	if lim > 0 {
		if up, err = rs.items(2); err == nil {
			down, err = rs.items(3)
		}
		if err != nil {
			out.Err = fmt.Errorf("seek around: %w", err)
			return out
		}
	}
	// Board order before the member: up farthest first, then tieAbove
	// (bytes descending); keep the last lim. After it: tieBelow (bytes
	// descending), then down; keep the first lim.
	before := make([]rank.Item, 0, len(up)+len(tieAbove))
	for i := len(up) - 1; i >= 0; i-- {
		before = append(before, up[i])
	}
	for i := len(tieAbove) - 1; i >= 0; i-- {
		before = append(before, tieAbove[i])
	}
	before = before[max(0, len(before)-lim):]
	items := make([]rank.Item, 0, len(before)+lim)
	items = append(items, before...)
	for i := len(tieBelow) - 1; i >= 0 && len(items) < len(before)+lim; i-- {
		items = append(items, tieBelow[i])
	}
	for _, it := range down {
		if len(items) == len(before)+lim {
			break
		}
		items = append(items, it)
	}
	out.Seek = SeekResult{Start: ahead - int64(len(before)), More: better, Items: items, Before: len(before)}
	return out
}

// zItems converts a ZRANGE … WITHSCORES reply, in its order.
func zItems(zs []redis.Z) ([]rank.Item, error) {
	out := make([]rank.Item, len(zs))
	for i, z := range zs {
		sc, ok := rank.FromFloat(z.Score)
		if !ok {
			return nil, fmt.Errorf("score %v is not an integer within ±2^53", z.Score)
		}
		m, _ := z.Member.(string)
		out[i] = rank.Item{Score: sc, Member: m}
	}
	return out, nil
}

// parseZSlice turns a ZREVRANGE … WITHSCORES reply into a seek result from
// the head of the shard (no count asked: More is -1, as seek.lua answers).
func parseZSlice(zs []redis.Z) (SeekResult, error) {
	items, err := zItems(zs)
	if err != nil {
		return SeekResult{}, fmt.Errorf("seek: %w", err)
	}
	return SeekResult{More: -1, Items: items}, nil
}

func parseSeek(v any) (SeekResult, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) < 2 || len(arr)%2 != 0 {
		return SeekResult{}, fmt.Errorf("seek: unexpected reply %v", v)
	}
	r := SeekResult{Start: toInt(arr[0]), More: toInt(arr[1]), Items: make([]rank.Item, 0, (len(arr)-2)/2)}
	for i := 2; i < len(arr); i += 2 {
		m, _ := arr[i].(string)
		sc, _ := arr[i+1].(string)
		score, err := ParseScore(sc)
		if err != nil {
			return SeekResult{}, fmt.Errorf("seek: %w", err)
		}
		r.Items = append(r.Items, rank.Item{Score: score, Member: m})
	}
	return r, nil
}

// parseAround reads seek.lua's around reply: {start, more, before, pairs…}.
func parseAround(v any) (SeekResult, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) < 3 || len(arr)%2 != 1 {
		return SeekResult{}, fmt.Errorf("seek around: unexpected reply %v", v)
	}
	r, err := parseSeek(append([]any{arr[0], arr[1]}, arr[3:]...))
	if err != nil {
		return SeekResult{}, err
	}
	r.Before = int(toInt(arr[2]))
	if r.Before < 0 || r.Before > len(r.Items) {
		return SeekResult{}, fmt.Errorf("seek around: %d before of %d entries", r.Before, len(r.Items))
	}
	return r, nil
}

func parsePositions(v any, n int) (Positions, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) != 1+3*n {
		return Positions{}, fmt.Errorf("position: unexpected reply %v", v)
	}
	// One backing array for the three columns.
	cols := make([]int64, 3*n)
	p := Positions{Card: toInt(arr[0]), Ahead: cols[:n:n], More: cols[n : 2*n : 2*n], AtLeast: cols[2*n:]}
	for i := 0; i < n; i++ {
		p.Ahead[i] = toInt(arr[1+3*i])
		p.More[i] = toInt(arr[2+3*i])
		p.AtLeast[i] = toInt(arr[3+3*i])
	}
	return p, nil
}

// parseZMScore reads a ZMSCORE reply: a score per member, nil when absent.
func parseZMScore(v any, n int) (scores []int64, found []bool, err error) {
	vals, isArr := v.([]any)
	if !isArr || len(vals) != n {
		return nil, nil, fmt.Errorf("zmscore: unexpected reply %v", v)
	}
	scores, found = make([]int64, n), make([]bool, n)
	for i, x := range vals {
		var f float64
		switch y := x.(type) {
		case nil:
			continue
		case float64: // RESP3 double
			f = y
		case string: // RESP2 bulk string
			if f, err = strconv.ParseFloat(y, 64); err != nil {
				return nil, nil, fmt.Errorf("zmscore: bad score %q", y)
			}
		default:
			return nil, nil, fmt.Errorf("zmscore: unexpected element %T", x)
		}
		sc, good := rank.FromFloat(f)
		if !good {
			return nil, nil, fmt.Errorf("zmscore: score %v is not an integer within ±2^53", f)
		}
		scores[i], found[i] = sc, true
	}
	return scores, found, nil
}

func membersArgs(users []string) []any {
	args := make([]any, len(users))
	for i, u := range users {
		args[i] = u
	}
	return args
}

// parseMembers reads members.lua's {stored, score, ...} reply.
func parseMembers(v any, n int) (stored []string, scores []int64, found []bool, err error) {
	arr, ok := v.([]any)
	if !ok || len(arr) != 2*n {
		return nil, nil, nil, fmt.Errorf("members: unexpected reply %v", v)
	}
	stored, scores, found = make([]string, n), make([]int64, n), make([]bool, n)
	for i := 0; i < n; i++ {
		m, _ := arr[2*i].(string)
		sc, _ := arr[2*i+1].(string)
		if m == "" {
			continue
		}
		if scores[i], err = ParseScore(sc); err != nil {
			return nil, nil, nil, err
		}
		stored[i], found[i] = m, true
	}
	return stored, scores, found, nil
}
