// Package shard owns the key layout: board → shard keys and
// hash tags, period keys, profile keys, member → shard, and key → slot. It is
// the only package that builds key strings. Pure: no Redis, no HTTP.
//
// It must not import Redis, net/http or any other rankgate package.
package shard

import (
	"strconv"
	"strings"
)

// National is the dimension without a value.
const National = "national"

// Board names one leaderboard: family + period + dimension.
type Board struct {
	Family   string
	Period   string
	DimType  string // "national" or a declared dimension type
	DimValue string // empty for national
	// Group is the key group whose name the hash tag carries instead of the
	// family's: families that are combined in-slot (a derived family and its
	// inputs) share one. Empty: the family's own name.
	Group string
}

func (b Board) group() string {
	if b.Group == "" {
		return b.Family
	}
	return b.Group
}

// Dimension returns "national" or "type:value".
func (b Board) Dimension() string {
	if b.DimType == National {
		return National
	}
	return b.DimType + ":" + b.DimValue
}

// String returns "family/period/dimension", the board's name in the API
// (one allocation: the write path names every board it answers).
func (b Board) String() string {
	if b.DimType == National {
		return b.Family + "/" + b.Period + "/" + National
	}
	return b.Family + "/" + b.Period + "/" + b.DimType + ":" + b.DimValue
}

// ParseDimension splits "national" or "type:value". It does not validate the
// characters; callers validate type and value with internal/rank.
func ParseDimension(s string) (dimType, dimValue string, ok bool) {
	if s == National {
		return National, "", true
	}
	t, v, found := strings.Cut(s, ":")
	if !found || t == "" || v == "" || t == National {
		return "", "", false
	}
	return t, v, true
}

// Layout builds keys under a prefix.
type Layout struct {
	Prefix string
}

// Keys are the keys of one board shard; all share one hash tag.
type Keys struct {
	Z    string // ZSET member → score
	M    string // HASH member → projection version (projection families)
	Ev   string // HASH event id → applied record (dedupe + reversal look-up)
	Meta string // HASH state, rules version, created
	// Cols: HASH user → the column (and tie-first seq) prefix of its stored
	// member (families with sort columns only; see rank.Columns).
	Cols string
	// Md: HASH user → the entry's metadata (JSON), where events carry it.
	Md string
	// Feed: STREAM of the shard's changes, (member, new score | removed),
	// appended by every write script atomically with the change (families
	// with a read index only) and followed by every gateway's index.
	Feed string
	Tag  string // "{family:dimension:shard}" without braces
}

// Snapshot returns the key of a snapshot copy of this shard.
func (k Keys) Snapshot(id string) string { return k.base() + "snap:" + id }

// RebuildZ and RebuildM are the fresh copies a rebuild fills beside the live
// sorted set and version hash before swapping them in (same tag).
func (k Keys) RebuildZ() string { return k.Z + ":rebuild" }

// RebuildM: see RebuildZ.
func (k Keys) RebuildM() string { return k.M + ":rebuild" }

// RebuildCols and RebuildMd: the fresh copies of the cols and md hashes (see
// RebuildZ).
func (k Keys) RebuildCols() string { return k.Cols + ":rebuild" }

// RebuildMd: see RebuildCols.
func (k Keys) RebuildMd() string { return k.Md + ":rebuild" }

// SnapshotMarker returns the key whose presence says the snapshot id is
// alive on this shard (a shard with no entries has no copy key).
func (k Keys) SnapshotMarker(id string) string { return k.base() + "snap:" + id + ":m" }

func (k Keys) base() string { return strings.TrimSuffix(k.Z, "z") }

// ShardWidth is the number of digits a shard index is printed with for a
// board of n shards: at least 2, so "07" of 16.
func ShardWidth(n int) int {
	w := len(strconv.Itoa(n - 1))
	if w < 2 {
		w = 2
	}
	return w
}

// Tag returns the hash tag (without braces) of shard i of n of a board.
func (l Layout) Tag(b Board, i, n int) string {
	var sb strings.Builder
	sb.Grow(len(b.group()) + len(b.DimType) + len(b.DimValue) + 8)
	writeTag(&sb, b, i, n)
	return sb.String()
}

