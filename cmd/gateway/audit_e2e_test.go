package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rankgate/rankgate/client"
	"github.com/rankgate/rankgate/internal/apitest"
	"github.com/rankgate/rankgate/internal/audit"
	"github.com/rankgate/rankgate/internal/httpapi"
	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/testpg"
	"github.com/rankgate/rankgate/internal/teststack"
)

// The audit log over HTTP: every administrative change made through the API
// leaves exactly one entry naming the token that made it, and GET
// /v1/audit pages through them newest first — in Redis-only mode (the
// capped stream) and in ledger mode (PostgreSQL), every exchange checked
// against api/openapi.yaml.

// Tokens of the audit tests: two admin tokens (the operator is the one
// that asked), a read-only one.
var auditTokens = []httpapi.Token{
	{Name: "ADMIN_TOKEN", Secret: "admin-secret-0001", Scopes: []string{"read", "write", "admin"}},
	{Name: "OPS_TOKEN", Secret: "ops-secret-0002", Scopes: []string{"admin"}},
	{Name: "READ_TOKEN", Secret: "read-secret-0003", Scopes: []string{"read"}},
}

// auditFamilies adds a derived family (and its input) to e2eFamilies.
const auditFamilies = `  dbase:
    period: all
    key_group: dseason
    max_points: 1000
    dimensions:
      national: {shards: 2}
  dfinal:
    source: derived
    period: all
    key_group: dseason
    rank: competition
    max_points: 1000
    derived_from:
      inputs:
        - {family: dbase}
    dimensions:
      national: {shards: 2}
`

// bearer adds a token to every request.
type bearer struct {
	secret string
	next   http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.secret)
	return b.next.RoundTrip(r)
}

// auditGateways serves the stack (ledger mode with l) and returns one
// contract-checked client per token of auditTokens.
// auditSecret keys the hash of erased members in the ledger-mode test.
const auditSecret = "an-audit-secret-of-32-bytes-or-more"

func auditGateways(t *testing.T, l *ledger.Ledger) (admin, ops, reader *gw) {
	t.Helper()
	o := teststack.Options{Families: e2eFamilies + auditFamilies, Tokens: auditTokens}
	if l != nil {
		// Ledger mode runs with a secret: erasures name the member by its
		// keyed hash; Redis-only mode without one: by no name.
		o.Ledger, o.Audit, o.AuditSecret = l, l.AuditLog(), []byte(auditSecret)
	}
	stack := teststack.New(t, o)
	srv := httptest.NewServer(stack.Handler)
	t.Cleanup(srv.Close)
	checker, err := apitest.New()
	if err != nil {
		t.Fatal(err)
	}
	g := func(secret string) *gw {
		return &gw{base: srv.URL, api: checker, client: &http.Client{Transport: checker.Transport(bearer{secret: secret, next: http.DefaultTransport})}}
	}
	return g(auditTokens[0].Secret), g(auditTokens[1].Secret), g(auditTokens[2].Secret)
}

type auditEntry struct {
	At               time.Time `json:"at"`
	Operator         string    `json:"operator"`
	DeclaredOperator string    `json:"declared_operator"`
	Action           string    `json:"action"`
	Target           string    `json:"target"`
	Reason           string    `json:"reason"`
}

type auditPage struct {
	Entries    []auditEntry `json:"entries"`
	NextCursor string       `json:"next_cursor"`
}

// auditStep is one request and the entry it must leave (action "": none).
type auditStep struct {
	title        string
	g            *gw
	method, path string
	body         any
	status       int
	// The entry it leaves; none when action is "".
	operator, declared, action, target, reason string
	// late, when set, fills path and target just before the step runs
	// (from what earlier steps made).
	late func(s *auditStep)
}

