package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/audit"
)

// TestAuditStreamPages: more entries than a page, read newest first by
// cursor, come out each exactly once, in reverse order of appending; a
// cursor that is no stream id is ErrBadCursor; the stream is capped near
// maxLen (MAXLEN ~ trims whole nodes of 100 entries).
func TestAuditStreamPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t, 30*time.Second)
	const n, maxLen = 23, 1000
	a := e.s.AuditStream(e.layout.Audit(), maxLen)
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	for i := range n {
		err := a.Append(ctx, audit.Entry{At: at.Add(time.Duration(i) * time.Millisecond), Operator: "ADMIN", DeclaredOperator: "ops@x",
			Action: audit.ActionMemberBan, Target: fmt.Sprintf("member:u%02d", i), Reason: "r"})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, limit := range []int{1, 5, 23, 50} {
		var got []string
		cursor, pages := "", 0
		for {
			es, next, err := a.Entries(ctx, limit, cursor)
			if err != nil {
				t.Fatalf("limit %d, cursor %q: %v", limit, cursor, err)
			}
			if len(es) > limit || (next != "" && len(es) != limit) {
				t.Fatalf("limit %d: a page of %d with next %q", limit, len(es), next)
			}
			for _, x := range es {
				got = append(got, x.Target)
				if x.Operator != "ADMIN" || x.DeclaredOperator != "ops@x" || x.Action != audit.ActionMemberBan || x.Reason != "r" {
					t.Fatalf("entry %+v", x)
				}
			}
			pages++
			if cursor = next; cursor == "" {
				break
			}
		}
		if len(got) != n {
			t.Fatalf("limit %d: %d entries in %d pages, want %d: %v", limit, len(got), pages, n, got)
		}
		for i, tg := range got {
			if want := fmt.Sprintf("member:u%02d", n-1-i); tg != want {
				t.Fatalf("limit %d: entry %d is %s, want %s (newest first, no repeat, no gap)", limit, i, tg, want)
			}
		}
	}
	es, _, err := a.Entries(ctx, 1, "")
	if err != nil || len(es) != 1 || !es[0].At.Equal(at.Add((n-1)*time.Millisecond)) {
		t.Fatalf("newest: %+v %v, want at %v", es, err, at.Add((n-1)*time.Millisecond))
	}
	for _, bad := range []string{"x", "12", "1-2-3", "(1-0", "-"} {
		if _, _, err := a.Entries(ctx, 5, bad); !errors.Is(err, audit.ErrBadCursor) {
			t.Errorf("cursor %q: %v, want ErrBadCursor", bad, err)
		}
	}

	capped := e.s.AuditStream(e.layout.Audit()+":capped", 100)
	for i := range 450 {
		if err := capped.Append(ctx, audit.Entry{At: at, Operator: "A", Action: audit.ActionMemberUnban, Target: fmt.Sprint("member:c", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if l := e.c.XLen(ctx, e.layout.Audit()+":capped").Val(); l < 100 || l > 200 {
		t.Fatalf("capped at 100: XLEN %d, want 100..200", l)
	}
}

// TestAuditStreamKeepsNoClearErasedID: an erasure recorded through the
// Log reaches the stream as the keyed hash only — no field of any entry
// holds the member id — and one naming it in the clear is refused before
// Redis.
func TestAuditStreamKeepsNoClearErasedID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t, 15*time.Second)
	key := e.layout.Audit()
	secret := []byte(strings.Repeat("k", 32))
	l, err := audit.New(e.s.AuditStream(key, 1000), audit.Options{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	const member = "erased-7f3a"
	target, err := l.MemberTarget(member)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Record(ctx, audit.Entry{Operator: "ADMIN", Action: audit.ActionMemberErase, Target: target, Reason: "asked to be forgotten"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Record(ctx, audit.Entry{Operator: "ADMIN", Action: audit.ActionMemberErase, Target: "member:" + member}); !errors.Is(err, audit.ErrClearMember) {
		t.Fatalf("clear erasure: %v, want ErrClearMember", err)
	}
	msgs, err := e.c.XRange(ctx, key, "-", "+").Result()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("XRANGE: %d entries, %v; want 1", len(msgs), err)
	}
	for k, v := range msgs[0].Values {
		if strings.Contains(k, member) || strings.Contains(fmt.Sprint(v), member) {
			t.Fatalf("field %s=%v holds the erased id", k, v)
		}
	}
	if msgs[0].Values["tgt"] != audit.MemberTarget(secret, member) {
		t.Fatalf("stored target %v, want the keyed hash", msgs[0].Values["tgt"])
	}
}
