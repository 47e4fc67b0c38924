package gateway

import (
	"encoding/json"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// MarshalJSON writes a page without reflection over its entries when they
// were encoded once already (cached pages are encoded once per load, not
// once per request): a hot cached Top-N then costs little more than writing
// bytes.
func (p Page) MarshalJSON() ([]byte, error) {
	if p.hit != nil && p.Source == SourceCache {
		return p.hit.get(func() ([]byte, error) {
			q := p
			q.hit = nil
			return q.MarshalJSON()
		})
	}
	entries := p.entriesJSON
	if entries == nil {
		var err error
		if entries, err = encodeEntries(p); err != nil {
			return nil, err
		}
	}
	buf := make([]byte, 0, len(entries)+192)
	buf = append(buf, `{"board":`...)
	buf = appendJSONString(buf, p.Board)
	buf = append(buf, `,"source":`...)
	buf = appendJSONString(buf, string(p.Source))
	buf = append(buf, `,"as_of":`...)
	buf = appendJSONString(buf, p.AsOf.Format(time.RFC3339Nano))
	if p.Partial {
		buf = append(buf, `,"partial":true,"missing_shards":[`...)
		for i, m := range p.Missing {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendInt(buf, int64(m), 10)
		}
		buf = append(buf, ']')
	}
	buf = append(buf, `,"entries":`...)
	buf = append(buf, entries...)
	if p.NextCursor != "" {
		buf = append(buf, `,"next_cursor":`...)
		buf = appendJSONString(buf, p.NextCursor)
	}
	return append(buf, '}'), nil
}

func encodeEntries(p Page) ([]byte, error) {
	if p.Entries == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(p.Entries)
}

// lazyBody holds bytes computed once, shared by copies of a cached page.
type lazyBody struct {
	once sync.Once
	b    []byte
	err  error
}

func (l *lazyBody) get(f func() ([]byte, error)) ([]byte, error) {
	l.once.Do(func() { l.b, l.err = f() })
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
