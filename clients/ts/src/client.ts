import createClient, { type Client } from "openapi-fetch";

import { RankgateError, errorFromAnswer, retryableStatus } from "./errors.js";
import { streamLive, subscribeLive, type LiveHandlers, type LiveQuery, type LiveStream, type LiveSubscription, type StreamLiveOptions, type SubscribeOptions } from "./live.js";
import { routes, type OperationId } from "./routes.js";
import type { components, operations, paths } from "./schema.js";

/** The request and answer types of the API, generated from api/openapi.yaml. */
export type Schemas = components["schemas"];
/** The query parameters of an operation. */
export type Query<Op extends keyof operations> = NonNullable<operations[Op]["parameters"]["query"]>;

/** A board: family, period (an id or `current`) and dimension (`national`, `province:zhejiang`). */
export interface Board {
  family: string;
  period: string;
  dimension: string;
}

/** The retry policy of idempotent calls. */
export interface RetryPolicy {
  /** The most tries of one call, the first included (1: no retries). Default 4. */
  attempts: number;
  /** The first backoff in ms, doubled each retry, full jitter. Default 50. */
  baseMs: number;
  /** Bound on one wait in ms, Retry-After included. Default 5000. */
  maxMs: number;
}

/** One try of one call, as onExchange reports it. */
export interface Exchange {
  operationId: OperationId;
  method: string;
  /** The path template of the OpenAPI document. */
  path: string;
  /** The answer's status; 0 when no answer came (a transport error or timeout). */
  status: number;
  /** 1 for the first try. */
  attempt: number;
}

export interface ClientOptions {
  /** The gateway, `http(s)://host[:port]` (a path prefix is kept). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <token>`; a function is asked before every try. */
  token?: string | (() => string | undefined | Promise<string | undefined>);
  retry?: Partial<RetryPolicy>;
  /** Bound on one try in ms (the live stream excepted). Default 30000. */
  timeoutMs?: number;
  /** The fetch to send with (default: globalThis.fetch). */
  fetch?: typeof globalThis.fetch;
  /** The EventSource constructor of live() (default: globalThis.EventSource, as in browsers). */
  EventSource?: EventSourceConstructor;
  /** Called after every try of every call (logging, metrics). */
  onExchange?: (e: Exchange) => void;
}

/** What live() needs of an EventSource: the WHATWG interface. */
export interface EventSourceLike {
  readonly readyState: number;
  onopen: ((ev: Event) => unknown) | null;
  onerror: ((ev: Event) => unknown) | null;
  addEventListener(type: string, listener: (ev: MessageEvent) => void): void;
  close(): void;
}
export type EventSourceConstructor = new (url: string) => EventSourceLike;

/** Per-call options. */
export interface CallOptions {
  /** Aborts the call, its retries and their waits. */
  signal?: AbortSignal;
}

type Result<D> = { data?: D; error?: unknown; response: Response };

/**
 * A typed client of one rankgate gateway. Every operation of the OpenAPI
 * document is a method named by its operationId. Idempotent calls are
 * retried (see routes.ts): on a transport error, a timeout, 429, 502, 503 or
 * 504, with exponential backoff and full jitter, waiting at least the
 * server's Retry-After; the retried request is byte for byte the first, so
 * an event keeps its event_id and a correction its correction_id. Every
 * other answer other than 2xx is thrown as a RankgateError.
 */
export class RankgateClient {
  /** The openapi-fetch client underneath, for calls made by hand. */
  readonly api: Client<paths>;
  readonly baseUrl: string;
  readonly retry: RetryPolicy;
  readonly timeoutMs: number;
  /** @internal */ readonly opts: ClientOptions;

