package gateway

import (
	"encoding/json"
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
		{"partial", Page{ReadMeta: ReadMeta{Board: "b", Source: SourceReplica, AsOf: at, Partial: true, Missing: []int{3, 7}},
			Entries: []rank.Entry{{User: "u2", Points: -4, Position: 5, Rank: 6}}}},
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
