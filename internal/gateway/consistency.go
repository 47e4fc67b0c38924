package gateway

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/rankgate/rankgate/internal/rank"
)

// metaOf gives access to the ReadMeta embedded in every read answer.
type metaOf interface {
	Page | MemberStanding | Count
}

func readMeta[V metaOf](v *V) *ReadMeta {
	switch x := any(v).(type) {
	case *Page:
		return &x.ReadMeta
	case *MemberStanding:
		return &x.ReadMeta
	case *Count:
		return &x.ReadMeta
	}
	panic("unreachable")
}

// cacheKey builds the cache key from everything that changes an answer: the
// board, the query kind and its parameters, the profiles flag and the partial
// policy (a load that may answer partially must not be shared with a caller
// who asked for an exact answer).
func cacheKey(rc *readCtx, op string, parts ...string) string {
	var sb strings.Builder
	sb.WriteString(op)
	sb.WriteByte('|')
	sb.WriteString(rc.b.name())
	sb.WriteByte('|')
	sb.WriteString(strconv.Itoa(rc.b.n))
	for _, p := range parts {
		sb.WriteByte('|')
		sb.WriteString(p)
	}
	if rc.o.Profiles {
		sb.WriteString("|profiles")
	}
	if rc.o.Metadata {
		sb.WriteString("|metadata")
	}
	if rc.o.AllowPartial {
		sb.WriteString("|partial")
	}
	return sb.String()
}

// serve runs compute at the consistency the request asked for (or the
// operation's default):
//   - index (asked, or by default on a family with index.enabled while the
//     board's lag is within max_lag): fromIndex on the gateway's read index
//     (indexread.go); a board that is loading, too big, or lags too much for
//     a default read falls back to the operation's default below;
//   - primary: masters, never cached;
//   - replica: replicas (EVALSHA_RO) when configured, else primary — and the
//     answer's source says which;
//   - cached: the short-TTL cache with singleflight; a miss loads from the
//     masters once for every concurrent caller; errors and partial answers
//     are never stored; a TTL of 0 means primary.
func serve[V metaOf](ctx context.Context, s *Service, rc *readCtx, op string, def Consistency, key func() string,
	compute func(ctx context.Context, rc *readCtx) (V, error), fromIndex indexRead[V]) (V, error) {
	if v, served, err := tryIndex(ctx, s, rc, op, fromIndex); served {
		return v, err
	}
	level := rc.o.Consistency
	if level == ConsistencyDefault || level == ConsistencyIndex {
		level = def
	}
	ttl := rc.b.fam.cfg.CacheTTL
	if level == ConsistencyCached && (ttl <= 0 || s.cache == nil) {
		level = ConsistencyPrimary
	}
	switch level {
	case ConsistencyReplica:
		rc.replica = s.replicaReads
		rc.meta.Source = SourcePrimary
		if rc.replica {
			rc.meta.Source = SourceReplica
		}
		v, err := compute(ctx, rc)
		s.countRead(op, rc.meta.Source, err)
		countPartial(s, op, &v, err)
		return v, err
	case ConsistencyCached:
		k := key()
		// The loader may run as a background refresh after this read has
		// returned (CacheServeStale): it only reads rc, and builds its own
		// read plan.
		val, res, err := s.cache.GetAt(ctx, rc.b.fam.cfg.Name, k, ttl, func(ctx context.Context) (any, time.Time, bool, error) {
			lrc := *rc
			lrc.pb = nil
			lrc.meta.Source = SourcePrimary
			var v V
			var at time.Time
			var err error
			if rc.b.fam.cfg.CacheShared {
				// A copy from Redis carries its own date: the local cache
				// keeps it only while it is fresh (a stale one, never).
				if v, at, err = loadShared(ctx, s, &lrc, k, ttl, compute); err != nil {
					return nil, time.Time{}, false, err
				}
			} else if v, err = compute(ctx, &lrc); err != nil {
				return nil, time.Time{}, false, err
			}
			countPartial(s, op, &v, nil)
			if p, ok := any(&v).(*Page); ok {
				// Encode the entries once for every caller the cache serves,
				// and the hits' whole body once.
				if p.entriesJSON, err = encodeEntries(*p); err != nil {
					return nil, time.Time{}, false, err
				}
				p.hit = &lazyBody{}
			}
			return v, at, !readMeta(&v).Partial, nil
		})
		if err != nil {
			s.countRead(op, SourceCache, err)
			var zero V
			return zero, err
		}
		v := val.(V)
		m := readMeta(&v)
		if res.Hit || res.Shared { // (a hit may be stale, dated by its load)
			m.Source = SourceCache
			m.AsOf = res.StoredAt.UTC()
		}
		if !m.Partial {
			m.MaxAge = ttl - s.now().Sub(res.StoredAt)
			if m.MaxAge < 0 {
				m.MaxAge = 0
			}
		}
		s.countRead(op, m.Source, nil)
		return v, nil
	default:
		rc.meta.Source = SourcePrimary
		v, err := compute(ctx, rc)
		s.countRead(op, SourcePrimary, err)
		countPartial(s, op, &v, err)
		return v, err
	}
}

// countPartial counts an answer flagged partial, once per answer however
// many fan-outs it took.
func countPartial[V metaOf](s *Service, op string, v *V, err error) {
	if err == nil && readMeta(v).Partial {
		s.m.partial.WithLabelValues(op).Inc()
	}
}

func (s *Service) countRead(op string, src Source, err error) {
	outcome := "ok"
	if err != nil {
		outcome = string(rank.CodeOf(err))
	}

	s.m.reads.WithLabelValues(op, string(src), outcome).Inc()
}
