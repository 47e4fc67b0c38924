// The retry rules, with a scripted fetch (no network): which calls are
// retried, on which answers, how long between tries, and that a retry sends
// the same request (an event keeps its event_id). e2e.test.mjs checks the
// same rules against a real gateway (429 with Retry-After, a lost answer).
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { RankgateClient, RankgateError, errorCode } from "../dist/index.js";

const board = { family: "learning", period: "current", dimension: "national" };

function json(status, body, headers = {}) {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });
}
const unavailable = (retryAfter) =>
  json(503, { error: { code: "unavailable", message: "busy" } }, retryAfter === undefined ? {} : { "Retry-After": String(retryAfter) });

/** A client whose fetch plays the answers in order (a function answer is called; an Error is thrown as a transport error). */
function scripted(answers, opts = {}) {
  const sent = [];
  const fetch = async (req) => {
    sent.push({ method: req.method, url: req.url, auth: req.headers.get("Authorization"), body: req.body ? await req.text() : undefined, at: Date.now() });
    const a = answers.shift();
    if (a === undefined) throw new Error("no more scripted answers");
    if (a instanceof Error) throw a;
    return typeof a === "function" ? a(req) : a;
  };
  const exchanges = [];
  const c = new RankgateClient({ baseUrl: "http://gw.test:8080/", token: "secret", fetch, retry: { baseMs: 1, maxMs: 5000 }, onExchange: (e) => exchanges.push(e), ...opts });
  return { c, sent, exchanges };
}

