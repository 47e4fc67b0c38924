package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/rank"
)

// Tickets: a browser's EventSource cannot send an Authorization header, and a
// token in a URL ends up in proxy logs and browser history. So a client with
// a token asks POST /v1/tickets for a ticket and opens the stream with
// ?ticket=T: usable once, within the TTL, only on the routes TicketRoute
// names, with the scopes and the rate limit of the token that asked.
//
// A ticket is 32 bytes from crypto/rand, base64url without padding; the
// gateway that issued it keeps it (only its SHA-256) in memory until it is
// used or expires. Why not a self-contained signed ticket: single use needs
// a record of used tickets anyway, per gateway unless it is shared, so the
// signature would not free the client from coming back to the same gateway;
// a store is as cheap, bounded, and can say "unknown" without any key to
// manage. Behind a load balancer the ticket request and the stream go to
// the same gateway (session affinity); elsewhere the ticket answers 401.

// Defaults of TicketOptions.
const (
	DefaultTicketTTL  = time.Minute
	DefaultMaxTickets = 100_000
)

// ticketBytes is the entropy of a ticket: 256 bits.
const ticketBytes = 32

// TicketOptions configure NewTickets.
type TicketOptions struct {
	// TTL: a ticket not used within it is refused (config auth.tickets.ttl);
	// 0: DefaultTicketTTL.
	TTL time.Duration
	// MaxOutstanding bounds the tickets issued and neither used nor expired;
	// past it, issuing answers 503 unavailable. 0: DefaultMaxTickets.
	MaxOutstanding int
	// MaxPerToken bounds the outstanding tickets of one token (Principal
	// .Token), so that one client cannot hold the gateway's whole allowance;
	// past it, issuing answers 503 unavailable. 0: no bound of its own (the
	// gateway passes live.max_per_token: a token cannot use more tickets at
	// once than it may open streams).
	MaxPerToken int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Rand is the source of tickets; nil means crypto/rand.Reader.
	Rand io.Reader
	// Registerer takes the rankgate_tickets_* metrics; nil leaves them
	// unregistered.
	Registerer prometheus.Registerer
}

// Tickets issues and redeems tickets. Safe for concurrent use.
type Tickets struct {
	ttl    time.Duration
	max    int
	perMax int
	now    func() time.Time
	rand   io.Reader

	mu sync.Mutex
	// live holds the outstanding tickets by the SHA-256 of their bytes.
	live map[[sha256.Size]byte]ticket
	// perKey counts the outstanding tickets of each token (when perMax > 0).
	perKey map[string]int
	// order lists what was issued, oldest first, from head on; with one TTL
	// for all, that is expiry order, so sweeping stops at the first one
	// still valid. Used tickets stay in it until they expire.
	order []issued
	head  int

	issuedTotal prometheus.Counter
	refused     *prometheus.CounterVec
}

type ticket struct {
	p       Principal
	expires time.Time
}

type issued struct {
	hash    [sha256.Size]byte
	expires time.Time
}

// NewTickets builds a ticket store.
func NewTickets(o TicketOptions) (*Tickets, error) {
	t := &Tickets{ttl: o.TTL, max: o.MaxOutstanding, perMax: o.MaxPerToken, now: o.Now, rand: o.Rand,
		live: map[[sha256.Size]byte]ticket{}, perKey: map[string]int{},
		issuedTotal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rankgate_tickets_issued_total",
			Help: "Tickets issued by POST /v1/tickets.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_tickets_refused_total",
			Help: "Tickets refused: presented unknown (forged, used or swept), expired, or not issued because max outstanding were (full).",
		}, []string{"reason"}),
	}
	switch {
	case t.ttl < 0 || t.max < 0 || t.perMax < 0:
		return nil, fmt.Errorf("httpapi: ticket TTL %s, max outstanding %d and max per token %d must not be negative", t.ttl, t.max, t.perMax)
	case t.ttl == 0:
		t.ttl = DefaultTicketTTL
	}
	if t.max == 0 {
		t.max = DefaultMaxTickets
	}
	if t.now == nil {
		t.now = time.Now
	}
	if t.rand == nil {
		t.rand = rand.Reader
	}
	for _, reason := range []string{"unknown", "expired", "full", "token_full"} {
		t.refused.WithLabelValues(reason)
	}
	if o.Registerer != nil {
		outstanding := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "rankgate_tickets_outstanding",
			Help: "Tickets issued and neither used nor swept after expiry.",
		}, func() float64 { return float64(t.Outstanding()) })
		for _, c := range []prometheus.Collector{t.issuedTotal, t.refused, outstanding} {
			if err := o.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("httpapi: registering metrics: %w", err)
			}
		}
	}
	return t, nil
}

// TTL is how long a ticket stays usable.
func (t *Tickets) TTL() time.Duration { return t.ttl }

// Outstanding counts the tickets held: issued, not used, not yet swept.
func (t *Tickets) Outstanding() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.live)
}

