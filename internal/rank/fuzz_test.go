package rank

import (
	"regexp"
	"strings"
	"testing"
)

// FuzzValidIDs: the id validators never panic, agree with the regular
// expressions of api/openapi.yaml, and nothing they accept can carry a hash
// tag brace, a key separator or a control byte into a Redis key.
func FuzzValidIDs(f *testing.F) {
	for _, s := range []string{
		"u1001", "a", "A.b@c-d_e", "province", "zhejiang", "2026-W34", "evt-8842", "evt:1/2",
		"", "{u1}", "u}1", "a:b", "a\x00b", "a\nb", "a\x7fb", "é", "\xff", "a b", "learning-2",
		strings.Repeat("x", 32), strings.Repeat("x", 33), strings.Repeat("x", 64), strings.Repeat("x", 65),
		strings.Repeat("x", 128), strings.Repeat("x", 129),
	} {
		f.Add(s)
	}
	validators := []struct {
		name  string
		valid func(string) bool
		re    *regexp.Regexp
		// colon: ':' may pass (event ids are hash fields, never key parts).
		colon bool
	}{
		{"family", ValidFamily, regexp.MustCompile(`^[a-z0-9_-]{1,32}$`), false},
		{"member", ValidMember, regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,64}$`), false},
		{"dimension value", ValidDimValue, regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`), false},
		{"dimension type", ValidDimType, regexp.MustCompile(`^[a-z0-9_]{1,32}$`), false},
		{"event id", ValidEventID, regexp.MustCompile(`^[A-Za-z0-9_.:@/-]{1,128}$`), true},
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, v := range validators {
			ok := v.valid(s)
			if want := v.re.MatchString(s); ok != want {
				t.Fatalf("%s: valid(%q) = %v, the documented pattern says %v", v.name, s, ok, want)
			}
			if !ok {
				continue
			}
			if strings.ContainsAny(s, "{}") || (!v.colon && strings.Contains(s, ":")) {
				t.Fatalf("%s: accepted %q, which holds a brace or a colon", v.name, s)
			}
			for i := 0; i < len(s); i++ {
				if c := s[i]; c < 0x21 || c > 0x7e {
					t.Fatalf("%s: accepted %q, which holds byte %#x", v.name, s, c)
				}
			}
		}
	})
}
