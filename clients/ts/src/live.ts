// Live boards: GET {board}/live, a text/event-stream of a board's Top N
// (and a followed member's standing), two ways:
//
//   - streamLive: fetch with the token in the Authorization header, read as
//     an async iterator (servers, Node, workers; Last-Event-ID supported);
//   - subscribeLive: a browser's EventSource, which cannot send a header:
//     every connection first asks POST /v1/tickets for a single-use ticket
//     and opens the stream with ?ticket=; when the stream ends (a network
//     error, `event: overloaded`, or `event: reconnect` at a gateway's
//     shutdown) it reconnects with a fresh ticket, with backoff and jitter.

import type { Board, CallOptions, EventSourceLike, RankgateClient, Schemas, Query } from "./client.js";
import { RankgateError, errorFromAnswer, retryableStatus } from "./errors.js";

/** The data of a snapshot or update. */
export type LiveData = Schemas["LiveEvent"];

/** One event of a live stream. */
export interface LiveMessage {
  id: string;
  /** `snapshot`, `update`, `overloaded` (fell behind; the stream ends) or `reconnect` (the gateway shuts down; the stream ends). */
  type: string;
  /** Set for snapshot and update. */
  data?: LiveData;
}

/** The query of a live stream: `top`, `member`, `radius` (a ticket is added by subscribeLive). */
export type LiveQuery = Omit<Query<"getLive">, "ticket">;

export function livePath(b: Board): string {
  return `/v1/boards/${encodeURIComponent(b.family)}/${encodeURIComponent(b.period)}/${encodeURIComponent(b.dimension)}/live`;
}

function liveURL(c: RankgateClient, b: Board, q: LiveQuery | undefined, ticket?: string): string {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(q ?? {})) if (v !== undefined && v !== null) qs.set(k, String(v));
  if (ticket) qs.set("ticket", ticket);
  const s = qs.toString();
  return c.baseUrl + livePath(b) + (s ? `?${s}` : "");
}

/** A live stream read with fetch: iterate it; close() (or the signal) ends it. */
export interface LiveStream extends AsyncIterable<LiveMessage> {
  close(): void;
}

export interface StreamLiveOptions extends CallOptions {
  /** Resumes after a reconnect: the stream starts with a fresh snapshot whose id follows it. */
  lastEventId?: string;
  /** Opens the stream with a ticket in place of the token. */
  ticket?: string;
}

/**
 * Opens a live stream with fetch (sent once). A refusal (503 past the
 * gateway's or the token's bound, 401 for a used ticket, 404 for an unknown
 * board) throws a RankgateError.
 */
export async function streamLive(c: RankgateClient, b: Board, q?: LiveQuery, o?: StreamLiveOptions): Promise<LiveStream> {
  const headers: Record<string, string> = { Accept: "text/event-stream" };
  const auth = o?.ticket ? undefined : await c.authorization();
  if (auth) headers.Authorization = auth;
  if (o?.lastEventId) headers["Last-Event-ID"] = o.lastEventId;
  const ac = new AbortController();
  const onAbort = () => ac.abort(o?.signal?.reason);
  o?.signal?.addEventListener("abort", onAbort, { once: true });
  const f = c.opts.fetch ?? globalThis.fetch;
  let res: Response;
  let status = 0;
  try {
    res = await f(liveURL(c, b, q, o?.ticket), { headers, signal: ac.signal });
    status = res.status;
  } catch (err) {
    o?.signal?.removeEventListener("abort", onAbort);
    throw err;
  } finally {
    c.opts.onExchange?.({ operationId: "getLive", method: "GET", path: "/v1/boards/{family}/{period}/{dimension}/live", status, attempt: 1 });
  }
  if (res.status !== 200 || !res.body) {
    o?.signal?.removeEventListener("abort", onAbort);
    const text = await res.text().catch(() => "");
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    throw errorFromAnswer(res, body);
  }
  const body = res.body;
  const close = () => {
    o?.signal?.removeEventListener("abort", onAbort);
    ac.abort();
  };
  return {
    close,
    async *[Symbol.asyncIterator]() {
      try {
        for await (const m of parseSSE(body)) yield m;
      } catch (err) {
        if (!ac.signal.aborted) throw err;
      } finally {
        close();
      }
    },
  };
}

/** Parses a text/event-stream into its events (comments skipped). */
export async function* parseSSE(body: ReadableStream<Uint8Array>): AsyncGenerator<LiveMessage> {
  const dec = new TextDecoder();
  let buf = "";
  let id = "";
  let type = "";
  let data: string[] = [];
  const reader = body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += dec.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        // A CR at the end may be the first half of a CRLF: wait for more.
        if (nl === buf.length - 1 && buf[nl] === "\r") break;
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
        if (line === "") {
          if (type !== "" || data.length > 0) {
            const m: LiveMessage = { id, type: type || "message" };
            if (m.type === "snapshot" || m.type === "update") m.data = JSON.parse(data.join("\n")) as LiveData;
            yield m;
          }
          type = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "id") id = value;
        else if (field === "event") type = value;
        else if (field === "data") data.push(value);
      }
    }
  } finally {
    reader.releaseLock();
  }
}

