// rankgate status page: plain JavaScript, no dependencies. Everything shown
// comes from the gateway's own API on this origin; data is only ever put in
// the page through textContent and DOM attributes, never as HTML.
"use strict";

(function () {
  const TOP_EVERY_MS = 2000;
  const CACHE_EVERY_MS = 5000;
  const LAYOUT_EVERY_MS = 10000;
  const FAMILIES_EVERY_MS = 30000;
  const SVG = "http://www.w3.org/2000/svg";
  const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
    "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#8c564b"];

  const $ = (id) => document.getElementById(id);
  const params = new URLSearchParams(location.search);
  const state = {
    families: [],
    family: params.get("family") || "",
    board: params.get("board") || "",
    limit: params.get("limit") || "10",
    member: params.get("member") || "",
    topBusy: false,
    cachePrev: null,
  };

  // ------------------------------------------------------------ helpers

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function showError(id, err) {
    const p = $(id);
    if (!err) { p.hidden = true; p.textContent = ""; return; }
    p.hidden = false;
    p.textContent = err.message || String(err);
  }

  function authHeaders() {
    const t = $("token").value.trim();
    return t ? { Authorization: "Bearer " + t } : {};
  }

  // api fetches a JSON answer; a non-2xx answer throws an Error carrying the
  // gateway's error code and message.
  async function api(path) {
    const res = await fetch(path, { headers: authHeaders(), cache: "no-store" });
    let body = null;
    try { body = await res.json(); } catch (_) { /* not JSON */ }
    if (!res.ok) {
      const e = (body && body.error) || {};
      let msg = `${res.status} ${e.code || res.statusText}: ${e.message || path}`;
      if (res.status === 401 || res.status === 403) msg += " (enter a token with the needed scope above)";
      const err = new Error(msg);
      err.status = res.status;
      err.code = e.code;
      throw err;
    }
    return body;
  }

  const enc = encodeURIComponent;
  const boardPath = () => `/v1/boards/${enc(state.family)}/current/${enc(state.board)}`;

  function fmtTime(s) {
    if (!s) return "—";
    const d = new Date(s);
    return isNaN(d) ? s : d.toISOString().slice(0, 16).replace("T", " ") + "Z";
  }

  function fmtBytes(n) {
    if (!(n > 0)) return "0 B";
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    const i = Math.min(u.length - 1, Math.floor(Math.log(n) / Math.log(1024)));
    return (n / Math.pow(1024, i)).toFixed(i ? 1 : 0) + " " + u[i];
  }

  const fmtNum = (n) => Number(n).toLocaleString("en-US");
  const pct = (x) => (x * 100).toFixed(1) + "%";

  // liveLink points at the big-screen page of the board shown.
  function liveLink() {
    const a = $("live-link");
    if (!state.family || !state.board) { a.hidden = true; return; }
    const q = new URLSearchParams({ top: state.limit });
    if (state.member) q.set("member", state.member);
    a.href = `/ui/live/${enc(state.family)}/current/${enc(state.board)}?${q}`;
    a.hidden = false;
  }

  function saveURL() {
    const p = new URLSearchParams();
    if (state.family) p.set("family", state.family);
    if (state.board) p.set("board", state.board);
    if (state.limit !== "10") p.set("limit", state.limit);
    if (state.member) p.set("member", state.member);
    const q = p.toString();
    history.replaceState(null, "", q ? "?" + q : location.pathname);
    liveLink();
  }

  function entryRows(tbody, entries, highlight) {
    tbody.replaceChildren(...entries.map((e) => {
      const tr = el("tr", { "data-user": e.user },
        el("td", { class: "num" }, e.rank),
        el("td", { class: "user" }, e.user),
        el("td", { class: "num" }, fmtNum(e.points)));
      if (highlight && e.user === highlight) tr.className = "hl";
      return tr;
    }));
  }

  // ------------------------------------------------------------ families

  async function loadFamilies() {
    try {
      const list = await api("/v1/families");
      state.families = list.families || [];
      const periods = await Promise.all(state.families.map((f) =>
        api(`/v1/families/${enc(f.name)}/period`).catch((err) => ({ error: err }))));
      $("families-body").replaceChildren(...state.families.map((f, i) => {
        const p = periods[i];
        if (p.error) {
          return el("tr", {}, el("td", {}, f.name), el("td", {}, f.period || ""),
            el("td", { colspan: "5", class: "error" }, p.error.message));
        }
        return el("tr", {},
          el("td", {}, f.name),
          el("td", {}, f.period || ""),
          el("td", { class: "period" }, p.period),
          el("td", { class: "state-" + p.state }, p.state),
          el("td", {}, fmtTime(p.starts)),
          el("td", {}, fmtTime(p.ends)),
          el("td", {}, (f.dimensions || []).join(", ")));
      }));
      if (state.families.length === 0) {
        $("families-body").replaceChildren(el("tr", {}, el("td", { colspan: "7", class: "muted" }, "no family configured")));
      }
      fillFamilySelect();
      showError("families-error", null);
    } catch (err) {
      showError("families-error", err);
    }
  }

  function fillFamilySelect() {
    const sel = $("family");
    const names = state.families.map((f) => f.name);
    if (!names.includes(state.family)) state.family = names[0] || "";
    const current = [...sel.options].map((o) => o.value).join("\n");
    if (current !== names.join("\n")) {
      sel.replaceChildren(...names.map((n) => el("option", { value: n }, n)));
    }
    sel.value = state.family;
  }

  async function loadBoards() {
    if (!state.family) return;
    let dims = [];
    try {
      const list = await api(`/v1/boards/${enc(state.family)}/current`);
      dims = (list.boards || []).map((b) => ({ dim: b.dimension, members: b.members }));
    } catch (err) {
      showError("top-error", err);
    }
    if (!dims.some((d) => d.dim === "national")) dims.unshift({ dim: "national" });
    if (state.board && !dims.some((d) => d.dim === state.board)) dims.push({ dim: state.board });
    if (!state.board) state.board = "national";
    $("board").replaceChildren(...dims.map((d) =>
      el("option", { value: d.dim }, d.members === undefined ? d.dim : `${d.dim} (${fmtNum(d.members)})`)));
    $("board").value = state.board;
  }

  // ------------------------------------------------------------ live top

  async function refreshTop() {
    if (!state.family || !state.board || state.topBusy || document.hidden) return;
    state.topBusy = true;
    try {
      const page = await api(`${boardPath()}/top?limit=${enc(state.limit)}`);
      entryRows($("top-body"), page.entries || [], state.member);
      $("top-meta").textContent = `${page.board} · ${page.source} · as of ${new Date(page.as_of).toLocaleTimeString()}` +
        (page.partial ? " · PARTIAL" : "");
      if (!page.entries || page.entries.length === 0) {
        $("top-body").replaceChildren(el("tr", {}, el("td", { colspan: "3", class: "muted" }, "nobody on this board yet")));
      }
      showError("top-error", null);
    } catch (err) {
      showError("top-error", err);
    } finally {
      state.topBusy = false;
    }
  }

  // ------------------------------------------------------------ search

  async function search(user) {
    state.member = user;
    saveURL();
    const box = $("member-result");
    if (!user) { box.hidden = true; showError("search-error", null); return; }
    try {
      const base = `${boardPath()}/members/${enc(user)}`;
      const [m, around] = await Promise.all([api(base), api(`${base}/around?radius=3`)]);
      const dl = $("member-standing");
      dl.replaceChildren();
      for (const [k, v, cls] of [["user", m.user, "user"], ["rank", "#" + m.rank, "rank"], ["points", fmtNum(m.points), "points"],
        ["position", fmtNum(m.position), "position"], ["members", fmtNum(m.members), "members"],
        ["percentile", m.percentile.toFixed(2), "percentile"]]) {
        dl.append(el("dt", {}, k), el("dd", { class: cls }, v));
      }
      entryRows($("around-body"), around.entries || [], m.user);
      box.hidden = false;
      showError("search-error", null);
      refreshTop();
    } catch (err) {
      box.hidden = true;
      if (err.code === "not_ranked") err.message = `${user} is not on ${state.family}/${state.board}`;
      showError("search-error", err);
    }
  }

  // ------------------------------------------------------------ cache

  // parseCache reads rankgate_cache_requests_total from the Prometheus text
  // format: {family: {hit, miss}}.
  function parseCache(text) {
    const out = {};
    const line = /^rankgate_cache_requests_total\{([^}]*)\}\s+(\S+)/;
    const label = /(\w+)="((?:[^"\\]|\\.)*)"/g;
    for (const l of text.split("\n")) {
      const m = line.exec(l);
      if (!m) continue;
      const labels = {};
      for (const lm of m[1].matchAll(label)) labels[lm[1]] = lm[2];
      const f = (out[labels.family || "?"] ||= { hit: 0, miss: 0 });
      if (labels.result === "hit" || labels.result === "miss") f[labels.result] += Number(m[2]) || 0;
    }
    return out;
  }

  function ratioRow(name, hit, miss, recent) {
    const total = hit + miss;
    const r = total ? hit / total : 0;
    const bar = el("div", {});
    bar.style.width = (r * 100).toFixed(1) + "%";
    const recentText = recent === null ? "" : ` · last ${CACHE_EVERY_MS / 1000} s: ${recent}`;
    return el("div", { class: "ratio", "data-family": name },
      el("div", { class: "label" },
        el("strong", {}, name),
        el("span", { class: "muted" }, `${total ? pct(r) : "—"} (${fmtNum(hit)} hit / ${fmtNum(miss)} miss)${recentText}`)),
      el("div", { class: "bar" }, bar));
  }

  async function refreshCache() {
    if (document.hidden) return;
    try {
      const res = await fetch("/metrics", { cache: "no-store" });
      if (!res.ok) throw new Error(`/metrics: ${res.status}`);
      const now = parseCache(await res.text());
      const prev = state.cachePrev;
      const recent = (f) => {
        if (!prev || !prev[f]) return null;
        const h = now[f].hit - prev[f].hit, m = now[f].miss - prev[f].miss;
        return h + m > 0 ? pct(h / (h + m)) : "idle";
      };
      state.cachePrev = now;
      const names = Object.keys(now).sort();
      let hit = 0, miss = 0;
      const rows = names.map((f) => { hit += now[f].hit; miss += now[f].miss; return ratioRow(f, now[f].hit, now[f].miss, recent(f)); });
      if (names.length > 1) rows.unshift(ratioRow("all families", hit, miss, null));
      if (names.length === 0) rows.push(el("p", { class: "muted" }, "no cache lookups yet"));
      $("cache").replaceChildren(...rows);
      showError("cache-error", null);
    } catch (err) {
      showError("cache-error", err);
    }
  }

  // ------------------------------------------------------------ layout

  async function refreshLayout() {
    if (document.hidden) return;
    try {
      const lay = await api("/v1/layout");
      $("layout").replaceChildren(drawLayout(lay));
      $("layout-warnings").replaceChildren(...(lay.warnings || []).map((w) => el("li", {}, w)));
      $("layout-meta").textContent = `as of ${new Date(lay.as_of).toLocaleTimeString()}`;
      showError("layout-error", null);
    } catch (err) {
      showError("layout-error", err);
    }
  }

  // drawLayout draws the masters as columns and every board shard as a box
  // in its master's column, colored by board.
  function drawLayout(lay) {
    const boards = lay.boards || [];
    const color = {};
    boards.forEach((b, i) => { color[b.board] = PALETTE[i % PALETTE.length]; });
    const nodes = (lay.nodes || []).map((n) => ({ ...n, shards: [] }));
    const byNode = Object.fromEntries(nodes.map((n) => [n.node, n]));
    for (const b of boards) {
      for (const s of b.shards || []) {
        let n = byNode[s.node];
        if (!n) { n = byNode[s.node] = { node: s.node, slots: 0, shards: [], members: 0, memory_bytes: 0 }; nodes.push(n); }
        n.shards.push({ ...s, board: b.board, count: b.shards.length });
      }
    }
    const COL = 210, GAP = 14, HEAD = 64, BOX_W = 44, BOX_H = 24, PER_ROW = 4, PAD = 8;
    const rows = Math.max(1, ...nodes.map((n) => Math.ceil(n.shards.length / PER_ROW)));
    const colH = HEAD + rows * (BOX_H + 4) + PAD;
    const legendY = colH + 20;
    const width = Math.max(nodes.length * (COL + GAP), 320);
    const legendRows = Math.ceil(boards.length / 3);
    const height = legendY + legendRows * 20 + 10;
    const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
      "aria-label": "board shards by Redis master" });

    nodes.forEach((n, i) => {
      const x = i * (COL + GAP);
      root.append(svg("rect", { x, y: 0, width: COL, height: colH, rx: 6, fill: "#f7f8fa", stroke: "#d5d9e0" }));
      root.append(svg("text", { x: x + PAD, y: 18, "font-weight": "600", "font-size": 13, class: "node" }, n.node));
      root.append(svg("text", { x: x + PAD, y: 34, "font-size": 11, fill: "#6b7385" },
        `${fmtNum(n.slots)} slots · ${n.shards.length} shards · ${fmtBytes(n.memory_bytes)}`));
      root.append(svg("text", { x: x + PAD, y: 50, "font-size": 11, fill: "#6b7385" },
        n.replicas && n.replicas.length ? "replicas: " + n.replicas.join(", ") : `${fmtNum(n.members)} members`));
      n.shards.sort((a, b) => (a.board < b.board ? -1 : a.board > b.board ? 1 : a.shard - b.shard));
      n.shards.forEach((s, j) => {
        const bx = x + PAD + (j % PER_ROW) * (BOX_W + 4);
        const by = HEAD + Math.floor(j / PER_ROW) * (BOX_H + 4);
        const g = svg("g", { class: "shard" });
        g.append(svg("title", {}, `${s.board} shard ${s.shard}/${s.count}\n${s.key}\nslot ${s.slot} · ${fmtNum(s.members)} members · ${fmtBytes(s.memory_bytes)}`));
        g.append(svg("rect", { x: bx, y: by, width: BOX_W, height: BOX_H, rx: 3, fill: color[s.board] }));
        g.append(svg("text", { x: bx + BOX_W / 2, y: by + 16, "text-anchor": "middle", "font-size": 11, fill: "#fff" }, "#" + s.shard));
        root.append(g);
      });
    });
    if (nodes.length === 0) root.append(svg("text", { x: 0, y: 20, fill: "#6b7385" }, "no nodes"));
    boards.forEach((b, i) => {
      const x = (i % 3) * 300, y = legendY + Math.floor(i / 3) * 20;
      root.append(svg("rect", { x, y: y - 10, width: 12, height: 12, rx: 2, fill: color[b.board] }));
      root.append(svg("text", { x: x + 18, y, "font-size": 12 }, `${b.board} (${(b.shards || []).length} shards)`));
    });
    return root;
  }

  // ------------------------------------------------------------ wiring

  function every(ms, fn) { fn(); return setInterval(fn, ms); }

  async function selectFamily(name) {
    state.family = name;
    if (name !== $("family").value) $("family").value = name;
    await loadBoards();
    saveURL();
    refreshTop();
  }

  function start() {
    $("token").value = sessionStorage.getItem("rankgate-token") || "";
    $("token").addEventListener("change", () => {
      sessionStorage.setItem("rankgate-token", $("token").value.trim());
      loadFamilies().then(() => selectFamily(state.family));
      refreshLayout();
    });
    $("limit").value = ["10", "20", "50"].includes(state.limit) ? state.limit : "10";
    $("family").addEventListener("change", (e) => { state.board = ""; selectFamily(e.target.value); });
    $("board").addEventListener("change", (e) => { state.board = e.target.value; saveURL(); refreshTop(); if (state.member) search(state.member); });
    $("limit").addEventListener("change", (e) => { state.limit = e.target.value; saveURL(); refreshTop(); });
    $("board-form").addEventListener("submit", (e) => e.preventDefault());
    $("search-form").addEventListener("submit", (e) => { e.preventDefault(); search($("search-input").value.trim()); });
    if (state.member) $("search-input").value = state.member;

    loadFamilies().then(() => selectFamily(state.family)).then(() => {
      if (state.member) search(state.member);
      setInterval(refreshTop, TOP_EVERY_MS);
    });
    setInterval(loadFamilies, FAMILIES_EVERY_MS);
    every(CACHE_EVERY_MS, refreshCache);
    every(LAYOUT_EVERY_MS, refreshLayout);
    every(1000, () => { $("clock").textContent = new Date().toLocaleTimeString(); });
  }

  document.addEventListener("DOMContentLoaded", start);
})();
