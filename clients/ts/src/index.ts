export { RankgateClient, sleep } from "./client.js";
export type { Board, CallOptions, ClientOptions, EventSourceConstructor, EventSourceLike, Exchange, Query, RetryPolicy, Schemas } from "./client.js";
export { RankgateError, errorCode, parseRetryAfter, retryableStatus } from "./errors.js";
export type { ErrorCode } from "./errors.js";
export { parseSSE } from "./live.js";
export type { LiveData, LiveHandlers, LiveMessage, LiveQuery, LiveStream, LiveSubscription, StreamLiveOptions, SubscribeOptions } from "./live.js";
export { routes } from "./routes.js";
export type { Method, OperationId, Route } from "./routes.js";
export type { components, operations, paths } from "./schema.js";
