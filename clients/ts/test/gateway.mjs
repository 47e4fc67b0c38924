// A real rankgate gateway for the tests: the program built from this
// repository (cmd/gateway; or $RANKGATE_GATEWAY_BIN), on the Redis Cluster
// of $RANKGATE_TEST_REDIS_CLUSTER under a key prefix of its own, in ledger
// mode on a fresh PostgreSQL database (created from $RANKGATE_TEST_PG_DSN,
// dropped at the end), listening on a free loopback port. Without a cluster
// the tests that need it are skipped — except under CI=true, where they fail:
// integration tests never skip in CI (as the Go tests' testcluster/testpg).

import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

export const ADMIN_TOKEN = "ts-admin-" + randomBytes(12).toString("hex");
export const SLOW_TOKEN = "ts-slow-" + randomBytes(12).toString("hex");

/** Why the gateway tests cannot run here, or "" when they can. Under CI=true a reason is a failure. */
export function unavailable() {
  const addrs = (process.env.RANKGATE_TEST_REDIS_CLUSTER ?? "").trim();
  let why = "";
  if (!addrs) why = "RANKGATE_TEST_REDIS_CLUSTER is not set (make test sets it; or make test-cluster-up and export it)";
  if (!why && !process.env.RANKGATE_TEST_PG_DSN) why = "RANKGATE_TEST_PG_DSN is not set (make test sets it from deploy/deps.sh postgres)";
  if (why && process.env.CI === "true") throw new Error(`${why} — CI=true, so this fails instead of skipping`);
  return why;
}

// Families of the test gateway: events (sum, max), a projection family, a
// derived one and its input, and a family of its own for the period
// lifecycle (freeze, reviews, settle, awards, archive), and a league.
const families = `families:
  learning:
    source: events
    aggregate: sum
    period: week
    timezone: UTC
    tie: first
    rank: competition
    max_points: 8388607
    seq_capacity: 1073741824
    cache_ttl: 1s
    live: {interval: 200ms}
    dimensions:
      national: {shards: 4}
      province: {shards: 1}
  game:
    source: events
    aggregate: max
    period: all
    tie: member
    rank: ordinal
    max_points: 9007199254740991
    cache_ttl: 1s
    dimensions:
      national: {shards: 2}
  course:
    source: projection
    period: week
    timezone: UTC
    tie: member
    dimensions:
      national: {shards: 1}
  quiz:
    source: events
    period: week
    timezone: UTC
    tie: member
    key_group: study
    max_points: 1000000000
    dimensions:
      national: {shards: 2}
  quiz_double:
    source: derived
    key_group: study
    derived_from:
      aggregate: sum
      inputs:
        - {family: quiz, weight: 2}
    period: week
    timezone: UTC
    tie: member
    dimensions:
      national: {shards: 2}
  cup:
    source: events
    aggregate: sum
    period: week
    timezone: UTC
    tie: first
    max_points: 8388607
    seq_capacity: 1073741824
    cache_ttl: 0s
    dimensions:
      national: {shards: 2}
  league:
    period: week
    timezone: UTC
    tie: first
    cohorts: {size: 30, tiers: [bronze, silver, gold], promote: 7, demote: 5}
    dimensions:
      national: {shards: 1}
`;

function config(addrs, prefix, ledger) {
  return `listen: "127.0.0.1:0"
redis:
  addrs: [${addrs.map((a) => JSON.stringify(a)).join(", ")}]
  prefix: ${JSON.stringify(prefix)}
  dial_timeout: 2s
  read_timeout: 1s
  write_timeout: 1s
  cluster_reload_interval: 1s
${ledger ? "ledger:\n  dsn_env: TS_LEDGER_DSN\n  commit_linger: 1ms\n" : ""}auth:
  tokens:
    - {token_env: TS_ADMIN_TOKEN, scopes: [read, write, admin]}
    - {token_env: TS_SLOW_TOKEN, scopes: [read, write], rate_per_second: 1, burst: 1}
live:
  heartbeat: 1s
limits:
  max_top: 1000
  max_offset: 10000
  max_radius: 100
  max_batch: 1000
  max_lookup: 1000
${families}`;
}

