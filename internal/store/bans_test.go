package store_test

import (
	"testing"
	"time"
)

// TestBansPutDeleteVersion pins the bans' storage: a put moves the version
// on, lifting returns the lifted ban and moves it on once, lifting an absent
// ban answers false and leaves the version (no gateway reloads for nothing).
func TestBansPutDeleteVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t, 15*time.Second)
	k := e.layout.Bans()

	version := func(want int64) {
		t.Helper()
		got, err := e.s.BanVersion(ctx, k)
		if err != nil {
			t.Fatalf("BanVersion: %v", err)
		}
		if got != want {
			t.Fatalf("version = %d, want %d", got, want)
		}
	}
	version(0)
	if v, err := e.s.PutBan(ctx, k, "u1", []byte(`{"reason":"bot"}`)); err != nil || v != 1 {
		t.Fatalf("PutBan u1 = %d, %v; want 1", v, err)
	}
	if v, err := e.s.PutBan(ctx, k, "u2", []byte(`{"reason":"spam"}`)); err != nil || v != 2 {
		t.Fatalf("PutBan u2 = %d, %v; want 2", v, err)
	}

	cases := []struct {
		name        string
		member      string
		wantOK      bool
		wantJSON    string
		wantVersion int64
		wantLeft    []string
	}{
		{"lift a ban", "u1", true, `{"reason":"bot"}`, 3, []string{"u2"}},
		{"lift it again", "u1", false, "", 3, []string{"u2"}},
		{"never banned", "u9", false, "", 3, []string{"u2"}},
		{"lift the last", "u2", true, `{"reason":"spam"}`, 4, nil},
	}
	for _, c := range cases { // sequential: each case starts where the last ended
		js, ok, err := e.s.DeleteBan(ctx, k, c.member)
		if err != nil {
			t.Fatalf("%s: DeleteBan: %v", c.name, err)
		}
		if ok != c.wantOK || string(js) != c.wantJSON {
			t.Fatalf("%s: DeleteBan = %q, %v; want %q, %v", c.name, js, ok, c.wantJSON, c.wantOK)
		}
		version(c.wantVersion)
		all, v, err := e.s.Bans(ctx, k)
		if err != nil {
			t.Fatalf("%s: Bans: %v", c.name, err)
		}
		if v != c.wantVersion || len(all) != len(c.wantLeft) {
			t.Fatalf("%s: Bans = %v at version %d; want members %v at %d", c.name, all, v, c.wantLeft, c.wantVersion)
		}
		for _, m := range c.wantLeft {
			if _, ok := all[m]; !ok {
				t.Fatalf("%s: ban of %s is gone; bans %v", c.name, m, all)
			}
		}
	}
}
