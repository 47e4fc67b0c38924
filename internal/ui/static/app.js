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

  const $ = (id) => document.getElementById(id);
  const params = new URLSearchParams(location.search);
  const state = {
    families: [],
    tournaments: [], // the active ones (GET /v1/tournaments?state=active)
    familiesLoaded: false, // GET /v1/families answered at least once
    family: params.get("family") || "",
    board: params.get("board") || "",
    limit: params.get("limit") || "10",
    member: params.get("member") || "",
    topBusy: false,
    cachePrev: null,
    layout: null, // the last GET /v1/layout
    nodeStats: {}, // node address → {up, memory, ops}, from the cluster monitor's metrics
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
  const plural = (n, word) => `${fmtNum(n)} ${word}${n === 1 ? "" : "s"}`;
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
      state.familiesLoaded = true;
      const periods = await Promise.all(state.families.map((f) =>
        api(`/v1/families/${enc(f.name)}/period`).catch((err) => ({ error: err }))));
      // Leagues (a cohort dimension): their current cohorts, per tier.
      const cohorts = await Promise.all(state.families.map((f) =>
        (f.dimensions || []).includes("cohort")
          ? api(`/v1/families/${enc(f.name)}/cohorts?period=current`).catch(() => null)
          : null));
      $("families-body").replaceChildren(...state.families.flatMap((f, i) => {
        const p = periods[i];
        if (p.error) {
          return [el("tr", {}, el("td", {}, f.name), el("td", {}, f.period || ""),
            el("td", { colspan: "5", class: "error" }, p.error.message))];
        }
        const rows = [familyRow(f, p)];
        if (cohorts[i]) rows.push(cohortRow(cohorts[i]));
        return rows;
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

  // cohortRow lists a league's cohorts of the current period: per tier, how
  // many cohorts and members, and each cohort with its size.
  function cohortRow(list) {
    const tiers = new Map();
    for (const c of list.cohorts || []) {
      if (!tiers.has(c.tier)) tiers.set(c.tier, []);
      tiers.get(c.tier).push(c);
    }
    const parts = [...tiers].map(([tier, cs]) => {
      const members = cs.reduce((n, c) => n + c.size, 0);
      const shown = cs.slice(0, 12).map((c) => `${c.cohort} (${c.size})`).join(", ");
      return `${tier}: ${cs.length} cohorts, ${members} members — ${shown}${cs.length > 12 ? ", …" : ""}`;
    });
    return el("tr", { class: "cohorts" }, el("td", {}, ""),
      el("td", { colspan: "6", class: "muted" }, parts.length ? "cohorts " + parts.join("; ") : "no cohort yet this period"));
  }

  function familyRow(f, p) {
    return el("tr", {},
      el("td", {}, f.name),
      el("td", {}, f.period || ""),
      el("td", { class: "period" }, p.period),
      el("td", { class: "state-" + p.state }, p.state),
      el("td", {}, fmtTime(p.starts)),
      el("td", {}, fmtTime(p.ends)),
      el("td", {}, (f.dimensions || []).join(", ")));
  }

  // The family select lists the configured families, then the active
  // tournaments (a tournament's boards read like any family's).
  function fillFamilySelect() {
    // The tournaments may answer before the families: until the families
    // are in, the list is incomplete and must not replace the family the
    // address named.
    if (!state.familiesLoaded) return;
    const sel = $("family");
    const opts = state.families.map((f) => ({ value: f.name, label: f.name }))
      .concat(state.tournaments.map((t) => ({ value: t.id, label: `${t.id} (tournament)` })));
    const names = opts.map((o) => o.value);
    if (!names.includes(state.family)) state.family = names[0] || "";
    const current = [...sel.options].map((o) => o.value).join("\n");
    if (current !== names.join("\n")) {
      sel.replaceChildren(...opts.map((o) => el("option", { value: o.value }, o.label)));
    }
    sel.value = state.family;
  }

  // ------------------------------------------------------------ tournaments

  // loadTournaments lists the active tournaments; the card stays hidden
  // when there is none or the gateway has tournaments disabled (404).
  async function loadTournaments() {
    try {
      const list = await api("/v1/tournaments?state=active");
      state.tournaments = list.tournaments || [];
      showError("tournaments-error", null);
    } catch (err) {
      state.tournaments = [];
      if (err.status !== 404) showError("tournaments-error", err);
    }
    $("tournaments-card").hidden = state.tournaments.length === 0 && $("tournaments-error").hidden;
    $("tournaments-body").replaceChildren(...state.tournaments.map((t) => {
      const link = el("a", { href: `?family=${enc(t.id)}&board=national`, class: "show" }, t.id);
      link.addEventListener("click", (e) => { e.preventDefault(); state.board = "national"; $("top-why").hidden = true; selectFamily(t.id); });
      return el("tr", {},
        el("td", { class: "tournament" }, link),
        el("td", {}, t.title || ""),
        el("td", { class: "period" }, t.period || ""),
        el("td", { class: "num seats" }, t.max_size ? `${fmtNum(t.size)} / ${fmtNum(t.max_size)}` : fmtNum(t.size)),
        el("td", {}, fmtTime(t.ends)));
    }));
    fillFamilySelect();
  }

  // The busiest board is the one with the most members in its family's
  // current period (GET /v1/boards/{family}/current: one ZCARD per shard,
  // read scope); ties go to national, then to the first family and board
  // by name.
  function busier(a, b) {
    if (a.members !== b.members) return b.members - a.members;
    if ((a.dim === "national") !== (b.dim === "national")) return a.dim === "national" ? -1 : 1;
    return a.family < b.family ? -1 : a.family > b.family ? 1 : a.dim < b.dim ? -1 : a.dim > b.dim ? 1 : 0;
  }

  async function currentBoards(family) {
    const list = await api(`/v1/boards/${enc(family)}/current`);
    return (list.boards || []).map((b) => ({ family, dim: b.dimension, members: b.members || 0 }));
  }

  // pickBusiest opens the page on the busiest board of every family's
  // current period; with every board empty it keeps the first family.
  async function pickBusiest() {
    const lists = await Promise.all(state.families.map((f) => currentBoards(f.name).catch(() => [])));
    const all = lists.flat().filter((b) => b.members > 0).sort(busier);
    if (all.length === 0) return;
    state.family = all[0].family;
    state.board = all[0].dim;
    $("top-why").textContent = `busiest board: ${fmtNum(all[0].members)} members`;
    $("top-why").hidden = false;
  }

  async function loadBoards() {
    if (!state.family) return;
    let dims = [];
    try {
      dims = await currentBoards(state.family);
    } catch (err) {
      showError("top-error", err);
    }
    if (!state.board) {
      const busiest = dims.filter((d) => d.members > 0).sort(busier)[0];
      state.board = busiest ? busiest.dim : "national";
    }
    if (!dims.some((d) => d.dim === "national")) dims.unshift({ dim: "national" });
    if (!dims.some((d) => d.dim === state.board)) dims.push({ dim: state.board });
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

  // parseMetrics reads the samples of the named metrics from the Prometheus
  // text format: [{name, labels, value}].
  function parseMetrics(text, names) {
    const out = [];
    const line = /^(\w+)\{([^}]*)\}\s+(\S+)/;
    const label = /(\w+)="((?:[^"\\]|\\.)*)"/g;
    for (const l of text.split("\n")) {
      const m = line.exec(l);
      if (!m || !names.includes(m[1])) continue;
      const labels = {};
      for (const lm of m[2].matchAll(label)) labels[lm[1]] = lm[2];
      out.push({ name: m[1], labels, value: Number(m[3]) });
    }
    return out;
  }

  // parseCache sums rankgate_cache_requests_total: {family: {hit, miss}}.
  function parseCache(samples) {
    const out = {};
    for (const s of samples) {
      if (s.name !== "rankgate_cache_requests_total") continue;
      const f = (out[s.labels.family || "?"] ||= { hit: 0, miss: 0 });
      if (s.labels.result === "hit" || s.labels.result === "miss") f[s.labels.result] += s.value || 0;
    }
    return out;
  }

  // NODE_METRICS are what the cluster monitor exports per Redis node.
  const NODE_METRICS = ["rankgate_redis_node_up", "rankgate_redis_node_used_memory_bytes", "rankgate_redis_node_ops_per_second"];

  // parseNodes reads the monitor's last poll: {address: {up, memory, ops}}.
  function parseNodes(samples) {
    const out = {};
    for (const s of samples) {
      const addr = s.labels.node;
      if (!addr || !NODE_METRICS.includes(s.name)) continue;
      const n = (out[addr] ||= { up: true, memory: 0, ops: 0 });
      if (s.name === "rankgate_redis_node_up") n.up = s.value === 1;
      else if (s.name === "rankgate_redis_node_used_memory_bytes") n.memory = s.value;
      else n.ops = s.value;
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
      const samples = parseMetrics(await res.text(), ["rankgate_cache_requests_total", ...NODE_METRICS]);
      const nodes = parseNodes(samples);
      if (JSON.stringify(nodes) !== JSON.stringify(state.nodeStats)) {
        state.nodeStats = nodes;
        renderLayout();
      }
      const now = parseCache(samples);
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
      state.layout = lay;
      renderLayout();
      $("layout-warnings").replaceChildren(...(lay.warnings || []).map((w) => el("li", {}, w)));
      $("layout-meta").textContent = `as of ${new Date(lay.as_of).toLocaleTimeString()}`;
      showError("layout-error", null);
    } catch (err) {
      showError("layout-error", err);
    }
  }

  // renderLayout draws the last layout with the last node statistics.
  function renderLayout() {
    if (!state.layout) return;
    const { picture, legend } = drawLayout(state.layout, state.nodeStats);
    $("layout").replaceChildren(picture);
    $("layout-legend").replaceChildren(...legend);
  }

  // splitBoard reads "family/period/dimension" ("province:zhejiang" has the
  // kind "province").
  function splitBoard(name) {
    const [family, period, ...rest] = name.split("/");
    const dim = rest.join("/");
    const colon = dim.indexOf(":");
    return { family, period, dim, kind: colon < 0 ? dim : dim.slice(0, colon) };
  }

  // familyColor gives family i of n its own hue, spread evenly round the
  // wheel, every other one lighter: no two families share a colour however
  // many, and neighbours differ in lightness too.
  function familyColor(i, n) {
    return hslHex((i * 360) / Math.max(1, n), 0.7, i % 2 ? 0.56 : 0.4);
  }

  // kindColor shades a family's colour for its dimension kind j (0, national:
  // the colour itself; then lighter, darker, lightest, …).
  function kindColor(base, j) {
    if (j === 0) return base;
    const step = Math.floor((j - 1) / 3);
    switch ((j - 1) % 3) {
      case 0: return tint(base, Math.min(0.9, 0.5 + 0.1 * step));
      case 1: return shade(base, Math.min(0.8, 0.45 + 0.1 * step));
      default: return tint(base, Math.min(0.9, 0.78 + 0.05 * step));
    }
  }

  // shade mixes a colour with black (t = 0: the colour, 1: black).
  function shade(hex, t) {
    const n = parseInt(hex.slice(1), 16);
    const mix = (c) => Math.round(c * (1 - t)).toString(16).padStart(2, "0");
    return "#" + mix((n >> 16) & 255) + mix((n >> 8) & 255) + mix(n & 255);
  }

  // inkOn picks dark or light text for a fill.
  function inkOn(hex) {
    const n = parseInt(hex.slice(1), 16);
    const y = 0.299 * ((n >> 16) & 255) + 0.587 * ((n >> 8) & 255) + 0.114 * (n & 255);
    return y > 150 ? "#1d2330" : "#fff";
  }

  function hslHex(h, s, l) {
    const f = (n) => {
      const k = (n + h / 30) % 12;
      const c = l - s * Math.min(l, 1 - l) * Math.max(-1, Math.min(k - 3, 9 - k, 1));
      return Math.round(c * 255).toString(16).padStart(2, "0");
    };
    return "#" + f(0) + f(8) + f(4);
  }

  // tint mixes a colour with white (t = 0: the colour, 1: white).
  function tint(hex, t) {
    const n = parseInt(hex.slice(1), 16);
    const mix = (c) => Math.round(c + (255 - c) * t).toString(16).padStart(2, "0");
    return "#" + mix((n >> 16) & 255) + mix((n >> 8) & 255) + mix(n & 255);
  }

  // layoutGroups groups the boards by family (in the order of
  // /v1/families) and, inside a family, by dimension kind (national first):
  // one colour per family, one shade of it per kind.
  function layoutGroups(boards) {
    const order = state.families.map((f) => f.name);
    const fams = new Map();
    for (const b of boards) {
      const p = splitBoard(b.board);
      let f = fams.get(p.family);
      if (!f) { f = { family: p.family, kinds: new Map(), boards: 0, shards: 0, members: 0 }; fams.set(p.family, f); }
      let k = f.kinds.get(p.kind);
      if (!k) { k = { kind: p.kind, boards: 0, shards: 0 }; f.kinds.set(p.kind, k); }
      const shards = b.shards || [];
      const members = shards.reduce((a, s) => a + (s.members || 0), 0);
      k.boards++; k.shards += shards.length;
      f.boards++; f.shards += shards.length;
      f.members = Math.max(f.members, members);
    }
    const rank = (n) => { const i = order.indexOf(n); return i < 0 ? order.length : i; };
    const list = [...fams.values()].sort((a, b) => rank(a.family) - rank(b.family) || (a.family < b.family ? -1 : a.family > b.family ? 1 : 0));
    // Colours follow the configured families, so they stay put as boards
    // come and go; families the page does not know yet come after.
    const extra = list.filter((f) => rank(f.family) >= order.length).map((f) => f.family);
    const total = order.length + extra.length;
    list.forEach((f) => {
      const r = rank(f.family);
      f.color = familyColor(r < order.length ? r : order.length + extra.indexOf(f.family), total);
      const kinds = [...f.kinds.values()].sort((a, b) =>
        (a.kind === "national" ? -1 : b.kind === "national" ? 1 : a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
      kinds.forEach((k, j) => { k.color = kindColor(f.color, j); });
      f.kindList = kinds;
    });
    return list;
  }

  // drawLayout draws the masters as columns and, in each, the board shards
  // it holds grouped by family; a shard's colour is its family's, shaded by
  // dimension kind. The legend is an HTML list that wraps, never cut off.
  function drawLayout(lay, stats) {
    const boards = lay.boards || [];
    const groups = layoutGroups(boards);
    const fam = Object.fromEntries(groups.map((f) => [f.family, f]));
    const nodes = (lay.nodes || []).map((n) => ({ ...n, shards: [] }));
    const byNode = Object.fromEntries(nodes.map((n) => [n.node, n]));
    for (const b of boards) {
      const p = splitBoard(b.board);
      for (const s of b.shards || []) {
        let n = byNode[s.node];
        if (!n) { n = byNode[s.node] = { node: s.node, slots: 0, shards: [], members: 0, memory_bytes: 0 }; nodes.push(n); }
        n.shards.push({ ...s, board: b.board, family: p.family, kind: p.kind, count: b.shards.length });
      }
    }
    const GAP = 14, HEAD = 80, BOX_W = 44, BOX_H = 24, PAD = 8, FAM_H = 18;
    const avail = $("layout").clientWidth || 0;
    const COL = Math.max(210, Math.floor((avail - GAP * Math.max(0, nodes.length - 1)) / Math.max(1, nodes.length)));
    const perRow = Math.max(1, Math.floor((COL - 2 * PAD + 4) / (BOX_W + 4)));
    // Each column: per family present, a label line and its boxes.
    for (const n of nodes) {
      const famOrder = (f) => groups.indexOf(fam[f]);
      n.shards.sort((a, b) => famOrder(a.family) - famOrder(b.family) ||
        (a.board < b.board ? -1 : a.board > b.board ? 1 : a.shard - b.shard));
      n.groups = [];
      for (const s of n.shards) {
        let g = n.groups[n.groups.length - 1];
        if (!g || g.family !== s.family) { g = { family: s.family, shards: [] }; n.groups.push(g); }
        g.shards.push(s);
      }
      n.height = HEAD + n.groups.reduce((h, g) => h + FAM_H + Math.ceil(g.shards.length / perRow) * (BOX_H + 4) + 4, 0) + PAD;
    }
    const colH = Math.max(HEAD + PAD + BOX_H, ...nodes.map((n) => n.height));
    const width = Math.max(nodes.length * COL + GAP * Math.max(0, nodes.length - 1), 320);
    const height = colH + 2;
    const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
      "aria-label": "board shards by Redis master, grouped by family" });

    nodes.forEach((n, i) => {
      const x = i * (COL + GAP);
      const st = stats[n.node];
      root.append(svg("rect", { x, y: 0, width: COL, height: colH, rx: 6, fill: "#f7f8fa", stroke: "#d5d9e0" }));
      root.append(svg("text", { x: x + PAD, y: 18, "font-weight": "600", "font-size": 13, class: "node" }, n.node));
      root.append(svg("text", { x: x + PAD, y: 34, "font-size": 11, fill: "#6b7385" },
        `${fmtNum(n.slots)} slots · ${plural(n.shards.length, "shard")} · ${fmtNum(n.members)} members · boards ${fmtBytes(n.memory_bytes)}`));
      const statAttrs = { x: x + PAD, y: 50, "font-size": 11, class: "node-stats", "data-node": n.node };
      let statText = "memory — · ops/s — (not in the monitor's last poll)";
      if (st && !st.up) {
        statText = "down at the last monitor poll";
        statAttrs.fill = "#c62828";
      } else if (st) {
        statText = `used ${fmtBytes(st.memory)} · ${fmtNum(Math.round(st.ops))} ops/s`;
        statAttrs["data-memory-bytes"] = String(st.memory);
        statAttrs["data-ops"] = String(st.ops);
      }
      if (!statAttrs.fill) statAttrs.fill = "#1d2330";
      root.append(svg("text", statAttrs, statText));
      const reps = (n.replicas || []).map((r) => {
        const rs = stats[r];
        return rs ? `${r} (${rs.up ? fmtNum(Math.round(rs.ops)) + " ops/s" : "down"})` : r;
      });
      root.append(svg("text", { x: x + PAD, y: 66, "font-size": 11, fill: "#6b7385" },
        reps.length ? "replicas: " + reps.join(", ") : "no replica"));
      let y = HEAD;
      for (const g of n.groups) {
        const f = fam[g.family];
        root.append(svg("text", { x: x + PAD, y: y + 12, "font-size": 11, "font-weight": "600", fill: shade(f.color, 0.3), class: "family",
          "data-family": g.family }, `${g.family} · ${plural(g.shards.length, "shard")}`));
        y += FAM_H;
        g.shards.forEach((s, j) => {
          const bx = x + PAD + (j % perRow) * (BOX_W + 4);
          const by = y + Math.floor(j / perRow) * (BOX_H + 4);
          const fill = f.kinds.get(s.kind).color;
          const box = svg("g", { class: "shard", "data-node": n.node, "data-board": s.board, "data-family": s.family, "data-kind": s.kind });
          box.append(svg("title", {}, `${s.board} shard ${s.shard}/${s.count}\n${s.key}\nslot ${s.slot} · ${fmtNum(s.members)} members · ${fmtBytes(s.memory_bytes)}`));
          box.append(svg("rect", { x: bx, y: by, width: BOX_W, height: BOX_H, rx: 3, fill }));
          box.append(svg("text", { x: bx + BOX_W / 2, y: by + 16, "text-anchor": "middle", "font-size": 11,
            fill: inkOn(fill) }, "#" + s.shard));
          root.append(box);
        });
        y += Math.ceil(g.shards.length / perRow) * (BOX_H + 4) + 4;
      }
    });
    if (nodes.length === 0) root.append(svg("text", { x: 0, y: 20, fill: "#6b7385" }, "no nodes"));

    const swatch = (color) => {
      const s = el("span", { class: "swatch", "data-color": color });
      s.style.background = color;
      return s;
    };
    const legend = groups.map((f) => el("li", { class: "legend-family", "data-family": f.family },
      el("div", { class: "legend-head" }, swatch(f.color), el("strong", {}, f.family),
        el("span", { class: "muted" }, ` ${plural(f.boards, "board")} · ${plural(f.shards, "shard")} · largest ${fmtNum(f.members)} members`)),
      el("ul", { class: "legend-kinds" }, ...f.kindList.map((k) =>
        el("li", { class: "legend-kind", "data-family": f.family, "data-kind": k.kind },
          swatch(k.color), `${k.kind}: ${plural(k.boards, "board")}, ${plural(k.shards, "shard")}`)))));
    return { picture: root, legend };
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
      Promise.all([loadFamilies(), loadTournaments()]).then(() => selectFamily(state.family));
      refreshLayout();
    });
    $("limit").value = ["10", "20", "50"].includes(state.limit) ? state.limit : "10";
    $("family").addEventListener("change", (e) => { state.board = ""; $("top-why").hidden = true; selectFamily(e.target.value); });
    $("board").addEventListener("change", (e) => {
      state.board = e.target.value; $("top-why").hidden = true;
      saveURL(); refreshTop(); if (state.member) search(state.member);
    });
    $("limit").addEventListener("change", (e) => { state.limit = e.target.value; saveURL(); refreshTop(); });
    $("board-form").addEventListener("submit", (e) => e.preventDefault());
    $("search-form").addEventListener("submit", (e) => { e.preventDefault(); search($("search-input").value.trim()); });
    if (state.member) $("search-input").value = state.member;

    // Without a board in the address, open on the busiest one.
    const chosen = params.has("family") || params.has("board");
    Promise.all([loadFamilies(), loadTournaments()]).then(() => (chosen ? null : pickBusiest())).then(() => selectFamily(state.family)).then(() => {
      if (state.member) search(state.member);
      setInterval(refreshTop, TOP_EVERY_MS);
    });
    setInterval(loadFamilies, FAMILIES_EVERY_MS);
    setInterval(loadTournaments, FAMILIES_EVERY_MS);
    every(CACHE_EVERY_MS, refreshCache);
    every(LAYOUT_EVERY_MS, refreshLayout);
    let resizing = 0;
    window.addEventListener("resize", () => { clearTimeout(resizing); resizing = setTimeout(renderLayout, 200); });
    every(1000, () => { $("clock").textContent = new Date().toLocaleTimeString(); });
  }

  document.addEventListener("DOMContentLoaded", start);
})();
