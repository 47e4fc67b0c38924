package audit_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/audit"
	"github.com/rankgate/rankgate/internal/rank"
)

// memBackend keeps entries in memory, newest last; err, when set, fails
// every call.
type memBackend struct {
	mu      sync.Mutex
	entries []audit.Entry
	err     error
}

func (m *memBackend) Append(_ context.Context, e audit.Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	m.entries = append(m.entries, e)
	return nil
}

func (m *memBackend) Entries(_ context.Context, limit int, cursor string) ([]audit.Entry, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, "", m.err
	}
	if cursor == "bad" {
		return nil, "", audit.ErrBadCursor
	}
	var out []audit.Entry
	for i := len(m.entries) - 1; i >= 0 && len(out) < limit; i-- {
		out = append(out, m.entries[i])
	}
	return out, "", nil
}

var secret = []byte("0123456789abcdef0123456789abcdef")

// TestMemberTarget pins the keyed hash to an independent computation
// (Python's hmac module: hmac.new(secret, b"u42", sha256).hexdigest()), and
// checks it depends on the key and the member.
func TestMemberTarget(t *testing.T) {
	t.Parallel()
	const want = "member:hmac-sha256:89ae11c3ae87ddd074a9423fc44dd5c1d8fb8b3248662f30f1b0d2370463c83d"
	if got := audit.MemberTarget(secret, "u42"); got != want {
		t.Fatalf("MemberTarget = %s, want %s", got, want)
	}
	other := append([]byte(nil), secret...)
	other[0] ^= 1
	if audit.MemberTarget(other, "u42") == want || audit.MemberTarget(secret, "u43") == want {
		t.Fatal("the hash does not depend on the key and the member")
	}
	if strings.Contains(want, "u42") {
		t.Fatal("the target holds the clear id")
	}
}

func newLog(t *testing.T, be audit.Backend, o audit.Options) (*audit.Log, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	l, err := audit.New(be, o)
	if err != nil {
		t.Fatal(err)
	}
	return l, reg
}

// TestRecordChecksAndCounts: a good entry is stored once with its time set
// and counted by action; a bad one (unknown action, an erasure naming the
// member in the clear, bad operator) is not stored, is counted as a failure
// and returned; a backend failure is counted and returned.
func TestRecordChecksAndCounts(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	erase := audit.MemberTarget(secret, "u42")
	cases := []struct {
		title     string
		e         audit.Entry
		beErr     error
		wantErr   error // nil: stored
		wantCount string
	}{
		{title: "removal", e: audit.Entry{Operator: "ADMIN", Action: audit.ActionMemberRemove, Target: "board:l/current/national member:u1", Reason: "cheat"}, wantCount: audit.ActionMemberRemove},
		{title: "erasure by hash", e: audit.Entry{Operator: "ADMIN", Action: audit.ActionMemberErase, Target: erase}, wantCount: audit.ActionMemberErase},
		{title: "erasure of an unnamed member (no secret)", e: audit.Entry{Operator: "ADMIN", Action: audit.ActionMemberErase, Target: audit.UnnamedMember}, wantCount: audit.ActionMemberErase},
		{title: "erasure in the clear", e: audit.Entry{Operator: "ADMIN", Action: audit.ActionMemberErase, Target: "member:u42"}, wantErr: audit.ErrClearMember, wantCount: audit.ActionMemberErase},
		{title: "erasure with an upper-case hash", e: audit.Entry{Operator: "ADMIN", Action: audit.ActionMemberErase, Target: strings.ToUpper(erase[:19]) + strings.ToUpper(erase[19:])}, wantErr: audit.ErrClearMember, wantCount: audit.ActionMemberErase},
		{title: "unknown action", e: audit.Entry{Operator: "ADMIN", Action: "drop.table", Target: "x"}, wantErr: errors.New("any"), wantCount: "unknown"},
		{title: "no operator", e: audit.Entry{Action: audit.ActionMemberBan, Target: "member:u1"}, wantErr: errors.New("any"), wantCount: audit.ActionMemberBan},
		{title: "control byte in reason", e: audit.Entry{Operator: "A", Action: audit.ActionMemberBan, Target: "member:u1", Reason: "a\nb"}, wantErr: errors.New("any"), wantCount: audit.ActionMemberBan},
		{title: "backend down", e: audit.Entry{Operator: "A", Action: audit.ActionPeriodFreeze, Target: "period:l/2026-W49"}, beErr: errors.New("redis down"), wantErr: errors.New("any"), wantCount: audit.ActionPeriodFreeze},
	}
	for _, c := range cases {
		t.Run(c.title, func(t *testing.T) {
			t.Parallel()
			be := &memBackend{err: c.beErr}
			l, reg := newLog(t, be, audit.Options{Now: func() time.Time { return at }})
			failures, err := reg.Gather()
			if err != nil || len(failures) != 2 {
				t.Fatalf("metrics: %d families, %v; want entries and failures", len(failures), err)
			}
			err = l.Record(context.Background(), c.e)
			ok := counter(t, reg, "rankgate_audit_entries_total", c.wantCount)
			bad := counter(t, reg, "rankgate_audit_failures_total", c.wantCount)
			if c.wantErr == nil {
				if err != nil || len(be.entries) != 1 || ok != 1 || bad != 0 {
					t.Fatalf("Record = %v; stored %d, counted %v ok %v failed; want stored once", err, len(be.entries), ok, bad)
				}
				if got := be.entries[0]; !got.At.Equal(at) || got.Action != c.e.Action || got.Target != c.e.Target {
					t.Fatalf("stored %+v", got)
				}
				return
			}
			if err == nil || len(be.entries) != 0 || ok != 0 || bad != 1 {
				t.Fatalf("Record = %v; stored %d, counted %v ok %v failed; want an error, nothing stored, one failure", err, len(be.entries), ok, bad)
			}
			if errors.Is(c.wantErr, audit.ErrClearMember) && !errors.Is(err, audit.ErrClearMember) {
				t.Fatalf("Record = %v, want ErrClearMember", err)
			}
		})
	}
}