func writeTag(sb *strings.Builder, b Board, i, n int) {
	sb.WriteString(b.group())
	sb.WriteByte(':')
	sb.WriteString(b.DimType)
	if b.DimValue != "" {
		sb.WriteByte(':')
		sb.WriteString(b.DimValue)
	}
	sb.WriteByte(':')
	var d [8]byte
	s := strconv.AppendInt(d[:0], int64(i), 10)
	for w := ShardWidth(n) - len(s); w > 0; w-- {
		sb.WriteByte('0')
	}
	sb.Write(s)
}

// ZKey returns only the sorted-set key of shard i of n: the read hot path.
func (l Layout) ZKey(b Board, i, n int) string {
	var sb strings.Builder
	sb.Grow(len(l.Prefix) + 2*len(b.Family) + len(b.DimType) + len(b.DimValue) + len(b.Period) + 16)
	l.writeBase(&sb, b, i, n)
	sb.WriteByte('z')
	return sb.String()
}

func (l Layout) writeBase(sb *strings.Builder, b Board, i, n int) {
	sb.WriteString(l.Prefix)
	sb.WriteString(":{")
	writeTag(sb, b, i, n)
	sb.WriteString("}:")
	sb.WriteString(b.Period)
	sb.WriteByte(':')
	if b.Group != "" && b.Group != b.Family {
		// A family keyed under another's group names itself after the period:
		// rk:{season:national:07}:2026-W34:bonus:z.
		sb.WriteString(b.Family)
		sb.WriteByte(':')
	}
}

// keySuffixes are the suffixes of Keys after the shard's base, in the order
// Keys lays them out.
var keySuffixes = [...]string{"z", "m", "ev", "meta", "cols", "md", "feed"}

// Keys returns every key of shard i of n of a board. The write path builds
// them for every board write: they share one allocation, each key a
// substring of one string (base+"z" base+"m" … base+"feed").
func (l Layout) Keys(b Board, i, n int) Keys {
	// An upper bound of the base's length (writeBase): the names, the
	// separators and the shard index (at most 20 digits).
	est := len(l.Prefix) + len(b.group()) + len(b.DimType) + len(b.DimValue) + len(b.Period) + len(b.Family) + 30
	var sb strings.Builder
	sb.Grow(len(keySuffixes)*est + 18)
	l.writeBase(&sb, b, i, n)
	L := sb.Len()
	for k, suf := range keySuffixes {
		if k > 0 {
			// The base again, from the builder's own bytes (appending never
			// changes bytes already written).
			sb.WriteString(sb.String()[:L])
		}
		sb.WriteString(suf)
	}
	all := sb.String()
	var ks [len(keySuffixes)]string
	at := 0
	for k, suf := range keySuffixes {
		ks[k] = all[at : at+L+len(suf)]
		at += L + len(suf)
	}
	base := all[:L]
	tag := base[len(l.Prefix)+2 : strings.IndexByte(base, '}')]
	return Keys{Z: ks[0], M: ks[1], Ev: ks[2], Meta: ks[3], Cols: ks[4], Md: ks[5], Feed: ks[6], Tag: tag}
}

// SharedCache returns the key of a board's shared cache copy of one query
// (q: a hash of the query), under the tag of the board's shard 0. The "~c:"
// marker cannot start a family name ([a-z0-9_-]), so no board's data key —
// not even a family named "c" keyed under the same group — starts with a
// board's SharedCachePrefix: a purge drops cached copies only.
func (l Layout) SharedCache(b Board, n int, q string) string {
	var sb strings.Builder
	l.writeBase(&sb, b, 0, n)
	sb.WriteString("~c:")
	sb.WriteString(q)
	return sb.String()
}

// SharedCachePrefix is what every shared cache copy (and lease) of a board
// starts with: a key in their slot, and the prefix to drop them all by.
func (l Layout) SharedCachePrefix(b Board, n int) string { return l.SharedCache(b, n, "") }

// SharedLease returns the key of the recompute lease of SharedCache(b, n, q)
// (same tag).
func (l Layout) SharedLease(b Board, n int, q string) string {
	return l.SharedCache(b, n, q) + ":lease"
}

