package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/readplan"
	"github.com/rankgate/rankgate/internal/store"
)

// Snapshot bounds (api/openapi.yaml).
const (
	MaxSnapshotDepth = 10000
	MaxSnapshotTTL   = 600 * time.Second
)

// snapshotID is "<depth>x<created unix ms, hex>x<16 random hex>": the depth
// bounds pages and the creation time is the answers' as_of. Altering it
// changes the keys it names, so a forged id simply finds nothing (410).
type snapshotID struct {
	depth   int
	created time.Time
	raw     string
}

func parseSnapshotID(s string) (snapshotID, error) {
	bad := rank.Invalid("snapshot", "snapshot id is malformed")
	parts := strings.Split(s, "x")
	if len(parts) != 3 || len(parts[2]) != 16 || len(s) > 48 {
		return snapshotID{}, bad
	}
	depth, err := strconv.Atoi(parts[0])
	if err != nil || depth < 1 || depth > MaxSnapshotDepth {
		return snapshotID{}, bad
	}
	ms, err := strconv.ParseInt(parts[1], 16, 64)
	if err != nil || ms < 0 {
		return snapshotID{}, bad
	}
	if _, err := hex.DecodeString(parts[2]); err != nil || strings.ToLower(parts[2]) != parts[2] {
		return snapshotID{}, bad
	}
	return snapshotID{depth: depth, created: time.UnixMilli(ms).UTC(), raw: s}, nil
}

// CreateSnapshot freezes the top depth entries of every shard of a board into
// short-lived copies (ZRANGESTORE in each shard's slot). Pages read from it
// with offset semantics and stay consistent with each other.
func (s *Service) CreateSnapshot(ctx context.Context, ref BoardRef, depth int, ttl time.Duration) (SnapshotInfo, error) {
	if depth < 1 || depth > MaxSnapshotDepth {
		return SnapshotInfo{}, rank.Invalid("depth", "depth must be within 1..%d", MaxSnapshotDepth)
	}
	if ttl < time.Second || ttl > MaxSnapshotTTL {
		return SnapshotInfo{}, rank.Invalid("ttl_seconds", "ttl_seconds must be within 1..%d", int(MaxSnapshotTTL/time.Second))
	}
	b, err := s.resolve(ctx, ref)
	if err != nil {
		return SnapshotInfo{}, err
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return SnapshotInfo{}, err
	}
	now := s.now()
	id := fmt.Sprintf("%dx%xx%s", depth, now.UnixMilli(), hex.EncodeToString(rnd[:]))
	res, err := fanout(ctx, s, "snapshot", b.n, func(ctx context.Context, i int) (int64, error) {
		k := s.layout.Keys(b.b, i, b.n)
		return s.lifeBE.Snapshot(ctx, k.Z, k.Snapshot(id), k.SnapshotMarker(id), depth, ttl)
	})
	if err != nil {
		return SnapshotInfo{}, err
	}
	// The union holds up to n × depth entries; the first depth of the merge
	// are exactly the board's top depth, and pages stop there.
	var size int64
	for _, n := range res {
		size += n
	}
	return SnapshotInfo{Board: b.name(), Snapshot: id, ExpiresAt: now.Add(ttl).UTC(), Size: min(size, int64(depth)), Depth: depth}, nil
}

// snapshotPage reads offset/limit from a snapshot.
func (s *Service) snapshotPage(ctx context.Context, rc *readCtx, q PageQuery) (Page, error) {
	id, err := parseSnapshotID(q.Snapshot)
	if err != nil {
		return Page{}, err
	}
	rc.meta.Source = SourcePrimary
	rc.meta.AsOf = id.created
	want := min(q.Offset+q.Limit, id.depth)
	if q.Offset >= id.depth {
		want = 0
	}
	reads := make([]store.ShardRead, rc.b.n)
	for i := range reads {
		k := s.layout.Keys(rc.b.b, i, rc.b.n)
		reads[i] = store.ShardRead{Kind: store.ReadSeek, Key: k.Snapshot(id.raw),
			Seek: store.SeekArgs{Mode: store.SeekTop, Limit: want, Guard: k.SnapshotMarker(id.raw)}}
	}
	// Exact pages need every shard: never partial, always the masters.
	res, _, err := s.rp.Fanout(ctx, "snapshot_page", &readplan.Board{}, readplan.AllShards(rc.b.n), reads)
	if errors.Is(err, store.ErrSnapshotExpired) {
		return Page{}, rank.Errorf(rank.CodeSnapshotExpired, "snapshot %s expired or never existed on this board", id.raw)
	}
	if err != nil {
		return Page{}, err
	}
	lists := make([][]rank.Item, len(res))
	var fetched int
	for i := range res {
		lists[i] = res[i].Seek.Items
		fetched += len(lists[i])
	}
	s.m.fetched.WithLabelValues("snapshot_page").Add(float64(fetched))
	items := readplan.MergeInto(make([]rank.Item, 0, want), lists, want)
	entries := rc.toEntries(items)
	rank.FillRanks(entries, 0, 0, rc.b.fam.mode)
	entries = entries[min(q.Offset, len(entries)):]
	return s.finishPage(ctx, rc, "snapshot_page", entries, "")
}
