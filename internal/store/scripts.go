package store

import (
	"embed"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

// script assembles a script from its shebang, the shared helpers and its body.
// Every script gets all its keys through KEYS and they share one hash tag
// (internal/shard builds them; TestScriptKeysShareOneSlot checks it).
func script(shebang, name string) *redis.Script {
	common, err := scriptFS.ReadFile("scripts/common.lua")
	if err != nil {
		panic(err) // embedded at build time: cannot fail
	}
	body, err := scriptFS.ReadFile("scripts/" + name)
	if err != nil {
		panic(err)
	}
	return redis.NewScript(shebang + "\n" + string(common) + "\n" + string(body))
}

// gatedScript assembles a tournament's gated write: gate_head.lua (takes the
// gate's keys and arguments off KEYS and ARGV), the shared helpers, the
// write body as a function, and gate_tail.lua (the join and attempt checks
// around it). One script, one hash tag: the checks and the write are atomic.
func gatedScript(name string) *redis.Script {
	read := func(n string) string {
		b, err := scriptFS.ReadFile("scripts/" + n)
		if err != nil {
			panic(err) // embedded at build time: cannot fail
		}
		return string(b)
	}
	return redis.NewScript("#!lua\n" + read("gate_head.lua") + "\n" + read("common.lua") +
		"\nlocal function body()\n" + read(name) + "\nend\n" + read("gate_tail.lua"))
}

// The scripts, declared once. Read-only ones carry flags=no-writes so that
// they may run with EVALSHA_RO on replicas.
var (
	applyScript    = script("#!lua", "apply.lua")
	reverseScript  = script("#!lua", "reverse.lua")
	projectScript  = script("#!lua", "project.lua")
	removeScript   = script("#!lua", "remove.lua")
	seekScript     = script("#!lua flags=no-writes", "seek.lua")
	positionScript = script("#!lua flags=no-writes", "position.lua")
	snapshotScript = script("#!lua", "snapshot.lua")
	swapScript     = script("#!lua", "swap.lua")
	leaseScript    = script("#!lua", "lease.lua")
	columnsScript  = script("#!lua", "columns.lua")
	membersScript  = script("#!lua flags=no-writes", "members.lua")
	unbanScript    = script("#!lua", "unban.lua")
	deriveScript   = script("#!lua", "derive.lua")
	// Tournaments: gated writes, joins, the registry.
	gatedApplyScript   = gatedScript("apply.lua")
	gatedColumnsScript = gatedScript("columns.lua")
	joinScript         = script("#!lua", "join.lua")
	tournamentScript   = script("#!lua", "tournament.lua")
	gateScript         = script("#!lua", "gate.lua") // ledger mode: checks before the commit
	rateScript         = script("#!lua", "rate.lua")
	eraseScript        = script("#!lua", "erase.lua")
	takeIndexScript    = script("#!lua", "take_index.lua")
	placeScript        = script("#!lua", "place.lua") // leagues: a member's cohort
)

// Scripts lists every script with its name, for preloading and tests.
func Scripts() map[string]*redis.Script {
	return map[string]*redis.Script{
		"apply": applyScript, "reverse": reverseScript, "project": projectScript, "remove": removeScript,
		"seek": seekScript, "position": positionScript, "snapshot": snapshotScript, "swap": swapScript,
		"lease": leaseScript, "columns": columnsScript, "members": membersScript,
		"unban": unbanScript, "derive": deriveScript, "rate": rateScript,
		"gated_apply": gatedApplyScript, "gated_columns": gatedColumnsScript, "join": joinScript, "tournament": tournamentScript,
		"gate":  gateScript,
		"erase": eraseScript, "take_index": takeIndexScript,
		"place": placeScript,
	}
}
