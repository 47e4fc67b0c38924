package gateway

import (
	"strings"
	"testing"

	"github.com/rankgate/rankgate/internal/rank"
)

// FuzzDecodeCursor: decodeCursor never panics; a cursor it accepts
// re-encodes to the very string it was given and decodes under no other
// scope; every cursor encodeCursor makes decodes back, under its own scope
// only.
func FuzzDecodeCursor(f *testing.F) {
	const entries = "entries\x00learning/2026-W34/national"
	const band = "range\x00learning/2026-W34/national\x0080\x00100"
	for _, c := range []struct {
		scope  string
		score  int64
		member string
	}{
		{entries, 1270<<30 + 5, "u1001"},
		{band, -1, "a"},
		{entries, rank.MaxSafe, strings.Repeat("z", 64)},
		{band, -rank.MaxSafe, "u.b@c-d_e"},
		{"", 0, "u1"},
	} {
		enc := encodeCursor(c.scope, cursor{Score: c.score, Member: c.member})
		f.Add(c.scope, enc, c.score, c.member)
		f.Add(c.scope, enc[:len(enc)-1], c.score, c.member)
		f.Add(c.scope+"x", enc, c.score, c.member)
	}
	// Other spellings of a valid cursor must be refused.
	valid := encodeCursor(entries, cursor{Score: 5, Member: "u1"})
	f.Add(entries, valid[:4]+"\n"+valid[4:], int64(5), "u1")
	f.Add(entries, valid+"\r\n", int64(5), "u1")
	f.Add(entries, valid[:len(valid)-1]+"R", int64(5), "u1")
	f.Add(entries, "", int64(0), "")
	f.Add(entries, "!!!!", int64(1)<<62, "{u1}")
	f.Add(entries, strings.Repeat("A", 201), int64(-1)<<63, "u:1")
	f.Fuzz(func(t *testing.T, scope, s string, score int64, member string) {
		if c, err := decodeCursor(scope, s, rank.ValidMember); err == nil {
			if !rank.ValidMember(c.Member) || c.Score > rank.MaxSafe || c.Score < -rank.MaxSafe {
				t.Fatalf("decodeCursor(%q) accepted %+v", s, c)
			}
			if again := encodeCursor(scope, c); again != s {
				t.Fatalf("decodeCursor(%q) = %+v, which encodes to %q: a second spelling was accepted", s, c, again)
			}
			if _, err := decodeCursor(scope+"\x00other", s, rank.ValidMember); err == nil {
				t.Fatalf("cursor %q decodes under a foreign scope", s)
			}
		} else if rank.CodeOf(err) != rank.CodeInvalidCursor {
			t.Fatalf("decodeCursor(%q): %v, want invalid_cursor", s, err)
		}

		if !rank.ValidMember(member) || score > rank.MaxSafe || score < -rank.MaxSafe {
			return
		}
		want := cursor{Score: score, Member: member}
		enc := encodeCursor(scope, want)
		got, err := decodeCursor(scope, enc, rank.ValidMember)
		if err != nil || got != want {
			t.Fatalf("round trip %+v → %q → %+v, %v", want, enc, got, err)
		}
		if other := scope + "x"; other != scope {
			if _, err := decodeCursor(other, enc, rank.ValidMember); err == nil {
				t.Fatalf("cursor of scope %q decodes under %q", scope, other)
			}
		}
	})
}