// Issue makes a ticket for p, valid until the time it returns. With
// MaxOutstanding tickets held (after sweeping the expired ones) it fails
// with 503 unavailable.
func (t *Tickets) Issue(p Principal) (string, time.Time, error) {
	var raw [ticketBytes]byte
	if _, err := io.ReadFull(t.rand, raw[:]); err != nil {
		return "", time.Time{}, fmt.Errorf("httpapi: reading ticket randomness: %w", err)
	}
	h := sha256.Sum256(raw[:])
	p.Scopes = slices.Clone(p.Scopes)

	t.mu.Lock()
	now := t.now()
	t.sweep(now)
	if len(t.live) >= t.max {
		t.mu.Unlock()
		t.refused.WithLabelValues("full").Inc()
		return "", time.Time{}, rank.Errorf(rank.CodeUnavailable,
			"this gateway holds %d unused tickets, its limit; retry when some are used or expire", t.max)
	}
	if t.perMax > 0 && t.perKey[p.Token] >= t.perMax {
		t.mu.Unlock()
		t.refused.WithLabelValues("token_full").Inc()
		return "", time.Time{}, rank.Errorf(rank.CodeUnavailable,
			"this token holds %d unused tickets, its limit; use or let some expire first", t.perMax)
	}
	exp := now.Add(t.ttl)
	t.live[h] = ticket{p: p, expires: exp}
	if t.perMax > 0 {
		t.perKey[p.Token]++
	}
	t.order = append(t.order, issued{hash: h, expires: exp})
	t.mu.Unlock()

	t.issuedTotal.Inc()
	return base64.RawURLEncoding.EncodeToString(raw[:]), exp, nil
}

// errBadTicket is every refusal of a presented ticket: which one (forged,
// used, expired) is not the client's business.
var errBadTicket = errors.New("unknown, used or expired ticket")

// Redeem uses the ticket s up: it returns the principal it was issued for,
// or errBadTicket when s was never issued here, was used already or has
// expired. A ticket is gone after its first presentation, whatever it
// answered.
func (t *Tickets) Redeem(s string) (Principal, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) != ticketBytes {
		t.refused.WithLabelValues("unknown").Inc()
		return Principal{}, errBadTicket
	}
	h := sha256.Sum256(raw)
	t.mu.Lock()
	now := t.now()
	tk, ok := t.live[h]
	if ok {
		t.forget(h, tk)
	}
	t.sweep(now)
	t.mu.Unlock()
	switch {
	case !ok:
		t.refused.WithLabelValues("unknown").Inc()
		return Principal{}, errBadTicket
	case !now.Before(tk.expires):
		t.refused.WithLabelValues("expired").Inc()
		return Principal{}, errBadTicket
	}
	return tk.p, nil
}

// forget drops an outstanding ticket. Callers hold mu.
func (t *Tickets) forget(h [sha256.Size]byte, tk ticket) {
	delete(t.live, h)
	if t.perMax > 0 {
		if t.perKey[tk.p.Token]--; t.perKey[tk.p.Token] <= 0 {
			delete(t.perKey, tk.p.Token)
		}
	}
}

// sweep drops the tickets expired at now, oldest first, and compacts order
// when used tickets have left most of it stale. Callers hold mu.
func (t *Tickets) sweep(now time.Time) {
	for t.head < len(t.order) && !now.Before(t.order[t.head].expires) {
		if tk, ok := t.live[t.order[t.head].hash]; ok {
			t.forget(t.order[t.head].hash, tk)
		}
		t.order[t.head] = issued{}
		t.head++
	}
	switch n := len(t.order) - t.head; {
	case n == 0:
		t.order, t.head = t.order[:0], 0
	case n > 2*t.max:
		// Mostly used tickets waiting to expire: keep the live ones only.
		kept := make([]issued, 0, len(t.live))
		for _, is := range t.order[t.head:] {
			if _, ok := t.live[is.hash]; ok {
				kept = append(kept, is)
			}
		}
		t.order, t.head = kept, 0
	case t.head > 1024 && t.head > n:
		t.order, t.head = append(make([]issued, 0, 2*n), t.order[t.head:]...), 0
	}
}

// Principal is who a request acts for: the token it presented, or the token
// whose ticket it presented.
type Principal struct {
	// Token names the token (its env var, never the secret); "" when the
	// API is open (no tokens configured).
	Token string
	// Scopes are the token's scopes.
	Scopes []string
	// Player: a player token (JWT); Member is its member, Expires its exp.
	Player  bool
	Member  string
	Expires time.Time
	// tok is the static token, for its rate limiter; nil when the API is
	// open or for a player.
	tok *authToken
}

type principalKey struct{}

// PrincipalFrom returns the principal Auth put in ctx. Auth does so on the
// routes that need to know it — POST /v1/tickets and the TicketRoute routes
// (a live stream counts its subscribers per token) — not on every route.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// ticketBody is the answer of POST /v1/tickets.
type ticketBody struct {
	Ticket    string `json:"ticket"`
	ExpiresAt string `json:"expires_at"`
}

// openPrincipal is who asks for a ticket when the API is open: every scope.
func openPrincipal() Principal {
	return Principal{Scopes: []string{ScopeRead, ScopeWrite, ScopeAdmin}}
}

// issueTicket answers POST /v1/tickets: 201 {"ticket", "expires_at"}.
func (s *server) issueTicket(w http.ResponseWriter, r *http.Request) error {
	p, ok := PrincipalFrom(r.Context())
	if !ok {
		p = openPrincipal() // no Auth: the API is open, the ticket is a formality
	}
	tk, exp, err := s.tickets.Issue(p)
	if err != nil {
		return err
	}
	// expires_at is cut to whole seconds, down: never later than the truth.
	return writeJSON(w, http.StatusCreated, ticketBody{Ticket: tk, ExpiresAt: exp.UTC().Format(time.RFC3339)})
}