export interface LiveHandlers {
  /** Every snapshot and update. After a reconnect the first is a snapshot: replace what you show. */
  onData: (data: LiveData, event: { id: string; type: "snapshot" | "update" }) => void;
  /** A stream is open (each connection, reconnects included). */
  onOpen?: () => void;
  /**
   * A connection failed or ended. fatal: the ticket was refused for good
   * (401, 403, 404, ...) and the subscription is closed; else it reconnects
   * in reconnectInMs.
   */
  onError?: (err: unknown, info: { fatal: boolean; reconnectInMs?: number }) => void;
}

export interface SubscribeOptions {
  /** First reconnect delay in ms, doubled per failure in a row (full jitter). Default 500. */
  reconnectBaseMs?: number;
  /** Bound on a reconnect delay in ms. Default 30000. */
  reconnectMaxMs?: number;
}

export interface LiveSubscription {
  close(): void;
  readonly closed: boolean;
  /** The tickets asked for so far (one per connection). */
  readonly connections: number;
}

/**
 * Follows a live board with an EventSource and tickets (see the top of this
 * file). Close the subscription when done.
 */
export function subscribeLive(c: RankgateClient, b: Board, q: LiveQuery | undefined, h: LiveHandlers, o?: SubscribeOptions): LiveSubscription {
  const ES = c.opts.EventSource ?? (globalThis as { EventSource?: new (url: string) => EventSourceLike }).EventSource;
  if (!ES) throw new TypeError("rankgate: no EventSource here; pass ClientOptions.EventSource (Node: the eventsource package)");
  const base = o?.reconnectBaseMs && o.reconnectBaseMs > 0 ? o.reconnectBaseMs : 500;
  const max = o?.reconnectMaxMs && o.reconnectMaxMs > 0 ? o.reconnectMaxMs : 30_000;
  const ac = new AbortController();
  let es: EventSourceLike | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let failures = 0;
  let connections = 0;

  const schedule = (err: unknown, soon: boolean) => {
    if (ac.signal.aborted) return;
    failures = soon ? 0 : failures + 1;
    const ceil = soon ? base : Math.min(max, base * 2 ** Math.min(failures - 1, 20));
    let delay = Math.round(Math.random() * ceil);
    // A refusal with Retry-After (429, 503 of the ticket request) is waited out.
    if (err instanceof RankgateError && err.retryAfterMs !== undefined) delay = Math.max(delay, Math.min(err.retryAfterMs, max));
    h.onError?.(err, { fatal: false, reconnectInMs: delay });
    timer = setTimeout(connect, delay);
  };
  const drop = (err: unknown, soon = false) => {
    es?.close();
    es = undefined;
    schedule(err, soon);
  };
  const connect = async () => {
    timer = undefined;
    if (ac.signal.aborted) return;
    let ticket: string;
    try {
      connections++;
      ticket = (await c.createTicket({ signal: ac.signal })).ticket;
    } catch (err) {
      if (ac.signal.aborted) return;
      if (err instanceof RankgateError && !retryableStatus(err.status)) {
        ac.abort();
        h.onError?.(err, { fatal: true });
        return;
      }
      schedule(err, false);
      return;
    }
    if (ac.signal.aborted) return;
    const s = new ES(liveURL(c, b, q, ticket));
    es = s;
    s.onopen = () => h.onOpen?.();
    const onData = (type: "snapshot" | "update") => (m: MessageEvent) => {
      if (es !== s) return;
      failures = 0;
      let data: LiveData;
      try {
        data = JSON.parse(String(m.data)) as LiveData;
      } catch (err) {
        drop(err);
        return;
      }
      h.onData(data, { id: m.lastEventId, type });
    };
    s.addEventListener("snapshot", onData("snapshot"));
    s.addEventListener("update", onData("update"));
    s.addEventListener("overloaded", () => {
      if (es === s) drop(new Error("rankgate: live stream overloaded (the client fell behind); reconnecting"));
    });
    s.addEventListener("reconnect", () => {
      if (es === s) drop(new Error("rankgate: the gateway is shutting down; reconnecting"), true);
    });
    // An EventSource reconnects by itself with the same URL, whose ticket
    // is used: close it and come back with a fresh ticket instead.
    s.onerror = () => {
      if (es === s) drop(new Error("rankgate: live stream failed or was refused; reconnecting"));
    };
  };

  void connect();
  return {
    close() {
      ac.abort();
      if (timer !== undefined) clearTimeout(timer);
      es?.close();
      es = undefined;
    },
    get closed() {
      return ac.signal.aborted;
    },
    get connections() {
      return connections;
    },
  };
}
