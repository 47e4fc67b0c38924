// rankgate live board: one board's live stream on a big screen. Plain
// JavaScript, no dependencies. The page lives at
// /ui/live/{family}/{period}/{dimension}?top=10&member=u1&radius=2 (member
// and radius optional) and subscribes to
// GET /v1/boards/{family}/{period}/{dimension}/live on this origin.
//
// Auth: every (re)connection first asks POST /v1/tickets for a single-use
// ticket and opens the stream with ?ticket= (an EventSource cannot send a
// header). On an open gateway that needs no token; when the gateway wants
// one, the page asks the operator once and keeps it in sessionStorage (this
// tab only) — a token never goes in a URL. Data is only ever put in the page
// through textContent and DOM attributes, never as HTML.
"use strict";

(function () {
  const TOKEN_KEY = "rankgate-token"; // shared with the status page
  const ARROW_MS = 10000; // how long a move's arrow stays after it happened
  const MAX_BACKOFF_MS = 30000;

  const $ = (id) => document.getElementById(id);
  const enc = encodeURIComponent;
  const fmtNum = (n) => Number(n).toLocaleString("en-US");
  const between = (lo, hi) => lo + Math.random() * (hi - lo);

  const params = new URLSearchParams(location.search);
  const state = {
    board: null, // [family, period, dimension]
    top: 10,
    member: params.get("member") || "",
    radius: params.get("radius") || "",
    es: null,
    gen: 0, // bumped by every connect: a slower earlier attempt gives up
    conn: "connecting",
    timer: 0,
    failures: 0,
    prev: null, // Map user → {rank, points} of the last event shown
    moves: new Map(), // user → {kind, delta, until}
    asOf: null,
    lagMs: null,
  };

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === "") continue;
      if (k === "class") e.className = v; else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }

  function boardFromPath() {
    const m = /\/live\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(location.pathname);
    if (!m) return null;
    try {
      return m.slice(1).map(decodeURIComponent);
    } catch (_) {
      return null;
    }
  }

  function setConn(kind, detail) {
    const c = $("conn");
    c.className = "conn conn-" + kind;
    c.dataset.state = kind;
    c.textContent = kind === "token" ? "token needed" : kind;
    c.title = detail || "";
  }

  function message(text) {
    $("message").textContent = text || "";
  }

  // ------------------------------------------------------------ connection

  // ticket asks this gateway for a single-use ticket for the stream, with
  // the pasted token when there is one. A refusal throws an Error carrying
  // the status, the gateway's message and Retry-After.
  async function ticket() {
    const tok = sessionStorage.getItem(TOKEN_KEY) || "";
    const res = await fetch("/v1/tickets", {
      method: "POST",
      headers: tok ? { Authorization: "Bearer " + tok } : {},
      cache: "no-store",
    });
    let body = null;
    try { body = await res.json(); } catch (_) { /* not JSON */ }
    if (res.status !== 201 || !body || !body.ticket) {
      const e = (body && body.error) || {};
      const err = new Error(`${res.status} ${e.code || res.statusText}: ${e.message || "no ticket"}`);
      err.status = res.status;
      err.retryAfter = Number(res.headers.get("Retry-After")) || 0;
      throw err;
    }
    return body.ticket;
  }

  async function connect() {
    clearTimeout(state.timer);
    closeStream();
    if (state.failures > 0) setConn(state.conn === "overloaded" ? "overloaded" : "reconnecting");
    const gen = ++state.gen;
    let t;
    try {
      t = await ticket();
      if (gen !== state.gen) return;
    } catch (err) {
      if (gen !== state.gen) return;
      if (err.status === 401 || err.status === 403) {
        askToken(err);
        return;
      }
      message(err.message);
      retry("error", err.retryAfter);
      return;
    }
    const [family, period, dim] = state.board;
    const q = new URLSearchParams({ top: String(state.top) });
    if (state.member) q.set("member", state.member);
    if (state.member && /^\d+$/.test(state.radius)) q.set("radius", state.radius);
    q.set("ticket", t);
    const es = new EventSource(`/v1/boards/${enc(family)}/${enc(period)}/${enc(dim)}/live?${q}`);
    state.es = es;
    let got = false;
    const onData = (ev) => {
      if (state.es !== es) return;
      let d;
      try { d = JSON.parse(ev.data); } catch (_) { return; }
      got = true;
      state.failures = 0;
      setConn("live");
      state.conn = "live";
      message("");
      render(d);
    };
    es.addEventListener("snapshot", onData);
    es.addEventListener("update", onData);
    es.addEventListener("reconnect", () => { if (state.es === es) retry("reconnect"); });
    es.addEventListener("overloaded", () => { if (state.es === es) retry("overloaded"); });
    // EventSource would retry by itself with the same URL, but its ticket is
    // used up: start over with a fresh one instead.
    es.onerror = () => {
      if (state.es !== es) return;
      retry("error");
      if (!got) diagnose();
    };
  }

  function closeStream() {
    if (state.es) {
      state.es.close();
      state.es = null;
    }
  }

  // retry closes the stream and reconnects after a backoff: short after
  // event: reconnect (the gateway is going away), longer after overloaded
  // (this screen did not keep up), growing after failures.
  function retry(kind, retryAfterSec) {
    closeStream();
    clearTimeout(state.timer);
    state.failures++;
    let delay;
    if (kind === "reconnect") delay = between(500, 1500);
    else if (kind === "overloaded") delay = between(3000, 6000);
    else delay = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.min(state.failures - 1, 5)) * between(0.5, 1);
    if (retryAfterSec > 0) delay = Math.max(delay, retryAfterSec * 1000);
    state.conn = kind === "overloaded" ? "overloaded" : "reconnecting";
    setConn(state.conn, `next attempt in ${(delay / 1000).toFixed(1)} s`);
    state.timer = setTimeout(connect, delay);
  }

  // diagnose explains a stream that failed before its first event (an
  // EventSource sees no status): the same board's top answers why.
  async function diagnose() {
    const [family, period, dim] = state.board;
    const tok = sessionStorage.getItem(TOKEN_KEY) || "";
    try {
      const res = await fetch(`/v1/boards/${enc(family)}/${enc(period)}/${enc(dim)}/top?limit=1`, {
        headers: tok ? { Authorization: "Bearer " + tok } : {}, cache: "no-store" });
      if (res.ok) return;
      let e = {};
      try { e = (await res.json()).error || {}; } catch (_) { /* not JSON */ }
      message(`${res.status} ${e.code || res.statusText}: ${e.message || ""}`);
    } catch (_) {
      message("the gateway cannot be reached");
    }
  }

  function askToken(err) {
    closeStream();
    if (sessionStorage.getItem(TOKEN_KEY)) {
      sessionStorage.removeItem(TOKEN_KEY);
      message(`the token was refused (${err.message})`);
    } else {
      message("");
    }
    setConn("token", err.message);
    state.conn = "token";
    $("token-form").hidden = false;
    $("token").focus();
  }

  // ------------------------------------------------------------ rendering

  // moveOf compares an entry with the last event shown: "up"/"down" with the
  // places moved, "new" when it was not shown before (it entered from
  // below), "points" when only its points changed, "" otherwise.
  function moveOf(e) {
    if (!state.prev) return null;
    const p = state.prev.get(e.user);
    if (!p) return { kind: "new", delta: 0 };
    if (e.rank < p.rank) return { kind: "up", delta: p.rank - e.rank };
    if (e.rank > p.rank) return { kind: "down", delta: e.rank - p.rank };
    if (e.points !== p.points) return { kind: "points", delta: 0 };
    return null;
  }

  function arrow(m) {
    switch (m && m.kind) {
      case "up": return ["up", "▲" + m.delta];
      case "down": return ["down", "▼" + m.delta];
      case "new": return ["new up", "▲"];
      default: return ["", ""];
    }
  }

  function row(e, now, flash) {
    const m = flash ? moveOf(e) : null;
    if (m && m.kind !== "points") state.moves.set(e.user, { ...m, until: now + ARROW_MS });
    const shown = state.moves.get(e.user);
    const [cls, txt] = shown && shown.until > now ? arrow(shown) : ["", ""];
    const classes = [];
    if (m) {
      classes.push("flash-" + m.kind);
      if (m.kind !== "points" && state.prev.get(e.user)?.points !== e.points) classes.push("flash-points");
    }
    if (state.member && e.user === state.member) classes.push("me");
    return el("tr", { "data-user": e.user, class: classes.join(" "), "data-until": shown && shown.until > now ? shown.until : "" },
      el("td", { class: "rank" }, e.rank),
      el("td", { class: ("delta " + cls).trim() }, txt),
      el("td", { class: "user" }, e.user),
      el("td", { class: "points" }, fmtNum(e.points)));
  }

  function render(d) {
    const now = Date.now();
    const top = (d.top && d.top.entries) || [];
    const around = (d.around && d.around.entries) || [];
    $("top-body").replaceChildren(...top.map((e) => row(e, now, true)));
    $("empty").hidden = top.length > 0;

    if (state.member) {
      const m = d.member;
      $("follow").hidden = false;
      $("follow-user").textContent = state.member;
      if (m) {
        $("follow-rank").textContent = "#" + m.rank;
        $("follow-points").textContent = fmtNum(m.points) + " pts";
        $("follow-note").textContent = `ahead of ${Number(m.percentile).toFixed(1)}% of ${fmtNum(m.members)}`;
      } else {
        $("follow-rank").textContent = "—";
        $("follow-points").textContent = "";
        $("follow-note").textContent = "not ranked on this board yet";
      }
      $("around-body").replaceChildren(...around.map((e) => row(e, now, false)));
    }

    const prev = new Map();
    for (const e of around.concat(top)) prev.set(e.user, { rank: e.rank, points: e.points });
    state.prev = prev;
    for (const [u, mv] of state.moves) if (mv.until <= now) state.moves.delete(u);

    $("board-name").textContent = `${d.board} · ${d.source}`;
    state.asOf = Date.parse(d.as_of);
    state.lagMs = d.top && typeof d.top.lag_ms === "number" ? d.top.lag_ms : null;
    tick();
  }

  // tick refreshes what ages by itself: the as_of line and the arrows of
  // moves older than ARROW_MS.
  function tick() {
    if (state.asOf) {
      const age = Math.max(0, (Date.now() - state.asOf) / 1000);
      $("as-of").textContent = `as of ${new Date(state.asOf).toLocaleTimeString()} (${age.toFixed(1)} s ago)`;
      $("lag").textContent = state.lagMs === null ? "" : `· index lag ${fmtNum(state.lagMs)} ms`;
    }
    const now = Date.now();
    for (const tr of document.querySelectorAll("tr[data-until]")) {
      if (Number(tr.dataset.until) <= now) {
        const td = tr.querySelector("td.delta");
        td.className = "delta";
        td.textContent = "";
        tr.removeAttribute("data-until");
      }
    }
  }

  // ------------------------------------------------------------ wiring

  function start() {
    state.board = boardFromPath();
    if (params.has("token")) {
      // A token in a URL ends up in history and logs: never use one.
      params.delete("token");
      const q = params.toString();
      history.replaceState(null, "", location.pathname + (q ? "?" + q : ""));
      message("a token does not belong in the URL; paste it when asked");
    }
    if (!state.board) {
      setConn("token", "");
      $("conn").textContent = "no board";
      message("open /ui/live/{family}/{period}/{dimension}, e.g. /ui/live/learning/current/national?top=10&member=u1");
      return;
    }
    const n = parseInt(params.get("top") || "10", 10);
    state.top = n >= 1 && n <= 1000 ? n : 10;
    document.documentElement.style.setProperty("--rows", String(Math.max(5, state.top)));
    const [family, period, dim] = state.board;
    $("title").textContent = `${family} · ${dim}`;
    $("period").textContent = period;
    document.title = `${family} ${dim} — rankgate live`;

    $("token-form").addEventListener("submit", (e) => {
      e.preventDefault();
      const tok = $("token").value.trim();
      if (!tok) return;
      sessionStorage.setItem(TOKEN_KEY, tok);
      $("token").value = "";
      $("token-form").hidden = true;
      state.failures = 0;
      setConn("connecting");
      connect();
    });
    setInterval(tick, 1000);
    setConn("connecting");
    connect();
  }

  document.addEventListener("DOMContentLoaded", start);
})();