let builtBin;
function gatewayBinary(dir) {
  if (process.env.RANKGATE_GATEWAY_BIN) return process.env.RANKGATE_GATEWAY_BIN;
  if (!builtBin) {
    builtBin = join(dir, "gateway");
    execFileSync("go", ["build", "-o", builtBin, "./cmd/gateway"], { cwd: repoRoot, stdio: ["ignore", "inherit", "inherit"] });
  }
  return builtBin;
}

function psql(dsn, sql) {
  execFileSync("psql", [dsn, "-v", "ON_ERROR_STOP=1", "-Atqc", sql], { stdio: ["ignore", "ignore", "inherit"] });
}

/** A fresh database next to the one of $RANKGATE_TEST_PG_DSN; drop() removes it. */
function freshDatabase() {
  const base = new URL(process.env.RANKGATE_TEST_PG_DSN);
  const name = "rankgate_ts_" + randomBytes(5).toString("hex");
  psql(base.toString(), `create database ${name}`);
  const u = new URL(base.toString());
  u.pathname = "/" + name;
  return {
    dsn: u.toString(),
    drop: () => psql(base.toString(), `drop database if exists ${name} with (force)`),
  };
}

/**
 * A running gateway: url, port, logs(), stop() (SIGTERM, waits for a clean
 * exit) and restart() (stop, then start again on the same port, state kept).
 */
export class Gateway {
  /** ledger: false starts a Redis-only gateway (no PostgreSQL). */
  static async start({ ledger = true } = {}) {
    const g = new Gateway();
    g.dir = mkdtempSync(join(tmpdir(), "rankgate-ts-"));
    g.db = ledger ? freshDatabase() : null;
    g.prefix = "ts" + randomBytes(4).toString("hex");
    const addrs = process.env.RANKGATE_TEST_REDIS_CLUSTER.split(",").map((s) => s.trim()).filter(Boolean);
    g.cfg = join(g.dir, "rankgate.yaml");
    writeFileSync(g.cfg, config(addrs, g.prefix, ledger));
    g.bin = gatewayBinary(g.dir);
    g.log = "";
    await g.#spawn("127.0.0.1:0");
    return g;
  }

  async #spawn(listen) {
    const ready = join(this.dir, "ready");
    rmSync(ready, { force: true });
    const env = { ...process.env, TS_ADMIN_TOKEN: ADMIN_TOKEN, TS_SLOW_TOKEN: SLOW_TOKEN, TS_LEDGER_DSN: this.db?.dsn ?? "" };
    const p = spawn(this.bin, ["serve", "-config", this.cfg, "-listen", listen, "-ready-file", ready, "-log-format", "text", "-log-level", "warn"], {
      env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    this.proc = p;
    // Never leave a gateway behind a test process that exits early.
    const reap = () => p.exitCode === null && p.kill("SIGKILL");
    process.once("exit", reap);
    p.once("exit", () => process.removeListener("exit", reap));
    p.stderr.setEncoding("utf8");
    p.stderr.on("data", (d) => {
      this.log = (this.log + d).slice(-20000);
    });
    this.exited = new Promise((resolve) => p.on("exit", (code, signal) => resolve({ code, signal })));
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (p.exitCode !== null) throw new Error(`gateway exited (${p.exitCode}) before ready:\n${this.log}`);
      if (existsSync(ready)) {
        const addr = readFileSync(ready, "utf8").trim();
        if (addr) {
          this.addr = addr;
          this.url = "http://" + addr;
          this.port = Number(addr.split(":").pop());
          return;
        }
      }
      if (Date.now() > deadline) {
        p.kill("SIGKILL");
        throw new Error(`gateway not ready within 30 s:\n${this.log}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** SIGTERM and wait (bounded) for the exit; true when it exited 0. */
  async stop() {
    if (!this.proc || this.proc.exitCode !== null) return this.proc?.exitCode === 0;
    this.proc.kill("SIGTERM");
    const t = setTimeout(() => this.proc.kill("SIGKILL"), 25_000);
    const { code } = await this.exited;
    clearTimeout(t);
    return code === 0;
  }

  async restart() {
    const clean = await this.stop();
    await this.#spawn(`127.0.0.1:${this.port}`);
    return clean;
  }

  /** Stops the gateway, drops its database and its files. */
  async close() {
    await this.stop();
    try {
      this.db?.drop();
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}
