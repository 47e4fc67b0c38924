package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotReplicated: a write ran on its master, but WAIT (redis.wait_replicas)
// did not see enough replicas acknowledge it in time. The write may survive or
// vanish in a failover; retrying it with the same event id is safe (dedupe).
var ErrNotReplicated = errors.New("not replicated yet")

// waitCtxKey carries a *waitReq from Store.Write through a pipeline's context
// to waitHook, which runs on every node client (NewClient installs it).
type waitCtxKey struct{}

// waitReq is one Write call's WAIT: n replicas within timeout, and for every
// write command the WAIT that followed it on its node's connection.
type waitReq struct {
	n       int
	timeout time.Duration

	mu   sync.Mutex
	own  map[redis.Cmder]bool    // the WAIT commands the hook added
	acks map[redis.Cmder]waitAck // write command → the WAIT of the batch it last ran in
}

type waitAck struct {
	replicas int64
	err      error
	addr     string
}

func newWaitReq(n int, timeout time.Duration) *waitReq {
	return &waitReq{n: n, timeout: timeout, own: map[redis.Cmder]bool{}, acks: map[redis.Cmder]waitAck{}}
}

// check returns nil when cmd's node acknowledged it to n replicas, else an
// error wrapping ErrNotReplicated (or saying that no WAIT ran at all: a client
// not built by NewClient).
func (r *waitReq) check(cmd redis.Cmder) error {
	r.mu.Lock()
	a, ok := r.acks[cmd]
	r.mu.Unlock()
	switch {
	case !ok:
		return fmt.Errorf("%w: no WAIT ran after the write (the Redis client lacks the WAIT hook; build it with store.NewClient)", ErrNotReplicated)
	case a.err != nil:
		return fmt.Errorf("%w: WAIT %d on %s: %v", ErrNotReplicated, r.n, a.addr, a.err)
	case a.replicas < int64(r.n):
		return fmt.Errorf("%w: %d of %d replicas of %s acknowledged within %s", ErrNotReplicated, a.replicas, r.n, a.addr, r.timeout)
	}
	return nil
}

// waitHook appends WAIT n timeout to every node pipeline that carries a
// waitReq in its context, on the same connection as the writes (go-redis
// cluster pipelines group commands by node and run each node's group on one
// connection), so WAIT counts the replicas that have those writes. A
// redirected or retried write (MOVED, a timeout) runs in another node batch,
// which gets a WAIT of its own; the later one is what counts. A WAIT that
// go-redis re-routes together with failed writes is dropped, not re-sent.
type waitHook struct{ addr string }

var _ redis.Hook = waitHook{}

func (waitHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (waitHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h waitHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		req, _ := ctx.Value(waitCtxKey{}).(*waitReq)
		if req == nil {
			return next(ctx, cmds)
		}
		req.mu.Lock()
		batch := slices.DeleteFunc(slices.Clone(cmds), func(c redis.Cmder) bool { return req.own[c] })
		req.mu.Unlock()
		if len(batch) == 0 {
			return nil
		}
		w := redis.NewIntCmd(ctx, "wait", req.n, req.timeout.Milliseconds())
		req.mu.Lock()
		req.own[w] = true
		req.mu.Unlock()
		err := next(ctx, append(batch, w))
		ack := waitAck{replicas: w.Val(), err: w.Err(), addr: h.addr}
		req.mu.Lock()
		for _, c := range batch {
			req.acks[c] = ack
		}
		req.mu.Unlock()
		return err
	}
}