// PeriodKeys are the keys of one family period; all share the tag
// "{family:period}".
type PeriodKeys struct {
	Seq    string // STRING achievement counter
	Meta   string // HASH state, shard counts per dimension type, rules version
	Boards string // SET of dimension names ("national", "province:zhejiang")
	Late   string // STREAM of events refused as late, kept for review
}

// Period returns the keys of a family period.
func (l Layout) Period(family, period string) PeriodKeys {
	base := l.Prefix + ":{" + family + ":" + period + "}:"
	return PeriodKeys{Seq: base + "seq", Meta: base + "meta", Boards: base + "boards", Late: base + "late"}
}

// Profile returns the HASH key of a member's display profile, under its own tag.
func (l Layout) Profile(member string) string {
	return l.Prefix + ":{p:" + member + "}:profile"
}

// MemberRate returns the sorted set that counts a member's events under a
// player token in one family (a sliding window of event ids by time), under
// the member's own tag beside their profile: one slot per member, so the
// count holds across every gateway and members spread over the cluster.
func (l Layout) MemberRate(member, family string) string {
	return l.Prefix + ":{p:" + member + "}:rate:" + family
}

// Of returns the shard of member on a board of n shards: FNV-1a 64 of the
// member bytes modulo n. Stable across processes and releases (never Go's map
// hash); changing it would move every member, so it is pinned by a test.
func Of(member string, n int) int {
	if n <= 1 {
		return 0
	}
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	h := uint64(offset64)
	for i := 0; i < len(member); i++ {
		h ^= uint64(member[i])
		h *= prime64
	}
	return int(h % uint64(n))
}

// LeaseKeys are the keys of one named lease (one gateway at a time runs the
// lifecycle scheduler); both share the tag "{lease:name}".
type LeaseKeys struct {
	Owner string // STRING "<owner> <token>" with a TTL: who holds the lease
	Fence string // STRING counter: the fencing token of each acquisition
}

// Lease returns the keys of the lease called name.
func (l Layout) Lease(name string) LeaseKeys {
	base := l.Prefix + ":{lease:" + name + "}:"
	return LeaseKeys{Owner: base + "owner", Fence: base + "fence"}
}

// ColsKey returns the user → stored-member-prefix hash (Keys.Cols) of the
// board shard whose sorted set is z.
func ColsKey(z string) string { return strings.TrimSuffix(z, "z") + "cols" }

// FeedKey returns the change feed (Keys.Feed) of the board shard whose
// sorted set is z.
func FeedKey(z string) string { return strings.TrimSuffix(z, "z") + "feed" }

// MdKey returns the user → metadata hash (Keys.Md) of the board shard whose
// sorted set is z.
func MdKey(z string) string { return strings.TrimSuffix(z, "z") + "md" }

// BanKeys are the keys of the member bans (moderation); both share the tag
// "{bans}": one small hash read by every gateway when its version moves.
type BanKeys struct {
	All     string // HASH member → the ban (JSON)
	Version string // STRING counter: +1 at every change of All
}

// Bans returns the keys of the member bans.
func (l Layout) Bans() BanKeys {
	base := l.Prefix + ":{bans}:"
	return BanKeys{All: base + "all", Version: base + "v"}
}

// JoinsKey returns the tournament joins hash (member → join time, unix ms)
// of the board shard whose sorted set is z. Shard 0's holds every seat (its
// length is the tournament's size, checked by the join script); on a board
// of several shards each other shard's marks the joined members it holds,
// so the gated write checks a join in its own slot.
func JoinsKey(z string) string { return strings.TrimSuffix(z, "z") + "jn" }

// AttemptsKey returns the tournament attempts hash (member → accepted
// events) of the board shard whose sorted set is z.
func AttemptsKey(z string) string { return strings.TrimSuffix(z, "z") + "at" }

// TournamentKeys are the keys of the tournament registry; all share the
// tag "{tournaments}": a small hash every gateway reads when the version
// moves.
type TournamentKeys struct {
	Defs    string // HASH id → the tournament (JSON)
	Active  string // ZSET id → when it stops counting against max_active (unix ms; +inf: never)
	Version string // STRING counter: +1 at every change of Defs
}

