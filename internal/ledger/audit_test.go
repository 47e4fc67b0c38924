package ledger

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rankgate/rankgate/internal/audit"
)

// TestAuditLogPages: more entries than a page, read newest first by cursor
// at several page sizes, come out each exactly once in reverse order of
// appending, with every field; a cursor the table did not hand out is
// ErrBadCursor.
func TestAuditLogPages(t *testing.T) {
	t.Parallel()
	l := openTest(t)
	ctx := t.Context()
	a := l.AuditLog()
	const n = 23
	at := time.Date(2026, 12, 4, 10, 0, 0, 123456000, time.UTC)
	for i := range n {
		if err := a.Append(ctx, audit.Entry{At: at.Add(time.Duration(i) * time.Second), Operator: "ADMIN", DeclaredOperator: "ops@x",
			Action: audit.ActionCorrection, Target: fmt.Sprintf("correction:c%02d", i), Reason: "typo"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, limit := range []int{1, 5, 23, 50} {
		var got []audit.Entry
		cursor := ""
		for {
			es, next, err := a.Entries(ctx, limit, cursor)
			if err != nil {
				t.Fatalf("limit %d, cursor %q: %v", limit, cursor, err)
			}
			if len(es) > limit || (next != "" && len(es) != limit) {
				t.Fatalf("limit %d: a page of %d with next %q", limit, len(es), next)
			}
			got = append(got, es...)
			if cursor = next; cursor == "" {
				break
			}
		}
		if len(got) != n {
			t.Fatalf("limit %d: %d entries, want %d", limit, len(got), n)
		}
		for i, e := range got {
			k := n - 1 - i
			want := audit.Entry{At: at.Add(time.Duration(k) * time.Second), Operator: "ADMIN", DeclaredOperator: "ops@x",
				Action: audit.ActionCorrection, Target: fmt.Sprintf("correction:c%02d", k), Reason: "typo"}
			if !e.At.Equal(want.At) || e.At.Location() != time.UTC {
				t.Fatalf("limit %d: entry %d at %v, want %v UTC", limit, i, e.At, want.At)
			}
			e.At = want.At
			if e != want {
				t.Fatalf("limit %d: entry %d = %+v, want %+v (newest first, no repeat, no gap)", limit, i, e, want)
			}
		}
	}
	for _, bad := range []string{"x", "0", "-3", "01", "1-0", "99999999999999999999"} {
		if _, _, err := a.Entries(ctx, 5, bad); !errors.Is(err, audit.ErrBadCursor) {
			t.Errorf("cursor %q: %v, want ErrBadCursor", bad, err)
		}
	}
}

// TestAuditLogKeepsNoClearErasedID: an erasure recorded through the Log
// reaches the table as the keyed hash only — no column of any row holds
// the member id.
func TestAuditLogKeepsNoClearErasedID(t *testing.T) {
	t.Parallel()
	l := openTest(t)
	ctx := t.Context()
	secret := []byte(strings.Repeat("s", 32))
	lg, err := audit.New(l.AuditLog(), audit.Options{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	const member = "erased-91c2"
	target, err := lg.MemberTarget(member)
	if err != nil {
		t.Fatal(err)
	}
	if err := lg.Record(ctx, audit.Entry{Operator: "ADMIN", Action: audit.ActionMemberErase, Target: target, Reason: "asked to be forgotten"}); err != nil {
		t.Fatal(err)
	}
	if err := lg.Record(ctx, audit.Entry{Operator: "ADMIN", Action: audit.ActionMemberErase, Target: "member:" + member}); !errors.Is(err, audit.ErrClearMember) {
		t.Fatalf("clear erasure: %v, want ErrClearMember", err)
	}
	var rows []string
	err = l.withConn(ctx, func(c *pgx.Conn) error {
		r, err := c.Query(ctx, `SELECT audit_log::text FROM audit_log`)
		if err != nil {
			return err
		}
		rows, err = pgx.CollectRows(r, pgx.RowTo[string])
		return err
	})
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows %v, %v; want 1", rows, err)
	}
	if strings.Contains(rows[0], member) || !strings.Contains(rows[0], audit.MemberTarget(secret, member)) {
		t.Fatalf("row %s: want the keyed hash and not the id", rows[0])
	}
}
