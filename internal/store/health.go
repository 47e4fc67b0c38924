package store

import (
	"sync"
	"sync/atomic"
	"time"
)

// NodeHealth records, per node address, when that node last failed, as
// whichever transport saw it — go-redis's node clients (reloadOnDialError)
// and the rueidis read transport (Store.afterFailure) — in two times:
//
//   - failed: a command to it timed out or met a network error, or a dial to
//     it failed. A slot-map reload does not ask a node that failed within
//     slotsSkip for CLUSTER SLOTS (unless no other node that answered one
//     lately is clear).
//   - down: a dial to it failed, or a rueidis read of it met a network error
//     or timeout — the node looks unreachable, not merely slow. For the
//     rueidis retry interval after that, its reads go through go-redis,
//     whose pool fails fast after dial errors (rueidis would redial inside
//     every read). A go-redis command that only timed out (a slow script, a
//     busy master) does not take the master's reads off rueidis.
//
// Share one between NewClient (ClientOptions.Health) and New
// (Options.Health) — and the replica-reading client, whose nodes are the
// same — so that a failure one of them saw keeps the node out of the other's
// next reload. The zero value is ready to use; nil fields make their own.
type NodeHealth struct {
	mu sync.Mutex
	at map[string]*nodeRecord
}

// nodeRecord: a node's failed and down times, and when it last answered a
// slot-map query (unix ns; 0: never).
type nodeRecord struct{ failed, down, answered atomic.Int64 }

// node is addr's record, made on first use. Callers keep the pointers it
// gives: reading them is lock-free.
func (h *NodeHealth) node(addr string) *nodeRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.at == nil {
		h.at = map[string]*nodeRecord{}
	}
	r := h.at[addr]
	if r == nil {
		r = new(nodeRecord)
		h.at[addr] = r
	}
	return r
}

// record is addr's failed time.
func (h *NodeHealth) record(addr string) *atomic.Int64 { return &h.node(addr).failed }

// downRecord is addr's down time.
func (h *NodeHealth) downRecord(addr string) *atomic.Int64 { return &h.node(addr).down }

// failed notes that addr failed now and looks unreachable (both times).
func (h *NodeHealth) failed(addr string) {
	r := h.node(addr)
	stampNow(&r.failed)
	stampNow(&r.down)
}

// answeredRecord is addr's last answer to a slot-map query.
func (h *NodeHealth) answeredRecord(addr string) *atomic.Int64 { return &h.node(addr).answered }

// othersClear reports whether some node other than addr answered a slot-map
// query within live and has not failed within d: a reload that leaves addr
// out has another node to ask. Addresses that are not (or no longer) nodes —
// a seed's name, a departed node — stop counting once their last answer is
// older than live. When no such node is left (a stall of the gateway itself
// can time out every node at once), the reload asks them all rather than
// none.
func (h *NodeHealth) othersClear(addr string, d, live time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for a, r := range h.at {
		if a == addr {
			continue
		}
		if _, recent := stampedWithin(&r.failed, d); recent {
			continue
		}
		if _, alive := stampedWithin(&r.answered, live); alive {
			return true
		}
	}
	return false
}

// stampNow stores now in one of a node's records (failed, down, answered).
func stampNow(r *atomic.Int64) { r.Store(time.Now().UnixNano()) }

// stampedWithin reports whether a node's record was stamped less than d
// ago, and how long ago.
func stampedWithin(r *atomic.Int64, d time.Duration) (time.Duration, bool) {
	at := r.Load()
	if at == 0 {
		return 0, false
	}
	ago := time.Since(time.Unix(0, at))
	return ago, ago < d
}
