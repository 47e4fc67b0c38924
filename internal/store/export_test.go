package store

import (
	"context"
	"net"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// AliasDirect makes the reads of the master at from use the rueidis
// client of the master at to (both connected): every command of them is
// answered with a real MOVED. It returns the undo.
func AliasDirect(s *Store, from, to string) (undo func()) {
	d := s.direct
	d.mu.Lock()
	defer d.mu.Unlock()
	was := d.clients[from]
	d.clients[from] = d.clients[to]
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.clients[from] = was
	}
}

// ForgetBroken ends every master's retry interval after a failure
// (directClient.brokeAt, the master's NodeHealth record), as if it had passed.
func ForgetBroken(s *Store) {
	d := s.direct
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, dc := range d.clients {
		dc.brokeAt.Store(0)
	}
}

// DialDirect replaces the rueidis client of node's master (closing the one
// it had) with one dialled as the store dials them, but through dial.
func DialDirect(s *Store, node *redis.Client, dial func(ctx context.Context, network, addr string) (net.Conn, error)) error {
	o := *node.Options()
	o.Dialer = dial
	d := s.direct
	dc := d.newClient(o.Addr)
	dc.ready = make(chan struct{})
	d.wg.Add(1)
	d.dial(dc, &o)
	if dc.err != nil {
		return dc.err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if was := d.clients[o.Addr]; was != nil && was.c != nil {
		was.c.Close()
	}
	d.clients[o.Addr] = dc
	return nil
}

// DirectClients returns the connected rueidis clients by address.
func DirectClients(s *Store) map[string]rueidis.Client {
	d := s.direct
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]rueidis.Client{}
	for addr, dc := range d.clients {
		if dc.c != nil {
			out[addr] = dc.c
		}
	}
	return out
}

// CloseDirect closes the rueidis client of the master at addr and leaves it
// in place: the next read of that master gets it closed, as a read that got
// it just before a prune pass closed it.
func CloseDirect(s *Store, addr string) {
	d := s.direct
	d.mu.Lock()
	c := d.clients[addr].c
	d.mu.Unlock()
	c.Close()
}
