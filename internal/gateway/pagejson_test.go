package gateway

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/rank"
)

// The hand-written page encoding must equal what encoding/json writes.
func TestPageMarshalJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 12, 0, 0, 123, time.UTC)
	cases := []struct {
		title string
		p     Page
	}{
		{"empty", Page{ReadMeta: ReadMeta{Board: "f/all/national", Source: SourcePrimary, AsOf: at}}},
		{"entries and cursor", Page{ReadMeta: ReadMeta{Board: "f/2026-W48/province:zj", Source: SourceCache, AsOf: at},
			Entries:    []rank.Entry{{User: "u1", Points: 9, Position: 0, Rank: 1, Profile: map[string]string{"name": "A \"q\" \x01 é"}}},
			NextCursor: "AQID"}},
		{"partial", Page{ReadMeta: ReadMeta{Board: "b", Source: SourceReplica, AsOf: at, Partial: true, MissingShards: []int{3, 7}},
			Entries: []rank.Entry{{User: "u2", Points: -4, Position: 5, Rank: 6}}}},
		{"index with its lag", Page{ReadMeta: ReadMeta{Board: "b", Source: SourceIndex, AsOf: at, LagMs: ptr(int64(37))},
			Entries: []rank.Entry{{User: "u3", Points: 1, Position: 0, Rank: 1}}}},
		{"index without lag", Page{ReadMeta: ReadMeta{Board: "b", Source: SourceIndex, AsOf: at, LagMs: ptr(int64(0))}}},
	}
	for _, c := range cases {
		t.Run(c.title, func(t *testing.T) {
			t.Parallel()
			type plain struct {
				ReadMeta
				Entries    []rank.Entry `json:"entries"`
				NextCursor string       `json:"next_cursor,omitempty"`
			}
			pe := c.p.Entries
			if pe == nil {
				pe = []rank.Entry{}
			}
			want, _ := json.Marshal(plain{c.p.ReadMeta, pe, c.p.NextCursor})
			for _, pre := range []bool{false, true} {
				p := c.p
				if pre {
					p.entriesJSON, _ = encodeEntries(p)
				}
				got, err := json.Marshal(p)
				if err != nil {
					t.Fatal(err)
				}
				var g, w any
				_ = json.Unmarshal(got, &g)
				_ = json.Unmarshal(want, &w)
				if !reflect.DeepEqual(g, w) {
					t.Fatalf("pre=%v\n got %s\nwant %s", pre, got, want)
				}
			}
		})
	}
}

// sameJSON: got and want decode to the same value.
func sameJSON(t *testing.T, what string, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v in %s", what, err, got)
	}
	_ = json.Unmarshal(want, &w)
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// The hand-written standing encoding must equal what encoding/json writes.
func TestMemberStandingMarshalJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 17, 0, 0, 5, time.UTC)
	meta := ReadMeta{Board: "fan16/all/national", Source: SourcePrimary, AsOf: at}
	cases := []struct {
		title string
		m     MemberStanding
	}{
		{"plain", MemberStanding{ReadMeta: meta, User: "u0000001", Points: 8388607, Position: 0, Rank: 1, Members: 1000000, Percentile: 99.99}},
		{"zero percentile", MemberStanding{ReadMeta: meta, User: "a", Points: -5, Position: 9, Rank: 3, Members: 10}},
		{"tiny percentile", MemberStanding{ReadMeta: meta, User: "a", Percentile: 1e-7}},
		{"partial", MemberStanding{ReadMeta: ReadMeta{Board: "b", Source: SourceReplica, AsOf: at, Partial: true, MissingShards: []int{2, 9}}, User: "x.y@z-1", Rank: 2}},
		{"columns", MemberStanding{ReadMeta: meta, User: "c", Columns: map[string]int64{"wins": 3, "time": -40, "a": 0}}},
		{"profile", MemberStanding{ReadMeta: meta, User: "p", Profile: map[string]string{"name": "A \"q\" \x01 é <b>"}}},
		{"metadata", MemberStanding{ReadMeta: meta, User: "m", Metadata: json.RawMessage(`{"k": [1, 2]}`)}},
		{"index", MemberStanding{ReadMeta: ReadMeta{Board: "b", Source: SourceIndex, AsOf: at, LagMs: ptr(int64(12))}, User: "i", Rank: 4}},
	}
	for _, c := range cases {
		t.Run(c.title, func(t *testing.T) {
			t.Parallel()
			want, err := json.Marshal(memberJSON(c.m))
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(c.m)
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, c.title, got, want)
		})
	}
}

// appendJSONFloat writes floats as encoding/json does, byte for byte.
func TestAppendJSONFloat(t *testing.T) {
	t.Parallel()
	for _, f := range []float64{0, 1, -1, 12.34, 99.99, 100, 1e-6, 1e-7, 5e-324, 1e20, 1e21, 123456789e30, -2.5e-9} {
		want, _ := json.Marshal(f)
		got, err := appendJSONFloat(nil, f)
		if err != nil || string(got) != string(want) {
			t.Fatalf("%v: %s (%v), want %s", f, got, err, want)
		}
	}
}

