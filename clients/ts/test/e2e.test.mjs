// The client against a real gateway (test/gateway.mjs: the program of this
// repository on the test Redis Cluster, in ledger mode on PostgreSQL): every
// operation of api/openapi.yaml is called, retries meet the gateway's own
// 429 with Retry-After and a lost answer, and live boards are followed over
// fetch and over an EventSource with tickets, across a gateway restart.
// The last test fails when an operation of the document was not called.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";

import { EventSource } from "eventsource";

import { RankgateClient, RankgateError, errorCode } from "../dist/index.js";
import { ADMIN_TOKEN, Gateway, SLOW_TOKEN, unavailable } from "./gateway.mjs";
import { specOperations } from "./spec.mjs";

const why = unavailable();
const run = randomBytes(3).toString("hex");
const id = (s) => `${s}-${run}`;
const learning = { family: "learning", period: "current", dimension: "national" };

/** Waits (bounded) until fn returns a truthy value, which it returns. */
async function eventually(what, fn, ms = 10_000) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms${last ? `: ${last.message}` : ""}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("against a real gateway", { skip: why || false }, () => {
  /** @type {Gateway} */
  let gw;
  /** @type {RankgateClient} */
  let c;
  const exchanges = [];
  const clientFor = (token, extra = {}) =>
    new RankgateClient({ baseUrl: gw.url, token, EventSource, onExchange: (e) => exchanges.push(e), retry: { baseMs: 20 }, ...extra });

  before(async () => {
    gw = await Gateway.start();
    c = clientFor(ADMIN_TOKEN);
  });
  after(async () => {
    if (!gw) return;
    // The gateway logs at warn: anything it said is worth seeing.
    const tail = gw.log.trim().split("\n").slice(-20).join("\n");
    if (tail) console.error(`gateway log (warn and above, tail):\n${tail}`);
    await gw.close();
  });

  test("service routes", async () => {
    assert.deepEqual(await c.healthz(), { status: "ok" });
    assert.deepEqual(await c.readyz(), { status: "ok" });
    const doc = await c.getOpenAPI();
    assert.equal(doc.openapi, "3.1.0");
    assert.ok(Object.keys(doc.paths).length >= 35);
    assert.match(await c.metrics(), /^# HELP /m);
    assert.match(await c.statusPage(), /<html/i);
    assert.match(await c.statusPageFile("app.js"), /\S/);
    assert.match(await c.liveBoardPage(learning, { top: 5 }), /<html/i);
    await assert.rejects(c.statusPageFile("no-such-file.js"), (err) => err.status === 404);
  });

  test("events, batches, projections, profiles and every read", async () => {
    const u = (n) => id(`u${n}`);
    const r1 = await c.postEvent({ event_id: id("e1"), family: "learning", user: u(1), delta: 30, dims: { province: "zhejiang" } });
    assert.equal(r1.duplicate, false);
    const again = await c.postEvent({ event_id: id("e1"), family: "learning", user: u(1), delta: 30, dims: { province: "zhejiang" } });
    assert.equal(again.duplicate, true, "a replay of an event id is a duplicate");
    const batch = await c.postEventBatch([
      { event_id: id("e2"), family: "learning", user: u(2), delta: 20 },
      { event_id: id("e3"), family: "learning", user: u(3), delta: 10 },
      { event_id: id("e4"), family: "learning", user: u(4), delta: 0 },
    ]);
    assert.equal(batch.results.length, 3);
    assert.equal(batch.results[0].event_id, id("e2"));
    assert.equal(batch.results[2].error?.code, "invalid_argument", "a zero delta is refused in its slot");

    await c.putProfile(u(1), { name: "Ada" });
    const top = await c.getTop(learning, { limit: 10, profiles: "1", consistency: "primary" });
    assert.deepEqual(top.entries.map((e) => [e.user, e.points, e.rank]), [[u(1), 30, 1], [u(2), 20, 2], [u(3), 10, 3]]);
    assert.equal(top.entries[0].profile?.name, "Ada");

    const m = await c.getMember(learning, u(2));
    assert.equal(m.rank, 2);
    assert.equal(m.members, 3);
    await assert.rejects(c.getMember(learning, id("nobody")), (err) => err instanceof RankgateError && err.status === 404 && err.code === "not_ranked");

    const province = await c.getTop({ ...learning, dimension: "province:zhejiang" }, { consistency: "primary" });
    assert.deepEqual(province.entries.map((e) => e.user), [u(1)]);

    const around = await c.getAround(learning, u(2), { radius: 1 });
    assert.deepEqual(around.entries.map((e) => e.user), [u(1), u(2), u(3)]);

    const p1 = await c.getEntries(learning, { limit: 2, consistency: "primary" });
    assert.deepEqual(p1.entries.map((e) => e.user), [u(1), u(2)]);
    assert.ok(p1.next_cursor);
    const p2 = await c.getEntries(learning, { limit: 2, cursor: p1.next_cursor, consistency: "primary" });
    assert.deepEqual(p2.entries.map((e) => e.user), [u(3)]);

    const snap = await c.createSnapshot(learning, { depth: 10, ttl_seconds: 60 });
    assert.equal(snap.size, 3);
    const fromSnap = await c.getEntries(learning, { snapshot: snap.snapshot, offset: 1, limit: 5 });
    assert.deepEqual(fromSnap.entries.map((e) => e.user), [u(2), u(3)]);

    const look = await c.lookupMembers(learning, [u(3), id("nobody"), u(1)]);
    assert.deepEqual(look.entries.map((e) => e.user), [u(1), u(3)]);
    assert.equal((await c.getCount(learning, { min: 15, max: 100, consistency: "primary" })).count, 2);
    const range = await c.getRange(learning, { min: 15, max: 25, consistency: "primary" });
    assert.deepEqual(range.entries.map((e) => e.user), [u(2)]);

    const boards = await c.listBoards("learning", "current");
    assert.ok(boards.boards.some((b) => b.dimension === "national" || b.board?.endsWith("national")), JSON.stringify(boards));
    const period = await c.getPeriod("learning");
    assert.match(period.period, /^\d{4}-W\d{2}$/);
    assert.equal(period.state, "open");
    const fams = await c.listFamilies();
    assert.deepEqual(fams.families.map((f) => f.name).sort(), ["course", "cup", "game", "league", "learning", "quiz", "quiz_double"]);

    // A projection family takes absolute totals with versions.
    const course = { family: "course", period: "current", dimension: "national" };
    const pr = await c.putProjection(course, u(1), { version: 2, points: 70 });
    assert.equal(pr.applied, true);
    const stale = await c.putProjection(course, u(1), { version: 1, points: 10 });
    assert.equal(stale.applied, false);
    assert.equal((await c.getMember(course, u(1))).points, 70);

    // A max family keeps the best value.
    await c.postEvent({ event_id: id("g1"), family: "game", user: u(1), value: 500 });
    await c.postEvent({ event_id: id("g2"), family: "game", user: u(1), value: 300 });
    assert.equal((await c.getMember({ family: "game", period: "all", dimension: "national" }, u(1))).points, 500);
  });

  test("ledger: history, corrections, reconcile, rebuild, removal, bans, derive, layout", async () => {
    const u = id("led");
    await c.postEvent({ event_id: id("l1"), family: "learning", user: u, delta: 7 });
    const fix = { correction_id: id("c1"), family: "learning", user: u, delta: 3, operator: "ops", reason: "missed quiz" };
    const cr = await c.postCorrection(fix);
    assert.equal(cr.duplicate, false);
    assert.equal((await c.postCorrection(fix)).duplicate, true, "a correction is deduped by its id");
    const hist = await c.getMemberHistory(learning, u, { limit: 10 });
    assert.deepEqual(hist.events.map((e) => [e.event_id, e.points_after]), [[id("c1"), 10], [id("l1"), 7]]);

    const rec = await c.reconcileBoard(learning);
    assert.equal(rec.drifted, 0);
    const reb = await c.rebuildBoard(learning);
    assert.ok(reb.members >= 1);
    assert.equal((await c.getMember(learning, u)).points, 10);

    const rm = await c.removeMember(learning, u, { operator: "ops", reason: "cheating" });
    assert.equal(rm.points, 10);
    await assert.rejects(c.getMember(learning, u), (err) => errorCode(err) === "not_ranked");

    const banned = id("banned");
    await c.postEvent({ event_id: id("b1"), family: "learning", user: banned, delta: 5 });
    const ban = await c.putBan(banned, { operator: "ops", reason: "abuse", families: ["learning"] });
    assert.equal(ban.user, banned);
    assert.ok((await c.listBans()).bans.some((b) => b.user === banned));
    await assert.rejects(c.postEvent({ event_id: id("b2"), family: "learning", user: banned, delta: 5 }), (err) => err.status === 403 && err.code === "member_banned");
    assert.equal((await c.deleteBan(banned)).user, banned);
    await assert.rejects(c.deleteBan(banned), (err) => err.status === 404);
    const audit = await c.listAudit({ limit: 1 });
    assert.deepEqual(audit.entries.map((e) => [e.action, e.target]), [["member.unban", `member:${banned}`]], "the newest audit entry is the unban");
    assert.ok(audit.next_cursor, "older entries follow");
    const older = await c.listAudit({ limit: 1, cursor: audit.next_cursor });
    assert.deepEqual(older.entries.map((e) => [e.action, e.target, e.reason]), [["member.ban", `member:${banned} families:learning`, "abuse"]]);

    await c.postEvent({ event_id: id("q1"), family: "quiz", user: u, delta: 21 });
    const d = await c.derivePeriod("quiz_double", "current");
    assert.equal(d.family, "quiz_double");
    assert.equal((await c.getMember({ family: "quiz_double", period: "current", dimension: "national" }, u, { consistency: "primary" })).points, 42);

    const layout = await c.getLayout({ family: "learning" });
    assert.ok((layout.boards ?? []).length >= 1);
  });

  test("a member's data rights: export, erasure, a second erasure answers zeros", async () => {
    const u = id("erased");
    await c.postEvent({ event_id: id("x1"), family: "learning", user: u, delta: 9 });
    const ex = await c.exportMember(u);
    assert.equal(ex.member, u);
    assert.deepEqual(ex.standings.map((s) => s.points), [9]);
    assert.equal((ex.events ?? []).length, 1);
    const who = { operator: "dpo", reason: "erasure request" };
    const er = await c.eraseMember(u, who);
    assert.equal(er.boards, 1);
    assert.ok(er.ledger_rows > 0);
    assert.deepEqual(await c.eraseMember(u, who), { member: u, boards: 0, ledger_rows: 0, profile: false });
    await assert.rejects(c.getMember(learning, u, { consistency: "primary" }), (err) => errorCode(err) === "not_ranked");
    await assert.rejects(c.exportMember(u), (err) => err.status === 404 && errorCode(err) === "not_ranked");
  });

  test("period lifecycle: freeze, a kept event and its review, settle, awards, archive", async () => {
    const { period } = await c.getPeriod("cup");
    const cupBoard = { family: "cup", period, dimension: "national" };
    await c.postEventBatch([1, 2, 3].map((n) => ({ event_id: id(`cup${n}`), family: "cup", user: id(`cup-u${n}`), delta: 10 * n })));
    assert.equal((await c.getPeriodDetail("cup", period)).state, "open");
    const frozen = await c.freezePeriod("cup", period);
    assert.equal(frozen.state, "frozen");
    assert.equal((await c.freezePeriod("cup", period)).state, "frozen", "freezing again changes nothing");

    await assert.rejects(c.postEvent({ event_id: id("cup-late"), family: "cup", user: id("cup-u1"), delta: 5 }), (err) => err.status === 409 && err.code === "period_closed");
    const reviews = await eventually("the kept event listed", async () => {
      const l = await c.listReviews({ family: "cup", period });
      return (l.reviews ?? []).length > 0 && l;
    });
    const review = reviews.reviews[0];
    assert.equal(review.status, "pending");
    // Accepting it would land a correction on the frozen period (409): reject it.
    const decision = await c.decideReview(review.id, { family: "cup", period, operator: "ops", accept: false });
    assert.equal(decision.accepted, false);
    const after = await c.listReviews({ family: "cup", period });
    assert.equal(after.reviews.find((r) => r.id === review.id)?.status, "rejected");

    const settled = await c.settlePeriod("cup", period, { top: 2 });
    assert.equal(settled.top, 2);
    const standings = Object.values(settled.boards ?? {})[0] ?? [];
    assert.deepEqual(standings.map((s) => [s.user, s.points]), [[id("cup-u3"), 30], [id("cup-u2"), 20]]);
    assert.equal((await c.getMember(cupBoard, id("cup-u1"), { consistency: "primary" })).points, 10, "the rejected event changed nothing");
    assert.deepEqual((await c.settlePeriod("cup", period, { top: 2 })).outbox, settled.outbox, "settling again answers the same");
    const saved = await c.getSettlement("cup", period);
    assert.deepEqual(saved.boards, settled.boards);

    const pending = await c.listAwards({ family: "cup", period, state: "pending" });
    assert.equal((pending.awards ?? []).length, 2);
    const [a1, a2] = pending.awards;
    const acked = await c.ackAward(a1.idempotency_key);
    assert.equal(acked.state, "delivered");
    assert.equal((await c.ackAward(a1.idempotency_key)).state, "delivered", "acking again changes nothing");
    const retried = await c.retryAward(a2.idempotency_key);
    assert.equal(retried.state, "pending");
    const delivered = await c.listAwards({ family: "cup", period, state: "delivered" });
    assert.deepEqual((delivered.awards ?? []).map((a) => a.user), [a1.user]);

    const archived = await c.archivePeriod("cup", period);
    assert.equal(archived.state, "archived");
  });

  test("retries against the gateway: 429 with Retry-After is waited out; a call sent once is not retried", async () => {
    const slow = clientFor(SLOW_TOKEN, { retry: { attempts: 3, baseMs: 1, maxMs: 5000 } });
    const n0 = exchanges.length;
    await slow.listFamilies(); // takes the one token of the bucket
    const t0 = Date.now();
    const fams = await slow.listFamilies(); // 429, Retry-After: 1, then served
    assert.ok(fams.families.length > 0);
    const mine = exchanges.slice(n0).filter((e) => e.operationId === "listFamilies");
    assert.deepEqual(mine.map((e) => e.status), [200, 429, 200]);
    assert.ok(Date.now() - t0 >= 900, `the retry came after ${Date.now() - t0} ms, before the gateway's Retry-After`);

    await slow.listFamilies().catch(() => {}); // drain again
    await assert.rejects(slow.createSnapshot(learning, { depth: 5, ttl_seconds: 30 }), (err) => err.status === 429 && err.code === "rate_limited" && err.retryAfterMs >= 1000);
  });

  test("a lost answer: the retried event keeps its id and counts once", async () => {
    let lost = 0;
    // The request reaches the gateway and is applied; its answer is lost on
    // the way back (as a connection cut after the write).
    const lossy = clientFor(ADMIN_TOKEN, {
      fetch: async (req) => {
        const res = await fetch(req);
        if (lost++ === 0) {
          await res.arrayBuffer();
          throw new TypeError("fetch failed: connection reset");
        }
        return res;
      },
    });
    const u = id("lost");
    const res = await lossy.postEvent({ event_id: id("lost1"), family: "learning", user: u, delta: 9 });
    assert.equal(lost, 2, "one lost answer, one retry");
    assert.equal(res.duplicate, true, "the retry carried the same event_id");
    assert.equal((await c.getMember(learning, u)).points, 9, "counted once");
  });

  test("a live board over fetch: snapshot, then an update after a write; a ticket opens it once", async () => {
    const u = id("live");
    await c.postEvent({ event_id: id("lv1"), family: "learning", user: u, delta: 1000 });
    const stream = await c.getLive(learning, { top: 3, member: u, radius: 1 });
    const it = stream[Symbol.asyncIterator]();
    const first = (await it.next()).value;
    assert.equal(first.type, "snapshot");
    assert.equal(first.data.member.user, u);
    assert.equal(first.data.top.entries[0].user, u);
    await c.postEvent({ event_id: id("lv2"), family: "learning", user: u, delta: 5 });
    let ev;
    do ev = (await it.next()).value;
    while (ev.type !== "update" || ev.data.member?.points !== 1005);
    assert.ok(Number(ev.id) > Number(first.id));
    stream.close();

    const { ticket } = await c.createTicket();
    const anon = clientFor(undefined);
    const byTicket = await anon.getLive(learning, { top: 1 }, { ticket });
    const snap = (await byTicket[Symbol.asyncIterator]().next()).value;
    assert.equal(snap.type, "snapshot");
    byTicket.close();
    await assert.rejects(anon.getLive(learning, { top: 1 }, { ticket }), (err) => err.status === 401 && err.code === "unauthenticated", "a used ticket is refused");
    await assert.rejects(anon.getLive(learning, { top: 1 }), (err) => err.status === 401);
  });

  test("a live board over EventSource with tickets, reconnecting across a gateway restart", async () => {
    const u = id("es");
    await c.postEvent({ event_id: id("es1"), family: "learning", user: u, delta: 2000 });
    const got = [];
    const errors = [];
    let opens = 0;
    const sub = c.live(learning, { top: 2, member: u, radius: 0 }, {
      onData: (data, ev) => got.push({ ...ev, points: data.member?.points }),
      onOpen: () => opens++,
      onError: (err, info) => errors.push({ err: String(err?.message ?? err), ...info }),
    }, { reconnectBaseMs: 100, reconnectMaxMs: 1000 });
    try {
      await eventually("a snapshot", () => got.some((g) => g.type === "snapshot" && g.points === 2000));
      await c.postEvent({ event_id: id("es2"), family: "learning", user: u, delta: 1 });
      await eventually("an update", () => got.some((g) => g.type === "update" && g.points === 2001));
      assert.equal(sub.connections, 1);

      // The old process ends every stream with `event: reconnect`; the
      // subscription comes back with a fresh ticket, and its first event
      // from the new process is a snapshot. (A stream sends one snapshot,
      // first: any snapshot after the mark is a new connection's.)
      const mark = got.length;
      const clean = await gw.restart();
      assert.ok(clean, "the gateway did not exit cleanly");
      await eventually("a snapshot from the restarted gateway", () => got.slice(mark).some((g) => g.type === "snapshot" && g.points === 2001), 20_000)
        .catch((err) => assert.fail(`${err.message}; events since the restart: ${JSON.stringify(got.slice(mark))}; errors: ${JSON.stringify(errors)}; ${sub.connections} connections`));
      await c.postEvent({ event_id: id("es3"), family: "learning", user: u, delta: 1 });
      await eventually("an update from the restarted gateway", () => got.slice(mark).some((g) => g.type === "update" && g.points === 2002));
      assert.ok(sub.connections >= 2, `${sub.connections} tickets asked for, want a fresh one per connection`);
      assert.ok(opens >= 2);
      assert.ok(errors.length >= 1 && errors.every((e) => !e.fatal), JSON.stringify(errors));
    } finally {
      sub.close();
    }
    assert.equal(sub.closed, true);
  });

  test("a refused ticket ends the subscription: fatal", async () => {
    const bad = clientFor("not-a-token");
    const errs = [];
    const sub = bad.live(learning, undefined, { onData: () => {}, onError: (err, info) => errs.push({ err, info }) });
    await eventually("the fatal error", () => errs.length > 0);
    assert.equal(errs[0].info.fatal, true);
    assert.equal(errs[0].err.status, 401);
    assert.equal(sub.closed, true);
  });

  test("leagues: a member's cohort and board, the cohorts, the moves", async () => {
    const u = id("lg");
    const before = await c.getLeague("league", u);
    assert.equal(before.tier, "bronze", "a new member's tier is the first");
    assert.equal(before.cohort, null);
    await c.postEvent({ event_id: id("lg1"), family: "league", user: u, delta: 5 });
    const l = await c.getLeague("league", u, { period: "current" });
    assert.equal(l.tier, "bronze");
    assert.match(l.cohort ?? "", /^bronze-\d+$/);
    assert.equal(l.board, `league/${l.period}/cohort:${l.cohort}`);
    const cs = await c.listCohorts("league", { period: "current" });
    assert.ok(cs.cohorts.some((x) => x.cohort === l.cohort && x.tier === "bronze" && x.size >= 1));
    const top = await c.getTop({ family: "league", period: "current", dimension: `cohort:${l.cohort}` }, { limit: 30, consistency: "primary" });
    assert.ok(top.entries.some((e) => e.user === u && e.points === 5));
    const mv = await c.listMoves("league", { period: l.period });
    assert.equal(mv.recorded, false, "no moves before the period ends");
    assert.deepEqual(mv.moves, []);
    await assert.rejects(c.listCohorts("learning"), (err) => err.status === 400 && err.code === "invalid_argument");
  });

  // One tour of the tournament routes, against a gateway of either mode.
  async function tournamentTour(rc, suffix) {
    const tid = `cup${suffix}${run}`;
    const start = new Date(Date.now() - 60_000).toISOString();
    const end = new Date(Date.now() + 3_600_000).toISOString();
    const created = await rc.createTournament({ id: tid, start, end, max_size: 2, max_attempts: 2, join_required: true });
    assert.equal(created.id, tid);
    await assert.rejects(rc.createTournament({ id: tid, start, end }), (err) => err.status === 409 && err.code === "already_exists");
    assert.ok((await rc.listTournaments({ state: "active" })).tournaments.some((t) => t.id === tid));
    assert.equal((await rc.getTournament(tid)).id, tid);
    await assert.rejects(rc.getTournament(`no${run}`), (err) => err.status === 404 && err.code === "unknown_tournament");

    const a = id(`ta${suffix}`), b = id(`tb${suffix}`), x = id(`tx${suffix}`);
    assert.equal((await rc.joinTournament(tid, a)).joined, true);
    assert.equal((await rc.joinTournament(tid, a)).joined, false, "a second join of a member already in");
    assert.equal((await rc.joinTournament(tid, b)).joined, true);
    await assert.rejects(rc.joinTournament(tid, x), (err) => err.status === 409 && err.code === "tournament_full");
    await assert.rejects(rc.postEvent({ event_id: id("tx1"), family: tid, user: x, delta: 5 }), (err) => err.status === 409 && err.code === "not_joined");
    await rc.postEvent({ event_id: id("ta1"), family: tid, user: a, delta: 5 });
    await rc.postEvent({ event_id: id("tb1"), family: tid, user: b, delta: 7 });
    await rc.postEvent({ event_id: id("tb2"), family: tid, user: b, delta: 1 });
    await assert.rejects(rc.postEvent({ event_id: id("tb3"), family: tid, user: b, delta: 1 }), (err) => err.status === 409 && err.code === "attempts_exhausted");
    const top = await rc.getTop({ family: tid, period: "current", dimension: "national" }, { limit: 10, consistency: "primary" });
    assert.deepEqual(top.entries.map((e) => [e.user, e.points]), [[b, 8], [a, 5]]);

    assert.equal((await rc.cancelTournament(tid)).id, tid);
    assert.equal((await rc.cancelTournament(tid)).id, tid, "cancelling again answers the cancelled tournament");
    assert.ok((await rc.listTournaments({ state: "cancelled" })).tournaments.some((t) => t.id === tid));
  }

  test("tournaments, on the ledger gateway: create, list, join, write, read, cancel", async () => {
    await tournamentTour(c, "l");
  });

  test("tournaments, on a Redis-only gateway: create, list, join, write, read, cancel", async () => {
    const rgw = await Gateway.start({ ledger: false });
    try {
      const rc = new RankgateClient({ baseUrl: rgw.url, token: ADMIN_TOKEN, onExchange: (e) => exchanges.push(e), retry: { baseMs: 20 } });
      await tournamentTour(rc, "r");
    } finally {
      await rgw.close();
    }
  });

  test("every operation of api/openapi.yaml was called, with an answer it documents", () => {
    const ops = specOperations();
    const notCalled = [];
    for (const op of ops) {
      const mine = exchanges.filter((e) => e.operationId === op.operationId);
      if (!mine.some((e) => op.statuses.includes(e.status))) {
        notCalled.push(`${op.method} ${op.path} (${op.operationId}): ${mine.length ? `answers ${mine.map((e) => e.status).join(",")}` : "never called"}`);
      }
    }
    assert.deepEqual(notCalled, [], `${notCalled.length} of ${ops.length} operations not covered against the gateway`);
  });
});
