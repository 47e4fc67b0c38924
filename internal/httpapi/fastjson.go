package httpapi

import (
	"github.com/rankgate/rankgate/internal/gateway"
)

// The write path's decoder of events: the common shape without reflection,
// in one pass. encoding/json decodes a batch twice over (the events as raw
// messages, then each event with a Decoder of its own), each time scanning
// the bytes first and then decoding them; for batches that was the
// gateway's biggest cost after Redis's round trips.
//
// It takes only inputs whose meaning is plain: objects of the known keys
// spelled exactly, each at most once; strings of printable ASCII without
// escapes; integers in plain decimal (no fraction, exponent or leading
// zero) within int64; no nulls, booleans or metadata. Anything else is
// "not taken", and the caller decodes the body with the strict general
// decoder (decodeValue), which then gives the answer — the same one, for
// every input taken here (FuzzFastEventSameAsStrict), and the errors.

// fastEvent decodes one event that is the whole of data (whitespace
// around it allowed); ok is false when it does not take it.
func fastEvent(data []byte) (w eventJSON, ok bool) {
	s := scanner{b: data}
	if !s.event(&w) {
		return eventJSON{}, false
	}
	s.ws()
	return w, s.i == len(s.b)
}

// fastBatch decodes {"events":[event, …]} (at least one event); ok is false
// when it does not take it.
func fastBatch(data []byte) ([]eventJSON, bool) {
	s := scanner{b: data}
	if !s.lit('{') {
		return nil, false
	}
	if k, ok := s.str(); !ok || k != "events" || !s.lit(':') || !s.lit('[') {
		return nil, false
	}
	out := make([]eventJSON, 0, 1+len(data)/128)
	for {
		var w eventJSON
		if !s.event(&w) {
			return nil, false
		}
		out = append(out, w)
		if s.lit(',') {
			continue
		}
		if s.lit(']') {
			break
		}
		return nil, false
	}
	if !s.lit('}') {
		return nil, false
	}
	s.ws()
	return out, s.i == len(s.b)
}

// scanner reads JSON tokens from b at i.
type scanner struct {
	b []byte
	i int
}

// ws skips JSON whitespace.
func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// lit consumes c after whitespace.
func (s *scanner) lit(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string of printable ASCII without escapes.
func (s *scanner) str() (string, bool) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	for j := s.i + 1; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			v := string(s.b[s.i+1 : j])
			s.i = j + 1
			return v, true
		case c < 0x20 || c == '\\' || c >= 0x7f:
			return "", false
		}
	}
	return "", false
}

// int reads an integer in plain decimal within int64.
func (s *scanner) int() (int64, bool) {
	s.ws()
	j := s.i
	neg := j < len(s.b) && s.b[j] == '-'
	if neg {
		j++
	}
	start := j
	var u uint64
	for ; j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9'; j++ {
		if j-start >= 19 {
			return 0, false // 20 digits or more: out of int64 (or a leading zero)
		}
		u = u*10 + uint64(s.b[j]-'0')
	}
	switch {
	case j == start, s.b[start] == '0' && j-start > 1:
		return 0, false // no digits, or a leading zero
	case j < len(s.b) && (s.b[j] == '.' || s.b[j] == 'e' || s.b[j] == 'E'):
		return 0, false // a fraction or an exponent
	case neg && u > 1<<63, !neg && u > 1<<63-1:
		return 0, false
	}
	s.i = j
	if neg {
		return -int64(u), true // -(1<<63) wraps to itself: MinInt64
	}
	return int64(u), true
}

// The keys of an event, one bit each (a key given twice is not taken).
const (
	keyEventID = 1 << iota
	keyFamily
	keyUser
	keyDelta
	keyValue
	keyDims
	keyAt
	keyReverses
	keyReason
	keyColumns
)

// event reads one event object into w.
func (s *scanner) event(w *eventJSON) bool {
	if !s.lit('{') {
		return false
	}
	if s.lit('}') {
		return true
	}
	var seen int
	for {
		k, ok := s.str()
		if !ok || !s.lit(':') {
			return false
		}
		var bit int
		switch k {
		case "event_id":
			bit = keyEventID
			w.EventID, ok = s.str()
		case "family":
			bit = keyFamily
			w.Family, ok = s.str()
		case "user":
			bit = keyUser
			w.User, ok = s.str()
		case "delta":
			bit = keyDelta
			var v int64
			v, ok = s.int()
			w.Delta = &v
		case "value":
			bit = keyValue
			var v int64
			v, ok = s.int()
			w.Value = &v
		case "dims":
			bit = keyDims
			w.Dims, ok = s.strMap()
		case "at":
			bit = keyAt
			var v string
			v, ok = s.str()
			w.At = &v
		case "reverses":
			bit = keyReverses
			w.Reverses, ok = s.str()
		case "reason":
			bit = keyReason
			w.Reason, ok = s.str()
		case "columns":
			bit = keyColumns
			w.Columns, ok = s.intMap()
		default:
			return false // metadata, an unknown key, another spelling
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		if s.lit(',') {
			continue
		}
		return s.lit('}')
	}
}

// strMap reads an object of strings (keys distinct).
func (s *scanner) strMap() (map[string]string, bool) { return scanMap(s, s.str) }

// intMap reads an object of integers (keys distinct).
func (s *scanner) intMap() (map[string]int64, bool) { return scanMap(s, s.int) }

// scanMap reads an object whose values val reads (keys distinct).
func scanMap[V any](s *scanner, val func() (V, bool)) (map[string]V, bool) {
	if !s.lit('{') {
		return nil, false
	}
	m := make(map[string]V, 2)
	if s.lit('}') {
		return m, true
	}
	for {
		k, ok := s.str()
		if !ok || !s.lit(':') {
			return nil, false
		}
		v, ok := val()
		if _, dup := m[k]; !ok || dup {
			return nil, false
		}
		m[k] = v
		if s.lit(',') {
			continue
		}
		return m, s.lit('}')
	}
}

// eventOf turns a decoded wire event into the gateway's, reading "at"; ok
// is false when "at" is not an RFC 3339 time (badAt is the error).
func eventOf(w eventJSON) (ev gateway.Event, ok bool) {
	ev = w.Event
	ev.At = nil
	if w.At != nil {
		t, err := parseTime(*w.At)
		if err != nil {
			return gateway.Event{}, false
		}
		ev.At = &t
	}
	return ev, true
}