// runAuditSteps sends each step and checks, after each, that the newest
// entry is the step's own (or that nothing was added), then pages through
// the whole log two at a time and compares it with pre (what the log held
// before, oldest first) and the steps' entries, newest first: each change
// exactly once, nothing else.
func runAuditSteps(t *testing.T, admin *gw, pre []auditEntry, steps []auditStep) {
	t.Helper()
	want := append([]auditEntry(nil), pre...)
	newest := func() (auditEntry, bool) {
		var p auditPage
		admin.ok(t, "GET", "/v1/audit?limit=1", nil, &p)
		if len(p.Entries) == 0 {
			return auditEntry{}, false
		}
		return p.Entries[0], true
	}
	for _, s := range steps {
		if s.late != nil {
			s.late(&s)
		}
		before, _ := newest()
		start := time.Now()
		if r := s.g.do(t, s.method, s.path, s.body); r.status != s.status {
			t.Fatalf("%s: %s %s = %s, want %d", s.title, s.method, s.path, r, s.status)
		}
		got, ok := newest()
		if s.action == "" {
			if ok && got != before {
				t.Fatalf("%s: recorded %+v, want nothing", s.title, got)
			}
			continue
		}
		w := auditEntry{Operator: s.operator, DeclaredOperator: s.declared, Action: s.action, Target: s.target, Reason: s.reason}
		at := got.At
		got.At = time.Time{}
		if !ok || got != w {
			t.Fatalf("%s: newest entry %+v, want %+v", s.title, got, w)
		}
		if at.Before(start.Add(-time.Second)) || at.After(time.Now().Add(time.Second)) {
			t.Fatalf("%s: at %v, want about now", s.title, at)
		}
		want = append(want, w)
	}
	var all []auditEntry
	cursor, pages := "", 0
	for {
		var p auditPage
		path := "/v1/audit?limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		admin.ok(t, "GET", path, nil, &p)
		pages++
		for _, e := range p.Entries {
			e.At = time.Time{}
			all = append(all, e)
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if len(all) != len(want) || pages < 2 {
		t.Fatalf("the log holds %d entries in %d pages, want %d (over more than one page): %+v", len(all), pages, len(want), all)
	}
	for i := range all {
		if w := want[len(want)-1-i]; all[i] != w {
			t.Fatalf("entry %d = %+v, want %+v (newest first, each once)", i, all[i], w)
		}
	}
}

// auditRefusals: GET /v1/audit validates limit and cursor (400 naming the
// field) and needs admin.
func auditRefusals(t *testing.T, admin, reader *gw) {
	t.Helper()
	admin.wantErr(t, "GET", "/v1/audit?limit=0", nil, 400, "invalid_argument", "limit")
	admin.wantErr(t, "GET", "/v1/audit?limit=1001", nil, 400, "invalid_argument", "limit")
	admin.wantErr(t, "GET", "/v1/audit?limit=x", nil, 400, "invalid_argument", "limit")
	admin.wantErr(t, "GET", "/v1/audit?cursor=nope", nil, 400, "invalid_cursor", "cursor")
	reader.wantErr(t, "GET", "/v1/audit", nil, 403, "forbidden", "")
}

func auditTournament(id string) map[string]any {
	now := time.Now().UTC()
	return map[string]any{"id": id, "start": now.Add(time.Hour).Format(time.RFC3339), "end": now.Add(2 * time.Hour).Format(time.RFC3339), "max_size": 10}
}

// Redis-only mode: removals, bans, tournaments and a freeze, each recorded
// once with its operator, target and reason; refused changes record
// nothing.
func TestAuditRecordsAdminChangesRedisOnly(t *testing.T) {
	t.Parallel()
	admin, ops, reader := auditGateways(t, nil)
	for _, ev := range []map[string]any{modEvent("a1", "au1", 30), modEvent("a2", "au2", 20)} {
		admin.ok(t, "POST", "/v1/events", ev, nil)
	}
	period := "period:learning/" + currentWeek()
	runAuditSteps(t, admin, nil, []auditStep{
		{title: "an event is no admin change", g: admin, method: "POST", path: "/v1/events", body: modEvent("a3", "au3", 1), status: 200},
		{title: "removal", g: ops, method: "DELETE", path: lb("national") + "/members/au1", body: map[string]any{"operator": "ops@x", "reason": "cheating"}, status: 200,
			operator: "OPS_TOKEN", declared: "ops@x", action: "member.remove", target: "board:learning/current/national member:au1", reason: "cheating"},
		{title: "a refused removal", g: ops, method: "DELETE", path: lb("national") + "/members/au1", body: map[string]any{"operator": "ops@x", "reason": "again"}, status: 404},
		{title: "bad input", g: ops, method: "DELETE", path: lb("national") + "/members/au2", body: map[string]any{"operator": "ops@x"}, status: 400},
		{title: "ban", g: admin, method: "PUT", path: "/v1/bans/au2", body: map[string]any{"operator": "mod@x", "reason": "bot", "families": []string{"learning"}}, status: 200,
			operator: "ADMIN_TOKEN", declared: "mod@x", action: "member.ban", target: "member:au2 families:learning", reason: "bot"},
		{title: "unban", g: ops, method: "DELETE", path: "/v1/bans/au2", status: 200,
			operator: "OPS_TOKEN", action: "member.unban", target: "member:au2"},
		{title: "unban of no ban", g: ops, method: "DELETE", path: "/v1/bans/au2", status: 404},
		{title: "tournament created", g: admin, method: "POST", path: "/v1/tournaments", body: auditTournament("audit-cup"), status: 201,
			operator: "ADMIN_TOKEN", action: "tournament.create", target: "tournament:audit-cup"},
		{title: "tournament cancelled", g: ops, method: "DELETE", path: "/v1/tournaments/audit-cup", status: 200,
			operator: "OPS_TOKEN", action: "tournament.cancel", target: "tournament:audit-cup"},
		{title: "derive", g: ops, method: "POST", path: "/v1/periods/dfinal/current/derive", status: 200,
			operator: "OPS_TOKEN", action: "period.derive", target: "period:dfinal/all"},
		{title: "derive of a family that is not derived", g: ops, method: "POST", path: "/v1/periods/learning/current/derive", status: 409},
		{title: "freeze", g: admin, method: "POST", path: "/v1/periods/learning/current/freeze", status: 200,
			operator: "ADMIN_TOKEN", action: "period.freeze", target: period},
		{title: "erasure, without a secret: the member is named nowhere", g: ops, method: "DELETE", path: "/v1/members/au3",
			body: map[string]any{"operator": "dpo-au3@x", "reason": "au3 asked to be forgotten"}, status: 200,
			operator: "OPS_TOKEN", declared: "dpo-[member]@x", action: "member.erase", target: audit.UnnamedMember, reason: "[member] asked to be forgotten"},
		{title: "a read is no admin change", g: reader, method: "GET", path: "/v1/bans", status: 403},
	})
	auditRefusals(t, admin, reader)
}

// Ledger mode: the same kinds of change plus corrections, review decisions,
// rebuilds, settle and archive, kept in PostgreSQL.
func TestAuditRecordsAdminChangesLedger(t *testing.T) {
	t.Parallel()
	l, err := ledger.Open(context.Background(), testpg.DSN(t), ledger.Options{Schema: testpg.Schema(t), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	admin, ops, reader := auditGateways(t, l)
	for _, ev := range []map[string]any{modEvent("a1", "au1", 30), modEvent("a2", "au2", 20)} {
		admin.ok(t, "POST", "/v1/events", ev, nil)
	}
	// A banned member's event is kept for review: the review to decide.
	admin.ok(t, "PUT", "/v1/bans/au9", map[string]any{"operator": "mod@x", "reason": "bot"}, nil)
	admin.wantErr(t, "POST", "/v1/events", modEvent("a9", "au9", 5), 403, "member_banned", "")
	var reviews struct {
		Reviews []struct {
			ID string `json:"id"`
		} `json:"reviews"`
	}
	admin.ok(t, "GET", "/v1/reviews?family=learning", nil, &reviews)
	if len(reviews.Reviews) != 1 {
		t.Fatalf("reviews: %+v, want the banned member's event", reviews)
	}
	rid := reviews.Reviews[0].ID
	// The setup's ban is in the log already.
	var pre auditPage
	admin.ok(t, "GET", "/v1/audit", nil, &pre)
	if len(pre.Entries) != 1 || pre.Entries[0].Action != "member.ban" {
		t.Fatalf("after the setup: %+v, want the ban alone", pre.Entries)
	}
	week := currentWeek()
	correction := map[string]any{"correction_id": "fix-1", "family": "learning", "user": "au2", "delta": 5, "operator": "ops@x", "reason": "typo"}
	steps := []auditStep{
		{title: "removal", g: ops, method: "DELETE", path: lb("national") + "/members/au1", body: map[string]any{"operator": "ops@x", "reason": "cheating"}, status: 200,
			operator: "OPS_TOKEN", declared: "ops@x", action: "member.remove", target: "board:learning/current/national member:au1", reason: "cheating"},
		{title: "correction", g: admin, method: "POST", path: "/v1/corrections", body: correction, status: 200,
			operator: "ADMIN_TOKEN", declared: "ops@x", action: "correction", target: "correction:fix-1 period:learning/" + week + " member:au2", reason: "typo"},
		{title: "the same correction again changes nothing", g: admin, method: "POST", path: "/v1/corrections", body: correction, status: 200},
		{title: "review rejected", g: ops, method: "POST", path: "/v1/reviews/" + rid + "/decision", body: map[string]any{"family": "learning", "operator": "rev@x", "accept": false}, status: 200,
			operator: "OPS_TOKEN", declared: "rev@x", action: "review.reject", target: "review:" + rid + " period:learning/current"},
		{title: "rebuild", g: admin, method: "POST", path: lb("national") + "/rebuild", status: 200,
			operator: "ADMIN_TOKEN", action: "board.rebuild", target: "board:" + bn("national")},
		{title: "freeze", g: ops, method: "POST", path: "/v1/periods/learning/current/freeze", status: 200,
			operator: "OPS_TOKEN", action: "period.freeze", target: "period:learning/" + week},
		{title: "settle", g: admin, method: "POST", path: "/v1/periods/learning/current/settle", body: map[string]any{"top": 10}, status: 200,
			operator: "ADMIN_TOKEN", action: "period.settle", target: "period:learning/" + week},
		{title: "award sent again", g: ops, method: "POST", status: 200, operator: "OPS_TOKEN", action: "award.retry",
			late: func(s *auditStep) {
				var aw struct {
					Awards []struct {
						Key string `json:"idempotency_key"`
					} `json:"awards"`
				}
				admin.ok(t, "GET", "/v1/awards?family=learning", nil, &aw)
				if len(aw.Awards) == 0 {
					t.Fatal("the settlement left no award")
				}
				s.path, s.target = "/v1/awards/"+aw.Awards[0].Key+"/retry", "award:"+aw.Awards[0].Key
			}},
		{title: "archive", g: ops, method: "POST", path: "/v1/periods/learning/current/archive", status: 200,
			operator: "OPS_TOKEN", action: "period.archive", target: "period:learning/" + week},
		{title: "erasure: the member only by its keyed hash", g: admin, method: "DELETE", path: "/v1/members/au2",
			body: map[string]any{"operator": "dpo@x", "reason": "au2 asked to be forgotten"}, status: 200,
			operator: "ADMIN_TOKEN", declared: "dpo@x", action: "member.erase", target: audit.MemberTarget([]byte(auditSecret), "au2"), reason: "[member] asked to be forgotten"},
	}
	runAuditSteps(t, admin, []auditEntry{{Operator: "ADMIN_TOKEN", DeclaredOperator: "mod@x", Action: "member.ban", Target: "member:au9", Reason: "bot"}}, steps)
	auditRefusals(t, admin, reader)

	// The Go client pages the same log.
	c, err := client.New(admin.base, client.WithHTTPClient(&http.Client{Transport: bearer{secret: auditTokens[0].Secret, next: http.DefaultTransport}}))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	cursor := ""
	for {
		p, err := c.Audit(context.Background(), 3, cursor)
		if err != nil {
			t.Fatal(err)
		}
		n += len(p.Entries)
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	// The setup's ban and every step's entry.
	if want := 1 + countEntries(steps); n != want {
		t.Fatalf("the Go client paged %d entries, want %d", n, want)
	}
	if _, err := c.Audit(context.Background(), 0, strings.Repeat("9", 3)+"x"); client.Code(err) != "invalid_cursor" {
		t.Fatalf("a bad cursor: %v", fmt.Sprint(err))
	}
}

// countEntries counts the steps that leave an entry.
func countEntries(steps []auditStep) int {
	n := 0
	for _, s := range steps {
		if s.action != "" {
			n++
		}
	}
	return n
}
