// live() with a scripted fetch and a fake EventSource (no network): a fresh
// ticket for every connection, reconnects after `overloaded`, `reconnect`
// and errors, Retry-After of the ticket request waited out, a refused ticket
// fatal; and parseSSE on a stream cut at odd places. e2e.test.mjs follows a
// real gateway's live board across a restart.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { RankgateClient, parseSSE } from "../dist/index.js";

const board = { family: "learning", period: "current", dimension: "national" };
const data = (points) => JSON.stringify({ board: "b", as_of: "2026-01-01T00:00:00Z", source: "primary", top: { entries: [] }, member: { points } });

class FakeEventSource {
  static all = [];
  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.listeners = {};
    this.onopen = null;
    this.onerror = null;
    this.closed = false;
    FakeEventSource.all.push(this);
  }
  addEventListener(type, fn) {
    (this.listeners[type] ??= []).push(fn);
  }
  close() {
    this.closed = true;
    this.readyState = 2;
  }
  // test side
  open() {
    this.readyState = 1;
    this.onopen?.({});
  }
  emit(type, payload, id = "") {
    for (const fn of this.listeners[type] ?? []) fn({ data: payload, lastEventId: id });
  }
  fail() {
    this.onerror?.({});
  }
}

function setup(ticketAnswers) {
  FakeEventSource.all = [];
  let n = 0;
  const asked = [];
  const fetch = async (req) => {
    assert.equal(new URL(req.url).pathname, "/v1/tickets");
    asked.push(Date.now());
    const a = ticketAnswers.shift();
    if (a) return a;
    n++;
    return new Response(JSON.stringify({ ticket: `t${n}`, expires_at: "2026-01-01T00:00:00Z" }), { status: 201, headers: { "Content-Type": "application/json" } });
  };
  const c = new RankgateClient({ baseUrl: "http://gw.test", token: "secret", fetch, EventSource: FakeEventSource });
  return { c, asked };
}

async function until(what, fn, ms = 3000) {
  const deadline = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe("live()", () => {
  test("a fresh ticket per connection; reconnects after overloaded, reconnect and an error", async () => {
    const { c } = setup([]);
    const got = [];
    const errors = [];
    const sub = c.live(board, { top: 3, member: "u1", radius: 1 }, { onData: (d, ev) => got.push([ev.type, ev.id, d.member.points]), onError: (e, info) => errors.push(info) }, { reconnectBaseMs: 10, reconnectMaxMs: 50 });
    await until("first EventSource", () => FakeEventSource.all.length === 1);
    const es1 = FakeEventSource.all[0];
    assert.equal(es1.url, "http://gw.test/v1/boards/learning/current/national/live?top=3&member=u1&radius=1&ticket=t1");
    es1.open();
    es1.emit("snapshot", data(5), "1");
    es1.emit("update", data(6), "2");
    es1.emit("overloaded", "{}", "3");
    assert.equal(es1.closed, true, "the EventSource is closed, not left to retry with a used ticket");
    await until("second EventSource", () => FakeEventSource.all.length === 2);
    const es2 = FakeEventSource.all[1];
    assert.match(es2.url, /ticket=t2$/);
    es2.emit("snapshot", data(7), "1");
    es2.emit("reconnect", "{}", "2");
    await until("third EventSource", () => FakeEventSource.all.length === 3);
    const es3 = FakeEventSource.all[2];
    assert.match(es3.url, /ticket=t3$/);
    es3.fail();
    assert.equal(es3.closed, true);
    await until("fourth EventSource", () => FakeEventSource.all.length === 4);
    es1.emit("update", data(99), "9"); // a closed stream's late event is ignored
    assert.deepEqual(got, [["snapshot", "1", 5], ["update", "2", 6], ["snapshot", "1", 7]]);
    assert.equal(errors.length, 3);
    assert.ok(errors.every((e) => !e.fatal && e.reconnectInMs <= 50));
    assert.equal(sub.connections, 4);
    sub.close();
    assert.equal(FakeEventSource.all[3].closed, true);
    assert.equal(sub.closed, true);
  });

  test("the ticket request's Retry-After is waited out; a refused ticket is fatal", async () => {
    const busy = new Response(JSON.stringify({ error: { code: "unavailable", message: "too many tickets" } }), { status: 503, headers: { "Retry-After": "1" } });
    const { c, asked } = setup([busy]);
    const errors = [];
    const sub = c.live(board, undefined, { onData: () => {}, onError: (e, info) => errors.push({ code: e.code, ...info }) }, { reconnectBaseMs: 10, reconnectMaxMs: 5000 });
    await until("a connection after the wait", () => FakeEventSource.all.length === 1, 5000);
    assert.ok(asked[1] - asked[0] >= 990, `asked again after ${asked[1] - asked[0]} ms, want ≥ 1000 (Retry-After: 1)`);
    assert.deepEqual(errors.map((e) => [e.code, e.fatal, e.reconnectInMs]), [["unavailable", false, 1000]]);
    sub.close();

    const refused = new Response(JSON.stringify({ error: { code: "unauthenticated", message: "bad token" } }), { status: 401 });
    const s2 = setup([refused]);
    const fatal = [];
    const sub2 = s2.c.live(board, undefined, { onData: () => {}, onError: (e, info) => fatal.push({ code: e.code, ...info }) });
    await until("the fatal error", () => fatal.length === 1);
    assert.deepEqual(fatal, [{ code: "unauthenticated", fatal: true }]);
    assert.equal(sub2.closed, true);
    assert.equal(FakeEventSource.all.length, 0);
  });

  test("without an EventSource it says what to pass", () => {
    const c = new RankgateClient({ baseUrl: "http://gw.test" });
    if (globalThis.EventSource) return; // a runtime that has one
    assert.throws(() => c.live(board, undefined, { onData: () => {} }), /pass ClientOptions\.EventSource/);
  });
});

test("parseSSE: events split across chunks anywhere (a CRLF too), comments, multi-line data", async () => {
  const text = ": ping\r\nid: 1\r\nevent: snapshot\r\ndata: " + data(1) + "\r\n\r\n: ping\n\nid: 2\nevent: overloaded\ndata: {}\n\nid: 3\nevent: message\ndata: a\ndata: b\n\n";
  const enc = new TextEncoder().encode(text);
  for (let size = 1; size <= 13; size++) {
    const body = new ReadableStream({
      start(ctl) {
        for (let i = 0; i < enc.length; i += size) ctl.enqueue(enc.slice(i, i + size));
        ctl.close();
      },
    });
    const got = [];
    for await (const m of parseSSE(body)) got.push(m);
    assert.deepEqual(got.map((m) => [m.id, m.type, m.data?.member?.points]), [["1", "snapshot", 1], ["2", "overloaded", undefined], ["3", "message", undefined]], `chunks of ${size} bytes`);
  }
});