  constructor(opts: ClientOptions) {
    let u: URL;
    try {
      u = new URL(opts.baseUrl);
    } catch {
      throw new TypeError(`rankgate: base URL ${JSON.stringify(opts.baseUrl)}: want http(s)://host[:port]`);
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") {
      throw new TypeError(`rankgate: base URL ${JSON.stringify(opts.baseUrl)}: want http(s)://host[:port]`);
    }
    this.opts = opts;
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.retry = {
      attempts: opts.retry?.attempts && opts.retry.attempts > 0 ? Math.floor(opts.retry.attempts) : 4,
      baseMs: opts.retry?.baseMs && opts.retry.baseMs > 0 ? opts.retry.baseMs : 50,
      maxMs: opts.retry?.maxMs && opts.retry.maxMs > 0 ? opts.retry.maxMs : 5000,
    };
    this.timeoutMs = opts.timeoutMs && opts.timeoutMs > 0 ? opts.timeoutMs : 30_000;
    const f = opts.fetch ?? globalThis.fetch;
    this.api = createClient<paths>({ baseUrl: this.baseUrl, fetch: (req: Request) => f(req) });
  }

  /** The Authorization header value, if a token is set. @internal */
  async authorization(): Promise<string | undefined> {
    const t = typeof this.opts.token === "function" ? await this.opts.token() : this.opts.token;
    return t ? `Bearer ${t}` : undefined;
  }

