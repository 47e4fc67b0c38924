package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// Read transports: how a read that one master serves reaches it
// (Options.ReadTransport, redis.read_transport).
const (
	// TransportRueidis: one rueidis client per master address, which
	// pipelines concurrent reads onto one shared connection (auto
	// pipelining): fewer syscalls and wake-ups per read under load.
	TransportRueidis = "rueidis"
	// TransportGoRedis: a go-redis pipeline on the master's own client.
	TransportGoRedis = "go-redis"
	// TransportGoRedisFD: go-redis's experimental full-duplex auto pipeliner
	// on the master's own client (spike).
	TransportGoRedisFD = "go-redis-fd"
)

// directClients holds one rueidis client per master address, dialled in
// the background the first time a read is sent to that master (that read,
// and every read until the client is up, goes through go-redis).
type directClients struct {
	mu      sync.Mutex
	clients map[string]*directClient
	closed  bool
	wg      sync.WaitGroup
	// retry: how long after a failed dial a master's client is dialled again.
	retry time.Duration
}

type directClient struct {
	c        rueidis.Client // nil while dialling or after a failed dial
	failedAt time.Time
}

func newDirectClients() *directClients {
	return &directClients{clients: map[string]*directClient{}, retry: time.Second}
}

// get returns the rueidis client of node's address, or nil when it is not
// up (yet): then it starts dialling it, with node's own options (user,
// password, TLS and dialer).
func (d *directClients) get(node *redis.Client) rueidis.Client {
	o := node.Options()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	dc := d.clients[o.Addr]
	if dc != nil && (dc.c != nil || dc.failedAt.IsZero() || time.Since(dc.failedAt) < d.retry) {
		return dc.c
	}
	if dc == nil {
		dc = &directClient{}
		d.clients[o.Addr] = dc
	}
	dc.failedAt = time.Time{} // dialling
	d.wg.Add(1)
	go d.dial(dc, o)
	return nil
}

func (d *directClients) dial(dc *directClient, o *redis.Options) {
	defer d.wg.Done()
	dialer := o.Dialer // go-redis's own (TLS included) or the configured one
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{o.Addr},
		ForceSingleClient: true,
		Username:          o.Username,
		Password:          o.Password,
		Dialer:            net.Dialer{Timeout: o.DialTimeout},
		DialCtxFn: func(ctx context.Context, addr string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return dialer(ctx, "tcp", addr)
		},
		ConnWriteTimeout: o.WriteTimeout,
		DisableCache:     true,
		DisableRetry:     true,                         // a failed read goes through the cluster instead
		ClientSetInfo:    rueidis.DisableClientSetInfo, // the ACL of docs/security.md has no CLIENT
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		dc.failedAt = time.Now()
		return
	}
	if d.closed {
		c.Close()
		return
	}
	dc.c = c
}

// close closes every client and waits for dials under way.
func (d *directClients) close() {
	d.mu.Lock()
	d.closed = true
	cs := make([]rueidis.Client, 0, len(d.clients))
	for _, dc := range d.clients {
		if dc.c != nil {
			cs = append(cs, dc.c)
		}
	}
	d.mu.Unlock()
	d.wg.Wait()
	for _, c := range cs {
		c.Close()
	}
}

// execRueidis sends cmds — queued on a go-redis pipeline that is never
// executed — as one DoMulti on c and fills each command's value or error as
// go-redis would have (RESP3 both), so the replies parse the same way.
func execRueidis(ctx context.Context, c rueidis.Client, cmds []redis.Cmder) {
	rc := make(rueidis.Commands, len(cmds))
	for i, cmd := range cmds {
		args := cmd.Args()
		ss := make([]string, len(args))
		for j, a := range args {
			ss[j] = argString(a)
		}
		rc[i] = c.B().Arbitrary(ss...).Build()
	}
	for i, r := range c.DoMulti(ctx, rc...) {
		fill(cmds[i], r)
	}
}

// argString formats a command argument as go-redis writes it.
func argString(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case []byte:
		return string(v)
	case bool:
		if v {
			return "1"
		}
		return "0"
	}
	return fmt.Sprint(a)
}

// redisError is a Redis error reply, recognised by redis.HasErrorPrefix.
type redisError string

func (e redisError) Error() string { return string(e) }
func (redisError) RedisError()     {}

func fill(cmd redis.Cmder, r rueidis.RedisResult) {
	msg, err := r.ToMessage()
	if err != nil {
		var re *rueidis.RedisError
		switch {
		case rueidis.IsRedisNil(err):
			err = redis.Nil
		case errors.As(err, &re):
			err = redisError(re.Error())
		}
		cmd.SetErr(err)
		return
	}
	switch c := cmd.(type) {
	case *redis.IntCmd:
		v, err := msg.AsInt64()
		c.SetVal(v)
		c.SetErr(err)
	case *redis.ZSliceCmd:
		zs, err := msg.AsZScores()
		if err != nil {
			c.SetErr(err)
			return
		}
		v := make([]redis.Z, len(zs))
		for i, z := range zs {
			v[i] = redis.Z{Score: z.Score, Member: z.Member}
		}
		c.SetVal(v)
	case *redis.SliceCmd:
		arr, err := msg.ToArray()
		if err != nil {
			c.SetErr(err)
			return
		}
		v := make([]any, len(arr))
		for i := range arr {
			if !arr[i].IsNil() {
				v[i], _ = arr[i].ToString()
			}
		}
		c.SetVal(v)
	case *redis.Cmd:
		v, err := msg.ToAny()
		c.SetVal(v)
		c.SetErr(err)
	default:
		cmd.SetErr(fmt.Errorf("store: no rueidis reply for %T", cmd))
	}
}
