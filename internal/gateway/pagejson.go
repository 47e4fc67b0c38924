package gateway

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/rankgate/rankgate/internal/rank"
)

// MarshalJSON writes a page without reflection (appendEntries; entries with
// a profile or metadata excepted), or with the entries encoded once already
// (cached pages are encoded once per load, not once per request): a hot
// cached Top-N then costs little more than writing bytes.
func (p Page) MarshalJSON() ([]byte, error) {
	if p.hit != nil && p.Source == SourceCache {
		return p.hit.get(func() ([]byte, error) {
			q := p
			q.hit = nil
			return q.MarshalJSON()
		})
	}
	buf := make([]byte, 0, len(p.entriesJSON)+64*len(p.Entries)+192)
	buf = appendMeta(buf, p.ReadMeta)
	buf = append(buf, `,"entries":`...)
	if p.entriesJSON != nil {
		buf = append(buf, p.entriesJSON...)
	} else {
		var err error
		if buf, err = appendEntries(buf, p.Entries); err != nil {
			return nil, err
		}
	}
	if p.NextCursor != "" {
		buf = append(buf, `,"next_cursor":`...)
		buf = appendJSONString(buf, p.NextCursor)
	}
	return append(buf, '}'), nil
}

// encodeEntries is a page's entries as JSON (a cached page keeps them so).
func encodeEntries(p Page) ([]byte, error) {
	return appendEntries(make([]byte, 0, 64*len(p.Entries)+2), p.Entries)
}

// HitJSON is a cache hit's whole answer body — the page's JSON and a
// newline — and its length as a Content-Length header value, both made once
// per cached value and shared by every hit of it (callers must not modify
// them); ok is false for a page that is no cache hit. Serving a hit then
// allocates nothing: the bytes are written as they are.
func (p Page) HitJSON() (body []byte, contentLength []string, ok bool, err error) {
	if p.hit == nil || p.Source != SourceCache {
		return nil, nil, false, nil
	}
	if _, err := p.MarshalJSON(); err != nil {
		return nil, nil, true, err
	}
	return p.hit.line, p.hit.length, true, nil
}

// lazyBody holds bytes computed once, shared by copies of a cached page: the
// JSON (b, capacity clipped, so that a caller's append copies it rather than
// write into the shared array), the same with a newline (line), and line's
// length as a header value.
type lazyBody struct {
	once   sync.Once
	b      []byte
	line   []byte
	length []string
	err    error
}

func (l *lazyBody) get(f func() ([]byte, error)) ([]byte, error) {
	l.once.Do(func() {
		if l.b, l.err = f(); l.err != nil {
			return
		}
		l.b = slices.Clip(l.b)
		l.line = append(make([]byte, 0, len(l.b)+1), l.b...)
		l.line = append(l.line, '\n')
		l.length = []string{strconv.Itoa(len(l.line))}
	})
	return l.b, l.err
}

// appendJSONString appends s as a JSON string.
func appendJSONString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			buf = append(buf, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, `\ufffd`...)
		} else {
			buf = append(buf, s[i:i+size]...)
		}
		i += size
	}
	return append(buf, '"')
}

// appendMeta writes a read's metadata fields, from `{"board":` up to (not
// including) the next field's comma, as encoding/json writes ReadMeta.
func appendMeta(buf []byte, m ReadMeta) []byte {
	buf = append(buf, `{"board":`...)
	buf = appendJSONString(buf, m.Board)
	buf = append(buf, `,"source":`...)
	buf = appendJSONString(buf, string(m.Source))
	buf = append(buf, `,"as_of":`...)
	buf = appendJSONString(buf, m.AsOf.Format(time.RFC3339Nano))
	if m.LagMs != nil {
		buf = append(buf, `,"lag_ms":`...)
		buf = strconv.AppendInt(buf, *m.LagMs, 10)
	}
	if m.Partial {
		buf = append(buf, `,"partial":true`...)
	}
	if len(m.MissingShards) > 0 {
		buf = append(buf, `,"missing_shards":[`...)
		for i, s := range m.MissingShards {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendInt(buf, int64(s), 10)
		}
		buf = append(buf, ']')
	}
	return buf
}