  /**
   * Sends one operation: once, or with retries when the route is idempotent.
   * attempt makes one try with the headers and signal it is given.
   * @internal
   */
  async send<D>(op: OperationId, o: CallOptions | undefined, attempt: (init: { headers: Record<string, string>; signal: AbortSignal }) => Promise<Result<D>>): Promise<D> {
    const route = routes[op];
    const tries = route.idempotent ? this.retry.attempts : 1;
    let last: unknown;
    for (let i = 1; i <= tries; i++) {
      if (i > 1) await this.wait(i - 1, last, o?.signal);
      o?.signal?.throwIfAborted();
      const headers: Record<string, string> = { Accept: "application/json" };
      const auth = await this.authorization();
      if (auth) headers.Authorization = auth;
      const ac = new AbortController();
      const onAbort = () => ac.abort(o?.signal?.reason);
      o?.signal?.addEventListener("abort", onAbort, { once: true });
      const timer = setTimeout(() => ac.abort(new DOMException(`rankgate: ${route.method} ${route.path}: no answer within ${this.timeoutMs} ms`, "TimeoutError")), this.timeoutMs);
      let status = 0;
      try {
        const r = await attempt({ headers, signal: ac.signal });
        status = r.response.status;
        if (r.response.ok) return r.data as D;
        const err = errorFromAnswer(r.response, r.error);
        if (!retryableStatus(r.response.status)) throw err;
        last = err;
      } catch (err) {
        if (err instanceof RankgateError) throw err;
        if (o?.signal?.aborted) throw o.signal.reason;
        // A 2xx whose body is not the JSON it should be: a retry would get the same.
        if (err instanceof SyntaxError) throw new Error(`rankgate: ${route.method} ${route.path}: decoding the answer: ${err.message}`, { cause: err });
        // A transport error, a timeout, or an answer cut short: retryable.
        last = new Error(`rankgate: ${route.method} ${route.path}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      } finally {
        clearTimeout(timer);
        o?.signal?.removeEventListener("abort", onAbort);
        this.opts.onExchange?.({ operationId: op, method: route.method, path: route.path, status, attempt: i });
      }
    }
    throw last;
  }

  /** Sleeps before retry i (1, 2, ...): full jitter over base·2^(i−1), at least the last Retry-After, at most max. */
  private wait(i: number, last: unknown, signal: AbortSignal | undefined): Promise<void> {
    const ceil = Math.min(this.retry.baseMs * 2 ** Math.min(i - 1, 20), this.retry.maxMs);
    let d = Math.random() * ceil;
    if (last instanceof RankgateError && last.retryAfterMs !== undefined && last.retryAfterMs > d) d = last.retryAfterMs;
    d = Math.min(d, this.retry.maxMs);
    return sleep(d, signal);
  }

  // Writes.

  /** Applies one event. Retried: the gateway dedupes by event_id, so a retry of an applied event answers `duplicate: true`. */
  postEvent(ev: Schemas["Event"], o?: CallOptions) {
    if (!ev.event_id) return Promise.reject(new TypeError("rankgate: an event needs an event_id (it makes retries safe)"));
    return this.send("postEvent", o, (init) => this.api.POST("/v1/events", { ...init, body: ev }));
  }

  /** Applies a batch in order; retried as a whole (every event keeps its id). Each result is the event's result or its error. */
  postEventBatch(events: Schemas["Event"][], o?: CallOptions) {
    const i = events.findIndex((e) => !e.event_id);
    if (i >= 0) return Promise.reject(new TypeError(`rankgate: event ${i} has no event_id (it makes retries safe)`));
    return this.send("postEventBatch", o, (init) => this.api.POST("/v1/events:batch", { ...init, body: { events } }));
  }

  /** Sets a member's absolute total on a projection family's board; retried (an applied version answers `applied: false`). */
  putProjection(b: Board, member: string, p: Schemas["Projection"], o?: CallOptions) {
    return this.send("putProjection", o, (init) =>
      this.api.PUT("/v1/boards/{family}/{period}/{dimension}/members/{member}", { ...init, params: { path: { ...b, member } }, body: p }));
  }

  /** Stores a member's display data; retried. */
  putProfile(member: string, p: Schemas["Profile"], o?: CallOptions) {
    return this.send("putProfile", o, (init) => this.api.PUT("/v1/profiles/{member}", { ...init, params: { path: { member } }, body: p }));
  }

  // Reads (retried).

  /** A member's standing; a member not on the board throws code `not_ranked`. */
  getMember(b: Board, member: string, q?: Query<"getMember">, o?: CallOptions) {
    return this.send("getMember", o, (init) =>
      this.api.GET("/v1/boards/{family}/{period}/{dimension}/members/{member}", { ...init, params: { path: { ...b, member }, query: q } }));
  }

  /** The Top N of a board. */
  getTop(b: Board, q?: Query<"getTop">, o?: CallOptions) {
    return this.send("getTop", o, (init) => this.api.GET("/v1/boards/{family}/{period}/{dimension}/top", { ...init, params: { path: b, query: q } }));
  }

  /** The entries within `radius` positions of a member. */
  getAround(b: Board, member: string, q?: Query<"getAround">, o?: CallOptions) {
    return this.send("getAround", o, (init) =>
      this.api.GET("/v1/boards/{family}/{period}/{dimension}/members/{member}/around", { ...init, params: { path: { ...b, member }, query: q } }));
  }

  /** A page of entries: follow `next_cursor`, or read at `offset` (of a `snapshot`). */
  getEntries(b: Board, q?: Query<"getEntries">, o?: CallOptions) {
    return this.send("getEntries", o, (init) => this.api.GET("/v1/boards/{family}/{period}/{dimension}/entries", { ...init, params: { path: b, query: q } }));
  }

  /** The entries of the given members, in board order (absent ones left out). A POST that only reads: retried. */
  lookupMembers(b: Board, users: string[], q?: Query<"lookupMembers">, o?: CallOptions) {
    return this.send("lookupMembers", o, (init) =>
      this.api.POST("/v1/boards/{family}/{period}/{dimension}/members:lookup", { ...init, params: { path: b, query: q }, body: { users } }));
  }

  /** The members with points in [min, max]. */
  getCount(b: Board, q: Query<"getCount">, o?: CallOptions) {
    return this.send("getCount", o, (init) => this.api.GET("/v1/boards/{family}/{period}/{dimension}/count", { ...init, params: { path: b, query: q } }));
  }

  /** The entries with points in [min, max], in board order. */
  getRange(b: Board, q: Query<"getRange">, o?: CallOptions) {
    return this.send("getRange", o, (init) => this.api.GET("/v1/boards/{family}/{period}/{dimension}/range", { ...init, params: { path: b, query: q } }));
  }

  /** Freezes the top of a board for paging (sent once). */
  createSnapshot(b: Board, req: Schemas["SnapshotRequest"], o?: CallOptions) {
    return this.send("createSnapshot", o, (init) =>
      this.api.POST("/v1/boards/{family}/{period}/{dimension}/snapshots", { ...init, params: { path: b }, body: req }));
  }

  /** The boards of a period with member counts. */
  listBoards(family: string, period: string, o?: CallOptions) {
    return this.send("listBoards", o, (init) => this.api.GET("/v1/boards/{family}/{period}", { ...init, params: { path: { family, period } } }));
  }

  /** The period of a family at a time (default now). */
  getPeriod(family: string, q?: Query<"getPeriod">, o?: CallOptions) {
    return this.send("getPeriod", o, (init) => this.api.GET("/v1/families/{family}/period", { ...init, params: { path: { family }, query: q } }));
  }

  /** The configured families. */
  listFamilies(o?: CallOptions) {
    return this.send("listFamilies", o, (init) => this.api.GET("/v1/families", init));
  }

  /** A single-use ticket that opens a live board in place of the token (sent once: a lost answer leaves a ticket nobody holds). */
  createTicket(o?: CallOptions) {
    return this.send("createTicket", o, (init) => this.api.POST("/v1/tickets", init));
  }

  /** A member's score history on a board, newest first (ledger mode). */
  getMemberHistory(b: Board, member: string, q?: Query<"getMemberHistory">, o?: CallOptions) {
    return this.send("getMemberHistory", o, (init) =>
      this.api.GET("/v1/boards/{family}/{period}/{dimension}/members/{member}/history", { ...init, params: { path: { ...b, member }, query: q } }));
  }

  /** Awards with their delivery state (ledger mode); follow `next_after`. */
  listAwards(q?: Query<"listAwards">, o?: CallOptions) {
    return this.send("listAwards", o, (init) => this.api.GET("/v1/awards", { ...init, params: { query: q } }));
  }

  /** Marks an award delivered (idempotent: retried). */
  ackAward(key: string, o?: CallOptions) {
    return this.send("ackAward", o, (init) => this.api.POST("/v1/awards/{key}/ack", { ...init, params: { path: { key } } }));
  }

  // Live boards.

  /**
   * Opens a board's live stream with fetch and the token (GET {board}/live,
   * sent once): iterate the answer for its events.
   */
  getLive(b: Board, q?: LiveQuery, o?: StreamLiveOptions): Promise<LiveStream> {
    return streamLive(this, b, q, o);
  }

  /**
   * Follows a board's live stream with an EventSource (browsers): a fresh
   * ticket from POST /v1/tickets for every connection, reconnecting when
   * the stream ends.
   */
  live(b: Board, q: LiveQuery | undefined, h: LiveHandlers, o?: SubscribeOptions): LiveSubscription {
    return subscribeLive(this, b, q, h, o);
  }

  // Administration.

  /** Board shards → key, slot, node, members, memory. */
  getLayout(q?: Query<"getLayout">, o?: CallOptions) {
    return this.send("getLayout", o, (init) => this.api.GET("/v1/layout", { ...init, params: { query: q } }));
  }

  /** A period's state, boards and mode. */
  getPeriodDetail(family: string, period: string, o?: CallOptions) {
    return this.send("getPeriodDetail", o, (init) => this.api.GET("/v1/periods/{family}/{period}", { ...init, params: { path: { family, period } } }));
  }

  /** Freezes a period (freezing a frozen period changes nothing: retried). */
  freezePeriod(family: string, period: string, o?: CallOptions) {
    return this.send("freezePeriod", o, (init) => this.api.POST("/v1/periods/{family}/{period}/freeze", { ...init, params: { path: { family, period } } }));
  }

  /** Settles a period: standings and the award outbox (idempotent: retried). */
  settlePeriod(family: string, period: string, req?: Schemas["SettleRequest"], o?: CallOptions) {
    return this.send("settlePeriod", o, (init) =>
      this.api.POST("/v1/periods/{family}/{period}/settle", { ...init, params: { path: { family, period } }, body: req }));
  }

  /** The saved standings and the award outbox. */
  getSettlement(family: string, period: string, o?: CallOptions) {
    return this.send("getSettlement", o, (init) => this.api.GET("/v1/periods/{family}/{period}/settlement", { ...init, params: { path: { family, period } } }));
  }

  /** Archives a settled period (sent once). */
  archivePeriod(family: string, period: string, o?: CallOptions) {
    return this.send("archivePeriod", o, (init) => this.api.POST("/v1/periods/{family}/{period}/archive", { ...init, params: { path: { family, period } } }));
  }

  /** Recomputes a derived family's boards for a period (sent once). */
  derivePeriod(family: string, period: string, o?: CallOptions) {
    return this.send("derivePeriod", o, (init) => this.api.POST("/v1/periods/{family}/{period}/derive", { ...init, params: { path: { family, period } } }));
  }

  /** An audited correction (ledger mode); retried: deduped by correction_id. */
  postCorrection(c: Schemas["Correction"], o?: CallOptions) {
    if (!c.correction_id) return Promise.reject(new TypeError("rankgate: a correction needs a correction_id (it makes retries safe)"));
    return this.send("postCorrection", o, (init) => this.api.POST("/v1/corrections", { ...init, body: c }));
  }

  /** Events kept for review (late or refused). */
  listReviews(q: Query<"listReviews">, o?: CallOptions) {
    return this.send("listReviews", o, (init) => this.api.GET("/v1/reviews", { ...init, params: { query: q } }));
  }

  /** Accepts or rejects a kept event (sent once). */
  decideReview(id: string, d: Schemas["DecisionRequest"], o?: CallOptions) {
    return this.send("decideReview", o, (init) => this.api.POST("/v1/reviews/{id}/decision", { ...init, params: { path: { id } }, body: d }));
  }

  /** Recomputes a board from the ledger (sent once). */
  rebuildBoard(b: Board, o?: CallOptions) {
    return this.send("rebuildBoard", o, (init) => this.api.POST("/v1/boards/{family}/{period}/{dimension}/rebuild", { ...init, params: { path: b } }));
  }

  /** The members whose Redis points differ from the ledger. */
  reconcileBoard(b: Board, o?: CallOptions) {
    return this.send("reconcileBoard", o, (init) => this.api.GET("/v1/boards/{family}/{period}/{dimension}/reconcile", { ...init, params: { path: b } }));
  }

  /** Takes a member off a board (sent once: a retry of a removal that went through answers `not_ranked`). */
  removeMember(b: Board, member: string, r: Schemas["Removal"], o?: CallOptions) {
    return this.send("removeMember", o, (init) =>
      this.api.DELETE("/v1/boards/{family}/{period}/{dimension}/members/{member}", { ...init, params: { path: { ...b, member } }, body: r }));
  }

  /** Every member ban. */
  listBans(o?: CallOptions) {
    return this.send("listBans", o, (init) => this.api.GET("/v1/bans", init));
  }

  /** The audit log, newest first: follow `next_cursor` for older entries. */
  listAudit(q: Query<"listAudit"> = {}, o?: CallOptions) {
    return this.send("listAudit", o, (init) => this.api.GET("/v1/audit", { ...init, params: { query: q } }));
  }

  /** Bans a member (banning again replaces the ban: retried). */
  putBan(member: string, r: Schemas["BanRequest"], o?: CallOptions) {
    return this.send("putBan", o, (init) => this.api.PUT("/v1/bans/{member}", { ...init, params: { path: { member } }, body: r }));
  }

  /** Lifts a member's ban (sent once: a retry after success is `not_found`). */
  deleteBan(member: string, o?: CallOptions) {
    return this.send("deleteBan", o, (init) => this.api.DELETE("/v1/bans/{member}", { ...init, params: { path: { member } } }));
  }

  /** Erases a member from every board, their profile and (ledger mode) their ledger rows (retried: a second erasure answers zeros, and finishes one cut short). */
  eraseMember(member: string, r: Schemas["Removal"], o?: CallOptions) {
    return this.send("eraseMember", o, (init) => this.api.DELETE("/v1/members/{member}", { ...init, params: { path: { member } }, body: r }));
  }

  /** What is kept of a member: profile, standings and (ledger mode) events. */
  exportMember(member: string, o?: CallOptions) {
    return this.send("exportMember", o, (init) => this.api.GET("/v1/members/{member}/export", { ...init, params: { path: { member } } }));
  }

  /** Delivers a failed award again (sent once). */
  retryAward(key: string, o?: CallOptions) {
    return this.send("retryAward", o, (init) => this.api.POST("/v1/awards/{key}/retry", { ...init, params: { path: { key } } }));
  }

  // Tournaments: families created at run time (their id is the family of
  // events and board routes).

  /** Creates a tournament (admin; sent once: a retry of a create that went through answers `already_exists`). */
  createTournament(t: Schemas["TournamentRequest"], o?: CallOptions) {
    return this.send("createTournament", o, (init) => this.api.POST("/v1/tournaments", { ...init, body: t }));
  }

  /** The tournaments, by id; `state` filters them. */
  listTournaments(q?: Query<"listTournaments">, o?: CallOptions) {
    return this.send("listTournaments", o, (init) => this.api.GET("/v1/tournaments", { ...init, params: { query: q } }));
  }

  /** One tournament. */
  getTournament(id: string, o?: CallOptions) {
    return this.send("getTournament", o, (init) => this.api.GET("/v1/tournaments/{id}", { ...init, params: { path: { id } } }));
  }

  /** Cancels a tournament (admin; retried: cancelling again answers the cancelled tournament). */
  cancelTournament(id: string, o?: CallOptions) {
    return this.send("cancelTournament", o, (init) => this.api.DELETE("/v1/tournaments/{id}", { ...init, params: { path: { id } } }));
  }

  /** Seats a member in the tournament's running (or next) period (retried: a member already in answers `joined: false`). */
  joinTournament(id: string, user: string, o?: CallOptions) {
    return this.send("joinTournament", o, (init) =>
      this.api.POST("/v1/tournaments/{id}/join", { ...init, params: { path: { id } }, body: { user } }));
  }

  /** A member's tier and cohort in a league period (default the current one). */
  getLeague(family: string, member: string, q?: Query<"getLeague">, o?: CallOptions) {
    return this.send("getLeague", o, (init) =>
      this.api.GET("/v1/families/{family}/members/{member}/league", { ...init, params: { path: { family, member }, query: q } }));
  }

  /** The cohorts of a league period, by tier and number. */
  listCohorts(family: string, q?: Query<"listCohorts">, o?: CallOptions) {
    return this.send("listCohorts", o, (init) => this.api.GET("/v1/families/{family}/cohorts", { ...init, params: { path: { family }, query: q } }));
  }

  /** The moves recorded when a league period ended. */
  listMoves(family: string, q?: Query<"listMoves">, o?: CallOptions) {
    return this.send("listMoves", o, (init) => this.api.GET("/v1/families/{family}/moves", { ...init, params: { path: { family }, query: q } }));
  }

  // Service routes (no token needed).

  /** The OpenAPI document, as JSON. */
  getOpenAPI(o?: CallOptions) {
    return this.send("getOpenAPI", o, (init) => this.api.GET("/v1/openapi.json", init));
  }

  /** The process is up. */
  healthz(o?: CallOptions) {
    return this.send("healthz", o, (init) => this.api.GET("/healthz", init));
  }

  /** Ready to serve (sent once: a probe that retries hides what it probes); not ready throws code `unavailable`. */
  readyz(o?: CallOptions) {
    return this.send("readyz", o, (init) => this.api.GET("/readyz", init));
  }

  /** The Prometheus metrics, as text. */
  metrics(o?: CallOptions) {
    return this.send("metrics", o, (init) => this.api.GET("/metrics", { ...init, parseAs: "text" }));
  }

  /** The status page's HTML. */
  statusPage(o?: CallOptions) {
    return this.send("statusPage", o, (init) => this.api.GET("/ui/", { ...init, parseAs: "text" }));
  }

  /** The big-screen live board page of a board, as HTML. */
  liveBoardPage(b: Board, q?: Query<"liveBoardPage">, o?: CallOptions) {
    return this.send("liveBoardPage", o, (init) =>
      this.api.GET("/ui/live/{family}/{period}/{dimension}", { ...init, params: { path: b, query: q }, parseAs: "text" }));
  }

  /** A static file of the status page, as text. */
  statusPageFile(file: string, o?: CallOptions) {
    return this.send("statusPageFile", o, (init) => this.api.GET("/ui/{file}", { ...init, params: { path: { file } }, parseAs: "text" }));
  }
}

/** Resolves after ms, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