// Tournaments returns the keys of the tournament registry.
func (l Layout) Tournaments() TournamentKeys {
	base := l.Prefix + ":{tournaments}:"
	return TournamentKeys{Defs: base + "defs", Active: base + "active", Version: base + "v"}
}

// Audit returns the stream of the audit log (Redis-only mode), under the tag
// "{audit}": one key for the whole log. Administrative changes are rare (a
// handful a minute), so one stream in one slot costs nothing measurable and
// gives every entry one total order (its stream id), which is what paging
// newest-first without repeats or gaps needs; spread over several keys, a
// page would have to merge them.
func (l Layout) Audit() string {
	return l.Prefix + ":{audit}:log"
}

// MemberBoards returns the SET of a member's board shards, under the
// member's own tag beside their profile (one slot per member, so member
// indexes spread over the cluster): each element is the sorted-set key
// (Keys.Z) of one board shard the member was written to. Every write that
// can place the member on a board adds its shard's key (SADD, in the write's
// pipeline); an erasure reads it instead of scanning the keyspace, and
// removes an element only once that board shard is cleaned.
func (l Layout) MemberBoards(member string) string {
	return l.Prefix + ":{p:" + member + "}:boards"
}

// IndexWork returns the work set of the erasures of a member (beside the
// member board index that MemberBoards names, under the member's tag): an
// erasure moves the index's elements into it, erases those board shards,
// and removes each from it once erased there, while writes that run
// meanwhile add to a fresh index, which that erasure leaves alone.
func IndexWork(index string) string {
	return strings.TrimSuffix(index, ":boards") + ":erasing"
}

// ShardKeys returns every key of the board shard whose sorted set is z
// (an element of MemberBoards), as Keys lays them out.
func ShardKeys(z string) Keys {
	base := strings.TrimSuffix(z, "z")
	k := Keys{Z: z, M: base + "m", Ev: base + "ev", Meta: base + "meta", Cols: base + "cols", Md: base + "md", Feed: base + "feed"}
	if i, j := strings.IndexByte(z, '{'), strings.IndexByte(z, '}'); i >= 0 && j > i {
		k.Tag = z[i+1 : j]
	}
	return k
}

// ShardRef is a board shard named by its sorted-set key: the board, the
// shard's index and its printed width.
type ShardRef struct {
	Board Board
	Shard int
	Width int
}

// ParseZKey reads a board shard's sorted-set key built by Layout.Keys or
// ZKey under this layout's prefix back into its board and shard. ok is
// false for a key of another form.
func (l Layout) ParseZKey(z string) (ShardRef, bool) {
	rest, ok := strings.CutPrefix(z, l.Prefix+":{")
	if !ok {
		return ShardRef{}, false
	}
	tag, tail, ok := strings.Cut(rest, "}:")
	if !ok {
		return ShardRef{}, false
	}
	parts := strings.Split(tag, ":")
	var b Board
	var digits string
	switch len(parts) {
	case 3:
		if parts[1] != National {
			return ShardRef{}, false
		}
		b.Group, b.DimType, digits = parts[0], National, parts[2]
	case 4:
		b.Group, b.DimType, b.DimValue, digits = parts[0], parts[1], parts[2], parts[3]
	default:
		return ShardRef{}, false
	}
	i, err := strconv.Atoi(digits)
	if err != nil || i < 0 || len(digits) < 2 {
		return ShardRef{}, false
	}
	tp := strings.Split(tail, ":")
	switch {
	case len(tp) == 2 && tp[1] == "z":
		b.Period, b.Family = tp[0], b.Group
	case len(tp) == 3 && tp[2] == "z":
		b.Period, b.Family = tp[0], tp[1]
	default:
		return ShardRef{}, false
	}
	if b.Group == b.Family {
		b.Group = ""
	}
	if b.Period == "" || b.Family == "" || b.Group == "" && b.Family == "" {
		return ShardRef{}, false
	}
	return ShardRef{Board: b, Shard: i, Width: len(digits)}, true
}

// ShardCount returns a shard count whose printed width is w: what ZKey
// needs to print shard indexes of a ShardRef (any n of that width prints
// the same digits).
func ShardCount(w int) int {
	if w <= 2 {
		return 2
	}
	n := 1
	for range w - 1 {
		n *= 10
	}
	return n + 1
}
