package ledger

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Lease is a PostgreSQL session advisory lock with a fencing token: one
// holder at a time among every process on the same ledger schema, for as
// long as the holder's session lives (a crashed holder's session ends and so
// does its lock). Each acquisition takes the next token of the leases table,
// so work stamped with a token can be told from a newer holder's. The
// session is kept outside the pool. Safe for concurrent use.
type Lease struct {
	l     *Ledger
	name  string
	owner string
	key   int64

	mu    sync.Mutex
	conn  *pgx.Conn
	token int64
}

// NewLease returns the lease called name for owner (an id of this process,
// recorded with each acquisition).
func (l *Ledger) NewLease(name, owner string) *Lease {
	return &Lease{l: l, name: name, owner: owner, key: advisoryKey("rankgate/lease/" + l.schema + "/" + name)}
}

// Hold takes the lease or checks that this session still holds it; it
// returns the fencing token while held and 0 while another session holds it.
func (le *Lease) Hold(ctx context.Context) (int64, error) {
	le.mu.Lock()
	defer le.mu.Unlock()
	if le.conn != nil && le.token != 0 {
		if err := le.conn.Ping(ctx); err == nil {
			return le.token, nil
		}
		le.dropLocked() // the session (and with it the lock) is gone
	}
	if le.conn == nil || le.conn.IsClosed() {
		c, err := pgx.ConnectConfig(ctx, le.l.connCfg.Copy())
		if err != nil {
			return 0, fmt.Errorf("ledger: lease %s: connecting: %w", le.name, err)
		}
		le.conn = c
	}
	var ok bool
	if err := le.conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, le.key).Scan(&ok); err != nil {
		le.dropLocked()
		return 0, fmt.Errorf("ledger: lease %s: %w", le.name, err)
	}
	if !ok {
		return 0, nil
	}
	var tok int64
	err := le.conn.QueryRow(ctx, `INSERT INTO leases (name, token, holder) VALUES ($1, 1, $2)
		ON CONFLICT (name) DO UPDATE SET token = leases.token + 1, holder = $2, taken_at = now()
		RETURNING token`, le.name, le.owner).Scan(&tok)
	if err != nil {
		le.dropLocked()
		return 0, fmt.Errorf("ledger: lease %s: taking a token: %w", le.name, err)
	}
	le.token = tok
	le.l.log.Info("lease taken", "lease", le.name, "owner", le.owner, "token", tok)
	return tok, nil
}

// Release gives the lease up and closes its session.
func (le *Lease) Release(ctx context.Context) error {
	le.mu.Lock()
	defer le.mu.Unlock()
	if le.conn == nil {
		return nil
	}
	var err error
	if le.token != 0 {
		_, err = le.conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, le.key)
	}
	le.dropLocked()
	return err
}

func (le *Lease) dropLocked() {
	if le.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = le.conn.Close(ctx)
		cancel()
	}
	le.conn, le.token = nil, 0
}
