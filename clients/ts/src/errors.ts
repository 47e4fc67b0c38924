import type { components } from "./schema.js";

/** An API error code (`error.code` of every error answer). */
export type ErrorCode = components["schemas"]["ErrorCode"];

/**
 * An answer other than 2xx: the API's error shape and the HTTP status.
 * `code` is the API's code (`invalid_argument`, `not_ranked`, ...), or
 * `"http_<status>"` when the answer had no error body (a proxy's page).
 */
export class RankgateError extends Error {
  readonly status: number;
  readonly code: ErrorCode | `http_${number}`;
  /** The input at fault, when one is. */
  readonly field: string | undefined;
  /** The server's Retry-After, in milliseconds, when it sent one. */
  readonly retryAfterMs: number | undefined;

  constructor(init: { status: number; code: ErrorCode | `http_${number}`; message: string; field?: string | undefined; retryAfterMs?: number | undefined }) {
    let msg = `rankgate: ${init.status} ${init.code}: ${init.message}`;
    if (init.field) msg += ` (field ${init.field})`;
    super(msg);
    this.name = "RankgateError";
    this.status = init.status;
    this.code = init.code;
    this.field = init.field;
    this.retryAfterMs = init.retryAfterMs;
  }
}

/** The API code of err, or undefined when err is not a RankgateError. */
export function errorCode(err: unknown): RankgateError["code"] | undefined {
  return err instanceof RankgateError ? err.code : undefined;
}

/** Retry-After in milliseconds (delta-seconds or an HTTP date), or undefined. */
export function parseRetryAfter(v: string | null, now = Date.now()): number | undefined {
  if (v == null || v.trim() === "") return undefined;
  const s = v.trim();
  if (/^\d+$/.test(s)) return Number(s) * 1000;
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : Math.max(0, t - now);
}

/** Builds the RankgateError of a non-2xx answer from its (already parsed) body. */
export function errorFromAnswer(res: Response, body: unknown): RankgateError {
  const retryAfterMs = parseRetryAfter(res.headers.get("Retry-After"));
  const e = (body as { error?: { code?: unknown; message?: unknown; field?: unknown } } | undefined)?.error;
  if (e && typeof e.code === "string") {
    return new RankgateError({
      status: res.status,
      code: e.code as ErrorCode,
      message: typeof e.message === "string" ? e.message : "",
      field: typeof e.field === "string" && e.field !== "" ? e.field : undefined,
      retryAfterMs,
    });
  }
  let message = typeof body === "string" ? body.trim() : res.statusText;
  if (message.length > 200) message = message.slice(0, 200);
  return new RankgateError({ status: res.status, code: `http_${res.status}`, message, retryAfterMs });
}

/** Whether an answer with this status may be retried (of an idempotent call). */
export function retryableStatus(status: number): boolean {
  return status === 429 || status === 502 || status === 503 || status === 504;
}
