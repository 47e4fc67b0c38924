package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// pool is a small bounded pool of pgx connections.
//
// pgxpool needs github.com/jackc/puddle/v2, which this module's go.mod and
// go.sum do not list yet; until they do, this pool gives the ledger what it
// uses of pgxpool: a bound on connections, context-aware waits, reuse of
// healthy idle sessions and disposal of broken ones.
type pool struct {
	cfg   *pgx.ConnConfig
	slots chan struct{} // one token per connection handed out or being dialled

	mu     sync.Mutex
	idle   []idleConn // LIFO: the most recently used first
	closed bool
	total  int // open connections (idle + in use)
}

type idleConn struct {
	c     *pgx.Conn
	since time.Time
}

// idleCheck: an idle connection older than this is pinged before reuse, so a
// session the server dropped (restart, idle timeout) is replaced, not failed on.
const idleCheck = 30 * time.Second

func newPool(cfg *pgx.ConnConfig, max int) *pool {
	return &pool{cfg: cfg, slots: make(chan struct{}, max)}
}

// acquire returns a connection for the caller's exclusive use until release.
func (p *pool) acquire(ctx context.Context) (*pgx.Conn, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("ledger: waiting for a connection: %w", ctx.Err())
	}
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			<-p.slots
			return nil, ErrClosed
		}
		n := len(p.idle)
		if n == 0 {
			p.total++
			p.mu.Unlock()
			break
		}
		ic := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		if ic.c.IsClosed() || (time.Since(ic.since) > idleCheck && ic.c.Ping(ctx) != nil) {
			p.discard(ic.c)
			continue
		}
		return ic.c, nil
	}
	c, err := pgx.ConnectConfig(ctx, p.cfg.Copy())
	if err != nil {
		p.mu.Lock()
		p.total--
		p.mu.Unlock()
		<-p.slots
		return nil, fmt.Errorf("ledger: connecting: %w", err)
	}
	return c, nil
}

// release returns c to the pool, or closes it when it is broken, busy or left
// inside a transaction.
func (p *pool) release(c *pgx.Conn) {
	healthy := !c.IsClosed() && !c.PgConn().IsBusy() && c.PgConn().TxStatus() == 'I'
	p.mu.Lock()
	if healthy && !p.closed {
		p.idle = append(p.idle, idleConn{c: c, since: time.Now()})
		p.mu.Unlock()
	} else {
		p.mu.Unlock()
		p.discard(c)
	}
	<-p.slots
}

// discard closes c (bounded in time) and forgets it.
func (p *pool) discard(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_ = c.Close(ctx)
	cancel()
	p.mu.Lock()
	p.total--
	p.mu.Unlock()
}

// close closes idle connections and refuses further acquires.
func (p *pool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, ic := range idle {
		p.discard(ic.c)
	}
}

// stats returns open and idle connection counts.
func (p *pool) stats() (open, idle int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total, len(p.idle)
}

// retryable reports a deadlock or serialization failure: the transaction was
// rolled back by the server and may simply run again.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}
