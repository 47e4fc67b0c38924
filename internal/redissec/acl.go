// Package redissec holds what rankgate needs from Redis security: the ACL
// the gateway's Redis user needs (Commands, SetUserArgs, ACLLine — the line
// docs/security.md prints), test certificates (PKI), and the tests that run
// the gateway over TLS with that restricted user against a TLS-only Redis
// Cluster the test starts itself on free loopback ports 7800–7899.
//
// It imports the standard library only; it must not import internal/gateway,
// internal/store or internal/httpapi (its tests drive the real program).
package redissec

import (
	"slices"
	"strings"
)

// Commands is every Redis command (and subcommand, as command|sub) the
// gateway sends, sorted: what its ACL user needs and nothing more. The
// groups, for review:
//
//   - client library (go-redis v9): command (the cluster client's key
//     positions and read-only routing), readonly (replica-reading
//     connections), asking (ASK redirects while slots migrate), ping (the
//     replica client's latency probes for RouteByLatency, the LOADING check,
//     a standalone node's readiness). HELLO and AUTH need no grant: Redis
//     lets every user run them. On Redis 7.2 and later add Redis72Commands.
//   - scripts: evalsha, evalsha_ro, eval and eval_ro (the NOSCRIPT
//     fallback), script|load (preload on every node).
//   - inside the scripts (ACL checks each redis.call too): del, exists, get,
//     hdel, hexists, hget, hincrby, hmget, hset, hsetnx, incrby (lease.lua's
//     fence, unban.lua's version: the scripts say INCRBY k 1, never INCR),
//     pexpire, rename, set, unlink, xadd (the change feed of families with a
//     read index), zadd, zcard, zcount, zrangestore, zrem, zrevrange,
//     zrevrank, zscore; rate.lua (a member's event window under a player
//     token): time, zremrangebyscore, zscore, zcard, zrange, zadd, pexpire.
//   - store calls: zmscore, zcount, zcard, zrange (native position probes:
//     a probe's points group, BYSCORE LIMIT), zscan, hsetnx, hgetall, hset,
//     sadd, smembers, incrby, xadd, xrange, pexpire, unlink, zadd, del,
//     xrevrange, xrange, zscan and zcard (the read index follows the
//     change feeds),
//     multi and exec (profiles are replaced in a transaction), zunionstore
//     (derived families, one key group per slot), get, set and del (the
//     shared cache level of families with cache_shared), hset, hdel,
//     incrby, get, hgetall, multi and exec (member bans and their version;
//     lifting a ban is unban.lua), cluster|getkeysinslot (a removal drops
//     a board's shared cache copies: the keys of its one slot).
//   - erasure: sadd, smembers, srem (a member's board index and its
//     erasures' work set), take_index.lua (smembers, sadd, del), exists and
//     del (the member's profile, rate windows), erase.lua (exists, hdel,
//     hget, hincrby, xadd, zrem, zscore).
//   - layout and readiness: memory|usage, cluster|slots, cluster|info,
//     config|get (maxmemory-policy, /readyz).
//   - cluster monitor: info, cluster|nodes, cluster|myid, scan (key
//     sampling under the prefix), memory|usage.
var Commands = []string{
	"asking",
	"cluster|getkeysinslot",
	"cluster|info",
	"cluster|myid",
	"cluster|nodes",
	"cluster|slots",
	"command",
	"config|get",
	"del",
	"eval",
	"eval_ro",
	"evalsha",
	"evalsha_ro",
	"exec",
	"exists",
	"get",
	"hdel",
	"hexists",
	"hget",
	"hgetall",
	"hincrby",
	"hmget",
	"hset",
	"hsetnx",
	"incrby",
	"info",
	"memory|usage",
	"multi",
	"pexpire",
	"ping",
	"readonly",
	"rename",
	"sadd",
	"scan",
	"script|load",
	"set",
	"smembers",
	"srem",
	"time",
	"unlink",
	"xadd",
	"xrange",
	"xrevrange",
	"zadd",
	"zcard",
	"zcount",
	"zmscore",
	"zrange",
	"zrangestore",
	"zrem",
	"zremrangebyscore",
	"zrevrange",
	"zrevrank",
	"zscan",
	"zscore",
	"zunionstore",
}

// Redis72Commands are granted on Redis 7.2 and later only: go-redis sends
// CLIENT SETINFO (library name and version) on every new connection and
// ignores a refusal, but each refusal lands in ACL LOG. Redis 7.0 does not
// know the subcommand, and ACL SETUSER refuses to grant it there.
var Redis72Commands = []string{"client|setinfo"}

// WaitCommands are granted only when redis.wait_replicas > 0: the store
// then ends every write pipeline with WAIT on each master it touched.
var WaitCommands = []string{"wait"}

// OptionalCommands are the grants only /readyz and the cluster monitor
// need; without them the data path works, /readyz answers 503 and the
// monitor reports the nodes down (see docs/security.md).
var OptionalCommands = []string{"cluster|info", "cluster|myid", "cluster|nodes", "config|get", "info", "scan"}

// SetUserArgs returns the arguments of ACL SETUSER that (re)define user
// from scratch with password, the keys under prefix (prefix:*; every key the
// gateway touches, script keys included, is prefix:…), no Pub/Sub channels,
// and exactly cmds (Commands when nil).
func SetUserArgs(user, password, prefix string, cmds []string) []string {
	if cmds == nil {
		cmds = Commands
	}
	args := []string{user, "reset", "on", ">" + password, "~" + prefix + ":*", "resetchannels", "-@all"}
	for _, c := range cmds {
		args = append(args, "+"+c)
	}
	return args
}

// ACLLine is SetUserArgs as one redis-cli line: ACL SETUSER user ….
func ACLLine(user, password, prefix string, cmds []string) string {
	return "ACL SETUSER " + strings.Join(SetUserArgs(user, password, prefix, cmds), " ")
}

// Without returns cmds minus drop, in order.
func Without(cmds []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(cmds), func(c string) bool { return slices.Contains(drop, c) })
}