// memberJSON is MemberStanding without its MarshalJSON (the fallback).
type memberJSON MemberStanding

// MarshalJSON writes a standing without reflection — a member's rank is the
// hottest small answer. With a profile or metadata (raw JSON that
// encoding/json checks and compacts) it is encoding/json's.
func (m MemberStanding) MarshalJSON() ([]byte, error) {
	if m.Profile != nil || m.Metadata != nil {
		return json.Marshal(memberJSON(m))
	}
	buf := make([]byte, 0, 192+len(m.Board)+len(m.User)+24*len(m.Columns))
	buf = appendMeta(buf, m.ReadMeta)
	buf = append(buf, `,"user":`...)
	buf = appendJSONString(buf, m.User)
	buf = append(buf, `,"points":`...)
	buf = strconv.AppendInt(buf, m.Points, 10)
	buf = append(buf, `,"position":`...)
	buf = strconv.AppendInt(buf, m.Position, 10)
	buf = append(buf, `,"rank":`...)
	buf = strconv.AppendInt(buf, m.Rank, 10)
	buf = append(buf, `,"members":`...)
	buf = strconv.AppendInt(buf, m.Members, 10)
	buf = append(buf, `,"percentile":`...)
	var err error
	if buf, err = appendJSONFloat(buf, m.Percentile); err != nil {
		return nil, err
	}
	if len(m.Columns) > 0 {
		buf = appendColumns(append(buf, `,"columns":`...), m.Columns)
	}
	return append(buf, '}'), nil
}

// appendJSONFloat writes f as encoding/json writes a float64.
func appendJSONFloat(buf []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, &json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	abs, format := math.Abs(f), byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	n := len(buf)
	buf = strconv.AppendFloat(buf, f, format, -1, 64)
	if format == 'e' { // clean up e-09 to e-9, as encoding/json does
		if k := len(buf) - n; k >= 4 && buf[len(buf)-4] == 'e' && buf[len(buf)-3] == '-' && buf[len(buf)-2] == '0' {
			buf[len(buf)-2] = buf[len(buf)-1]
			buf = buf[:len(buf)-1]
		}
	}
	return buf, nil
}

// appendColumns writes sort-column values as an object, keys sorted (as
// encoding/json writes a map).
func appendColumns(buf []byte, cols map[string]int64) []byte {
	var small [8]string
	keys := small[:0]
	for k := range cols {
		keys = append(keys, k)
	}
	sortStrings(keys)
	buf = append(buf, '{')
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, k)
		buf = append(buf, ':')
		buf = strconv.AppendInt(buf, cols[k], 10)
	}
	return append(buf, '}')
}

// sortStrings is an insertion sort: a family has a handful of columns.
func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// appendEntries writes entries as encoding/json writes []rank.Entry: by
// hand, except an entry with a profile or metadata (encoding/json's).
func appendEntries(buf []byte, entries []rank.Entry) ([]byte, error) {
	buf = append(buf, '[')
	for i := range entries {
		e := &entries[i]
		if i > 0 {
			buf = append(buf, ',')
		}
		if e.Profile != nil || e.Metadata != nil {
			b, err := json.Marshal(e)
			if err != nil {
				return nil, err
			}
			buf = append(buf, b...)
			continue
		}
		buf = append(buf, `{"user":`...)
		buf = appendJSONString(buf, e.User)
		buf = append(buf, `,"points":`...)
		buf = strconv.AppendInt(buf, e.Points, 10)
		buf = append(buf, `,"position":`...)
		buf = strconv.AppendInt(buf, e.Position, 10)
		buf = append(buf, `,"rank":`...)
		buf = strconv.AppendInt(buf, e.Rank, 10)
		if len(e.Columns) > 0 {
			buf = appendColumns(append(buf, `,"columns":`...), e.Columns)
		}
		buf = append(buf, '}')
	}
	return append(buf, ']'), nil
}