// The hand-written entries equal encoding/json's, with columns, profiles,
// metadata and odd bytes in names.
func TestAppendEntries(t *testing.T) {
	t.Parallel()
	entries := []rank.Entry{
		{User: "u1", Points: 9, Position: 0, Rank: 1},
		{User: "u2", Points: -4, Position: 1, Rank: 2, Columns: map[string]int64{"b": 1, "a": -2}},
		{User: "u3", Points: 0, Position: 2, Rank: 2, Profile: map[string]string{"name": "A \"q\" \x01 é"}},
		{User: "u4 \\ \"", Points: 1 << 50, Position: 3, Rank: 4, Metadata: json.RawMessage(`{"x": 1}`)},
	}
	for n := 0; n <= len(entries); n++ {
		want, _ := json.Marshal(entries[:n])
		got, err := appendEntries(nil, entries[:n])
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, fmt.Sprintf("%d entries", n), got, want)
	}
}

// BenchmarkAnswerJSON: a standing and an uncached Top-100 page, hand-written
// against encoding/json in the same run.
func BenchmarkAnswerJSON(b *testing.B) {
	meta := ReadMeta{Board: "fan16/all/national", Source: SourcePrimary, AsOf: time.Now()}
	m := MemberStanding{ReadMeta: meta, User: "u0123456", Points: 4123456, Position: 501234, Rank: 501230, Members: 1000000, Percentile: 49.87}
	entries := make([]rank.Entry, 100)
	for i := range entries {
		entries[i] = rank.Entry{User: fmt.Sprintf("u%07d", i*7919), Points: 8388607 - int64(i), Position: int64(i), Rank: int64(i) + 1}
	}
	page := Page{ReadMeta: meta, Entries: entries}
	type plainPage struct {
		ReadMeta
		Entries    []rank.Entry `json:"entries"`
		NextCursor string       `json:"next_cursor,omitempty"`
	}
	for _, c := range []struct {
		name string
		f    func() ([]byte, error)
	}{
		{"member/hand", m.MarshalJSON},
		{"member/encoding_json", func() ([]byte, error) { return json.Marshal(memberJSON(m)) }},
		{"top100/hand", page.MarshalJSON},
		{"top100/encoding_json", func() ([]byte, error) { return json.Marshal(plainPage{page.ReadMeta, page.Entries, ""}) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := c.f(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A cache hit's body (HitJSON) is the page's JSON and a newline, made once
// and shared by every hit; every other page has none; the JSON handed out
// has no spare capacity, so that a caller appending to it copies it.
func TestPageHitJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 12, 0, 0, 123, time.UTC)
	base := Page{ReadMeta: ReadMeta{Board: "f/all/national", Source: SourceCache, AsOf: at},
		Entries: []rank.Entry{{User: "u1", Points: 9, Position: 0, Rank: 1}, {User: "u2", Points: 7, Position: 1, Rank: 2}}}
	want, err := base.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	entries, err := encodeEntries(base)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		title  string
		p      Page
		wantOK bool
	}{
		{"cache hit", Page{ReadMeta: base.ReadMeta, Entries: base.Entries, entriesJSON: entries, hit: &lazyBody{}}, true},
		{"no hit body", base, false},
		{"loaded, not from the cache", Page{ReadMeta: ReadMeta{Board: "f/all/national", Source: SourcePrimary, AsOf: at},
			Entries: base.Entries, entriesJSON: entries, hit: &lazyBody{}}, false},
	}
	for _, c := range cases {
		t.Run(c.title, func(t *testing.T) {
			t.Parallel()
			body, length, ok, err := c.p.HitJSON()
			if err != nil || ok != c.wantOK {
				t.Fatalf("HitJSON: ok %v, err %v; want ok %v", ok, err, c.wantOK)
			}
			if !ok {
				if body != nil || length != nil {
					t.Fatalf("no hit, yet body %q, length %v", body, length)
				}
				return
			}
			if string(body) != string(want) {
				t.Fatalf("body\n%s\nwant\n%s", body, want)
			}
			if len(length) != 1 || length[0] != fmt.Sprint(len(want)) {
				t.Fatalf("Content-Length %v, want [%d]", length, len(want))
			}
			// Copies of the page share the bytes, made once.
			q := c.p
			q.MaxAge = time.Second
			body2, length2, _, _ := q.HitJSON()
			if &body2[0] != &body[0] || &length2[0] != &length[0] {
				t.Fatal("a copy of the hit encoded its body again")
			}
			j, err := c.p.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if cap(j) != len(j) {
				t.Fatalf("the shared JSON has spare capacity (%d > %d): an append would write into it", cap(j), len(j))
			}
		})
	}
}

// Hits served at once read the same shared bytes (run with -race).
func TestPageHitJSONConcurrent(t *testing.T) {
	t.Parallel()
	p := Page{ReadMeta: ReadMeta{Board: "f/all/national", Source: SourceCache, AsOf: time.Unix(0, 0).UTC()},
		Entries: []rank.Entry{{User: "u1", Points: 9, Position: 0, Rank: 1}}, hit: &lazyBody{}}
	var err error
	if p.entriesJSON, err = encodeEntries(p); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 8)
	for range 8 {
		go func() {
			b, _ := p.MarshalJSON()
			b = append(b, '\n') // what a caller of MarshalJSON may do
			body, _, _, _ := p.HitJSON()
			done <- string(b) + string(body)
		}()
	}
	first := <-done
	for range 7 {
		if got := <-done; got != first {
			t.Fatalf("hits answered %q and %q", first, got)
		}
	}
}
