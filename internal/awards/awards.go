// Package awards delivers a settlement's award outbox and the period notices
// to a webhook (ledger mode): one POST per award or notice, with an
// Idempotency-Key header (the award's key) and a Rankgate-Signature header
// (t=UNIX,v1=hex HMAC-SHA256 of t + "." + body), retried with exponential
// backoff and jitter until a 2xx answer or max attempts (then failed). The
// state lives in the ledger, so a restart or a change of lease holder goes on
// where delivery stood; a receiver that dedupes by key sees each award once.
//
// It imports internal/ledger (the outbox) and net/http (it is an HTTP client);
// it must not import go-redis, internal/store or internal/gateway.
package awards

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/ledger"
)

// Store is what delivery needs from the ledger; *ledger.Ledger implements it.
type Store interface {
	DueDeliveries(ctx context.Context, now time.Time, limit int) ([]ledger.Delivery, error)
	RecordAttempt(ctx context.Context, d ledger.Delivery, a ledger.Attempt) error
}

var _ Store = (*ledger.Ledger)(nil)

// Header names.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderSignature      = "Rankgate-Signature"
)

// Options configure a Deliverer.
type Options struct {
	URL         string
	Secret      []byte
	Timeout     time.Duration // per attempt (default 5s)
	MaxAttempts int           // then failed (default 12)
	// BaseBackoff and MaxBackoff bound the wait after a failed attempt n
	// (1-based): min(MaxBackoff, BaseBackoff × 2^(n−1)), jittered to a
	// uniform draw in [half, all] of it. Defaults 1s and 10m.
	BaseBackoff, MaxBackoff time.Duration
	// Batch is how many due deliveries one Pump takes (default 100).
	Batch      int
	Client     *http.Client // default: a client with Timeout
	Jitter     func() float64
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Deliverer pushes due awards and notices to the webhook.
type Deliverer struct {
	st   Store
	o    Options
	log  *slog.Logger
	sent *prometheus.CounterVec
}

// New builds a Deliverer.
func New(st Store, o Options) (*Deliverer, error) {
	if st == nil || o.URL == "" {
		return nil, errors.New("awards: a store and a URL are required")
	}
	if len(o.Secret) == 0 {
		return nil, errors.New("awards: a signing secret is required")
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 12
	}
	if o.BaseBackoff <= 0 {
		o.BaseBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 10 * time.Minute
	}
	if o.Batch <= 0 {
		o.Batch = 100
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: o.Timeout}
	}
	if o.Jitter == nil {
		o.Jitter = rand.Float64
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	d := &Deliverer{st: st, o: o, log: o.Logger.With("component", "awards"),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_award_deliveries_total",
			Help: "Webhook delivery attempts of awards and period notices, by kind (award, period.frozen, period.settled) and outcome (delivered, retry, failed).",
		}, []string{"kind", "outcome"})}
	if o.Registerer != nil {
		if err := o.Registerer.Register(d.sent); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Backoff is the wait after failed attempt n (1-based), before jitter.
func (d *Deliverer) Backoff(n int) time.Duration {
	b := d.o.BaseBackoff
	for i := 1; i < n && b < d.o.MaxBackoff; i++ {
		b *= 2
	}
	return min(b, d.o.MaxBackoff)
}

// Pump sends every delivery due at now (one batch) and records each outcome.
// It is the lease holder's task: one gateway at a time calls it.
func (d *Deliverer) Pump(ctx context.Context, now time.Time) {
	due, err := d.st.DueDeliveries(ctx, now, d.o.Batch)
	if err != nil {
		d.log.Warn("reading due award deliveries failed", "err", err)
		return
	}
	for _, dl := range due {
		if ctx.Err() != nil {
			return
		}
		a := ledger.Attempt{}
		if err := d.send(ctx, dl, now); err != nil {
			n := dl.Attempts + 1
			a.Error = err.Error()
			if n >= d.o.MaxAttempts {
				a.Failed = true
				d.sent.WithLabelValues(dl.Kind, "failed").Inc()
				d.log.Error("award delivery failed for good; POST /v1/awards/{key}/retry to try again", "kind", dl.Kind, "key", dl.Key,
					"attempts", n, "err", err)
			} else {
				wait := d.Backoff(n)
				wait = wait/2 + time.Duration(d.o.Jitter()*float64(wait/2))
				a.Next = now.Add(wait)
				d.sent.WithLabelValues(dl.Kind, "retry").Inc()
				d.log.Info("award delivery attempt failed; retrying", "kind", dl.Kind, "key", dl.Key, "attempt", n, "next", a.Next, "err", err)
			}
		} else {
			a.Delivered = true
			d.sent.WithLabelValues(dl.Kind, "delivered").Inc()
		}
		if err := d.st.RecordAttempt(ctx, dl, a); err != nil {
			d.log.Warn("recording an award delivery attempt failed (it will be sent again; the key dedupes it)", "key", dl.Key, "err", err)
		}
	}
}

func (d *Deliverer) send(ctx context.Context, dl ledger.Delivery, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.o.URL, bytes.NewReader(dl.Body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "rankgate-awards/1")
	req.Header.Set(HeaderIdempotencyKey, dl.Key)
	req.Header.Set(HeaderSignature, Sign(d.o.Secret, now.Unix(), dl.Body))
	resp, err := d.o.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("receiver answered %s", resp.Status)
	}
	return nil
}

// Sign returns the Rankgate-Signature of body at unix time t:
// "t=T,v1=HEX", HEX = hex HMAC-SHA256 of "T.body" with secret.
func Sign(secret []byte, t int64, body []byte) string {
	ts := strconv.FormatInt(t, 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Verify checks a Rankgate-Signature header against body and secret, and
// that its time lies within tolerance of now (0: not checked) — what a
// receiver does. It compares in constant time.
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sig == "" {
		return errors.New("awards: malformed signature header")
	}
	got, err := hex.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(secret, ts, body)) {
		return errors.New("awards: signature mismatch")
	}
	if tolerance > 0 {
		if d := now.Sub(time.Unix(t, 0)); d > tolerance || d < -tolerance {
			return errors.New("awards: signature timestamp outside tolerance")
		}
	}
	return nil
}
