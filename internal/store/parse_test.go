package store_test

import (
	"testing"

	"github.com/rankgate/rankgate/internal/store"
)

func TestParseScore(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		want int64
		ok   bool
	}{
		{"integer", "1250", 1250, true},
		{"negative integer", "-1250", -1250, true},
		{"zero", "0", 0, true},
		{"negative zero", "-0", 0, true},
		{"2^53", "9007199254740992", 9007199254740992, true},
		{"-2^53", "-9007199254740992", -9007199254740992, true},
		{"2^53 + 1 is refused", "9007199254740993", 0, false},
		{"-2^53 - 1 is refused", "-9007199254740993", 0, false},
		{"int64 max is refused", "9223372036854775807", 0, false},
		{"exponent form", "1e+15", 1_000_000_000_000_000, true},
		{"negative exponent form", "-1.25e+3", -1250, true},
		{"exponent form at 2^53", "9.007199254740992e+15", 9007199254740992, true},
		{"exponent form beyond 2^53", "1e+16", 0, false},
		{"integral float", "3.0", 3, true},
		{"fraction", "1.5", 0, false},
		{"tiny fraction", "1e-300", 0, false},
		{"nan", "nan", 0, false},
		{"NaN", "NaN", 0, false},
		{"inf", "inf", 0, false},
		{"+inf", "+inf", 0, false},
		{"-inf", "-inf", 0, false},
		{"empty", "", 0, false},
		{"garbage", "12a", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := store.ParseScore(tc.in)
			if tc.ok {
				if err != nil || got != tc.want {
					t.Errorf("ParseScore(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
				}
			} else if err == nil {
				t.Errorf("ParseScore(%q) = %d, want an error", tc.in, got)
			}
		})
	}
}
