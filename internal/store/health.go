package store

import (
	"sync"
	"sync/atomic"
	"time"
)

// NodeHealth records, per node address, when a command to that node last
// timed out or met a network error, or a dial to it failed — whichever
// transport saw it: go-redis's node clients (reloadOnDialError) and the
// rueidis read transport (Store.afterFailure). Both read it back: a
// slot-map reload does not ask a node that failed within slotsSkip for
// CLUSTER SLOTS, and the rueidis transport sends a master's reads through
// go-redis for its retry interval after that master failed.
//
// Share one between NewClient (ClientOptions.Health) and New
// (Options.Health) — and the replica-reading client, whose nodes are the
// same — so that a failure one of them saw keeps the node out of the other's
// next reload. The zero value is ready to use; nil fields make their own.
type NodeHealth struct {
	mu sync.Mutex
	at map[string]*atomic.Int64
}

// record is addr's failure time (unix ns; 0: never), made on first use.
// Callers keep the pointer: reading it is lock-free.
func (h *NodeHealth) record(addr string) *atomic.Int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.at == nil {
		h.at = map[string]*atomic.Int64{}
	}
	r := h.at[addr]
	if r == nil {
		r = new(atomic.Int64)
		h.at[addr] = r
	}
	return r
}

// failed notes that addr failed now.
func (h *NodeHealth) failed(addr string) { markFailed(h.record(addr)) }

// markFailed stores now in a node's failure record.
func markFailed(r *atomic.Int64) { r.Store(time.Now().UnixNano()) }

// failedWithin reports whether a node's record says it failed less than d
// ago, and how long ago.
func failedWithin(r *atomic.Int64, d time.Duration) (time.Duration, bool) {
	at := r.Load()
	if at == 0 {
		return 0, false
	}
	ago := time.Since(time.Unix(0, at))
	return ago, ago < d
}
