package store

import "time"

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

// ForgetBroken ends every master's retry interval after a connection
// failure of its rueidis client (directClient.brokeAt), as if it had passed.
func ForgetBroken(s *Store) {
	d := s.direct
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, dc := range d.clients {
		dc.brokeAt = time.Time{}
	}
}