// counter reads the counter of name with label action (0 when the series
// does not exist: an unknown action counts under "unknown" once used).
func counter(t *testing.T, reg *prometheus.Registry, name, action string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == action {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestListValidates: limit outside 1..1000 is 400 naming limit, a foreign
// cursor 400 invalid_cursor naming cursor, a backend failure 503.
func TestListValidates(t *testing.T) {
	t.Parallel()
	be := &memBackend{}
	l, _ := newLog(t, be, audit.Options{})
	for i := range 60 {
		if err := l.Record(context.Background(), audit.Entry{Operator: "A", Action: audit.ActionMemberUnban, Target: "member:u" + string(rune('a'+i%26))}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		title     string
		limit     int
		cursor    string
		beErr     error
		wantCode  rank.Code
		wantField string
		wantLen   int
	}{
		{title: "fifty", limit: audit.DefaultLimit, wantLen: audit.DefaultLimit},
		{title: "zero", limit: 0, wantCode: rank.CodeInvalidArgument, wantField: "limit"},
		{title: "one", limit: 1, wantLen: 1},
		{title: "max", limit: audit.MaxLimit, wantLen: 60},
		{title: "zero below", limit: -1, wantCode: rank.CodeInvalidArgument, wantField: "limit"},
		{title: "over max", limit: audit.MaxLimit + 1, wantCode: rank.CodeInvalidArgument, wantField: "limit"},
		{title: "foreign cursor", limit: 5, cursor: "bad", wantCode: rank.CodeInvalidCursor, wantField: "cursor"},
	}
	for _, c := range cases {
		p, err := l.List(context.Background(), c.limit, c.cursor)
		if c.wantCode == "" {
			if err != nil || len(p.Entries) != c.wantLen {
				t.Errorf("%s: %d entries, %v; want %d", c.title, len(p.Entries), err, c.wantLen)
			}
			continue
		}
		var re *rank.Error
		if !errors.As(err, &re) || re.Code != c.wantCode || re.Field != c.wantField {
			t.Errorf("%s: %v; want %s naming %s", c.title, err, c.wantCode, c.wantField)
		}
	}
	be.err = errors.New("down")
	if _, err := l.List(context.Background(), 5, ""); rank.CodeOf(err) != rank.CodeUnavailable {
		t.Errorf("backend down: %v, want unavailable", err)
	}
}

// TestErasureEntry: the erasure entry names the member by its hash only,
// even where the request's reason or declared operator named it; Record
// takes it.
func TestErasureEntry(t *testing.T) {
	t.Parallel()
	be := &memBackend{}
	l, _ := newLog(t, be, audit.Options{Secret: secret})
	target, err := l.MemberTarget("u42")
	if err != nil {
		t.Fatal(err)
	}
	e := audit.Erasure(target, "u42", "support for u42", "u42 asked to be forgotten (ticket u42-1)")
	e.Operator = "ADMIN"
	if err := l.Record(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	got := be.entries[0]
	if got.Action != audit.ActionMemberErase || got.Target != target || got.Reason != "[member] asked to be forgotten (ticket [member]-1)" ||
		got.DeclaredOperator != "support for [member]" {
		t.Fatalf("stored %+v", got)
	}
	for _, f := range []string{got.Operator, got.DeclaredOperator, got.Action, got.Target, got.Reason} {
		if strings.Contains(f, "u42") {
			t.Fatalf("field %q holds the member id", f)
		}
	}
}

// TestSecret: a short secret is refused; without one, the Log's
// MemberTarget is ErrNoSecret; with one, it is the package's.
func TestSecret(t *testing.T) {
	t.Parallel()
	if _, err := audit.New(&memBackend{}, audit.Options{Secret: []byte("short")}); err == nil {
		t.Fatal("a 5-byte secret was accepted")
	}
	l, _ := newLog(t, &memBackend{}, audit.Options{})
	if _, err := l.MemberTarget("u42"); !errors.Is(err, audit.ErrNoSecret) {
		t.Fatalf("no secret: %v", err)
	}
	l, _ = newLog(t, &memBackend{}, audit.Options{Secret: secret})
	if got, err := l.MemberTarget("u42"); err != nil || got != audit.MemberTarget(secret, "u42") {
		t.Fatalf("MemberTarget = %q, %v", got, err)
	}
}