describe("retries", () => {
  test("an event is retried byte for byte on 503, 502, 504, 429 and a transport error", async () => {
    const ok = json(200, { event_id: "e1", duplicate: true, points: 5, boards: [] });
    const { c, sent, exchanges } = scripted([unavailable(), json(502, {}), new TypeError("fetch failed"), ok], { retry: { attempts: 4, baseMs: 1 } });
    const res = await c.postEvent({ event_id: "e1", family: "learning", user: "u1", delta: 5 });
    assert.equal(res.duplicate, true);
    assert.equal(sent.length, 4);
    for (const s of sent) {
      assert.equal(s.method, "POST");
      assert.equal(s.url, "http://gw.test:8080/v1/events");
      assert.equal(s.auth, "Bearer secret");
      assert.deepEqual(JSON.parse(s.body), { event_id: "e1", family: "learning", user: "u1", delta: 5 });
      assert.equal(s.body, sent[0].body);
    }
    assert.deepEqual(exchanges.map((e) => [e.operationId, e.status, e.attempt]), [["postEvent", 503, 1], ["postEvent", 502, 2], ["postEvent", 0, 3], ["postEvent", 200, 4]]);
  });

  test("Retry-After is waited out before the next try", async () => {
    const { c, sent } = scripted([json(429, { error: { code: "rate_limited", message: "slow down" } }, { "Retry-After": "1" }), json(200, { entries: [], board: "b", source: "cache", as_of: "2026-01-01T00:00:00Z" })]);
    await c.getTop(board, { limit: 3 });
    assert.equal(sent.length, 2);
    assert.equal(sent[0].url, "http://gw.test:8080/v1/boards/learning/current/national/top?limit=3");
    const gap = sent[1].at - sent[0].at;
    assert.ok(gap >= 990, `retried after ${gap} ms, want ≥ 1000 (Retry-After: 1)`);
  });

  test("the wait is bounded by maxMs even with a longer Retry-After", async () => {
    const { c, sent } = scripted([unavailable(30), json(200, { status: "ok" })], { retry: { maxMs: 100, baseMs: 1 } });
    await c.healthz();
    const gap = sent[1].at - sent[0].at;
    assert.ok(gap >= 95 && gap < 1000, `retried after ${gap} ms, want ~100 (maxMs)`);
  });

  test("the backoff grows: full jitter under base·2^(i−1)", async () => {
    const { c, sent } = scripted([unavailable(), unavailable(), unavailable(), json(200, { status: "ok" })], { retry: { attempts: 4, baseMs: 40, maxMs: 5000 } });
    await c.healthz();
    const gaps = sent.slice(1).map((s, i) => s.at - sent[i].at);
    const ceil = [40, 80, 160];
    gaps.forEach((g, i) => assert.ok(g <= ceil[i] + 30, `wait ${i + 1} was ${g} ms, want ≤ ${ceil[i]} (+ timer slack)`));
  });

  test("after the last attempt the last error is thrown", async () => {
    const { c, sent } = scripted([unavailable(0), unavailable(0), unavailable(0)], { retry: { attempts: 3, baseMs: 1 } });
    await assert.rejects(c.listFamilies(), (err) => err instanceof RankgateError && err.status === 503 && err.code === "unavailable" && err.retryAfterMs === 0);
    assert.equal(sent.length, 3);
  });

  for (const [name, call] of [
    ["createSnapshot", (c) => c.createSnapshot(board, { depth: 10, ttl_seconds: 60 })],
    ["createTicket", (c) => c.createTicket()],
    ["archivePeriod", (c) => c.archivePeriod("learning", "2026-W01")],
    ["derivePeriod", (c) => c.derivePeriod("learning", "2026-W01")],
    ["rebuildBoard", (c) => c.rebuildBoard(board)],
    ["decideReview", (c) => c.decideReview("r1", { family: "learning", operator: "op", accept: true })],
    ["removeMember", (c) => c.removeMember(board, "u1", { operator: "op", reason: "r" })],
    ["deleteBan", (c) => c.deleteBan("u1")],
    ["retryAward", (c) => c.retryAward("k1")],
    ["readyz", (c) => c.readyz()],
  ]) {
    test(`${name} is sent once, even on 503`, async () => {
      const { c, sent } = scripted([unavailable(1), unavailable(1)]);
      await assert.rejects(call(c), (err) => errorCode(err) === "unavailable" && err.retryAfterMs === 1000);
      assert.equal(sent.length, 1);
    });
  }

  test("a transport error of a call sent once is thrown, not retried", async () => {
    const { c, sent } = scripted([new TypeError("socket hang up"), json(201, { ticket: "t", expires_at: "2026-01-01T00:00:00Z" })]);
    await assert.rejects(c.createTicket(), /POST \/v1\/tickets: socket hang up/);
    assert.equal(sent.length, 1);
  });

  test("a 4xx is not retried: code, field and message come through", async () => {
    const { c, sent } = scripted([json(400, { error: { code: "invalid_argument", message: "limit must be 1..1000", field: "limit" } })]);
    await assert.rejects(c.getTop(board, { limit: 0 }), (err) => {
      assert.ok(err instanceof RankgateError);
      assert.equal(err.status, 400);
      assert.equal(err.code, "invalid_argument");
      assert.equal(err.field, "limit");
      assert.match(err.message, /rankgate: 400 invalid_argument: limit must be 1\.\.1000 \(field limit\)/);
      return true;
    });
    assert.equal(sent.length, 1);
  });

  test("a 2xx that is not JSON is a decoding error, not retried", async () => {
    const { c, sent } = scripted([new Response("<html>a captive portal</html>", { status: 200, headers: { "Content-Type": "application/json" } })]);
    await assert.rejects(c.listFamilies(), /GET \/v1\/families: decoding the answer/);
    assert.equal(sent.length, 1);
  });

  test("an answer without the error shape gets code http_<status>", async () => {
    const { c } = scripted([new Response("<html>bad gateway</html>", { status: 418 })]);
    await assert.rejects(c.getTop(board), (err) => err.code === "http_418" && err.message.includes("<html>bad gateway</html>"));
  });

  test("an event or correction without its id is refused before sending", async () => {
    const { c, sent } = scripted([]);
    await assert.rejects(c.postEvent({ event_id: "", family: "learning", user: "u1", delta: 1 }), /needs an event_id/);
    await assert.rejects(c.postEventBatch([{ event_id: "a", family: "learning", user: "u1", delta: 1 }, { family: "learning", user: "u2", delta: 1 }]), /event 1 has no event_id/);
    await assert.rejects(c.postCorrection({ correction_id: "", family: "learning", user: "u1", delta: 1, operator: "o", reason: "r" }), /needs a correction_id/);
    assert.equal(sent.length, 0);
  });

  test("an abort during the wait ends the call at once with the signal's reason", async () => {
    const { c, sent } = scripted([unavailable(5), json(200, { status: "ok" })], { retry: { maxMs: 10_000 } });
    const ac = new AbortController();
    const t0 = Date.now();
    setTimeout(() => ac.abort(new Error("user gave up")), 100);
    await assert.rejects(c.healthz({ signal: ac.signal }), /user gave up/);
    assert.ok(Date.now() - t0 < 2000, "the abort did not cut the 5 s wait");
    assert.equal(sent.length, 1);
  });

  test("a try that gets no answer within timeoutMs is retried", async () => {
    let n = 0;
    const fetch = (req) => {
      n++;
      if (n === 1) return new Promise((_, reject) => req.signal.addEventListener("abort", () => reject(req.signal.reason)));
      return Promise.resolve(json(200, { status: "ok" }));
    };
    const c = new RankgateClient({ baseUrl: "http://gw.test", fetch, timeoutMs: 50, retry: { baseMs: 1 } });
    assert.deepEqual(await c.healthz(), { status: "ok" });
    assert.equal(n, 2);
  });

  test("path parameters are escaped; the token may be a function", async () => {
    let tokenCalls = 0;
    const { c, sent } = scripted([json(200, { user: "a/b c", points: 1, position: 0, rank: 1, board: "x", source: "primary", as_of: "2026-01-01T00:00:00Z" })], { token: () => `t${++tokenCalls}` });
    await c.getMember({ family: "learning", period: "current", dimension: "province:zhe jiang" }, "a/b c");
    assert.equal(sent[0].url, "http://gw.test:8080/v1/boards/learning/current/province%3Azhe%20jiang/members/a%2Fb%20c");
    assert.equal(sent[0].auth, "Bearer t1");
  });

  test("a base URL that is not http(s) is refused", () => {
    assert.throws(() => new RankgateClient({ baseUrl: "ftp://x" }), /want http\(s\):\/\/host/);
    assert.throws(() => new RankgateClient({ baseUrl: "not a url" }), /want http\(s\):\/\/host/);
  });
});
