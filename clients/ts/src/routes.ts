// The routes of the rankgate API (api/openapi.yaml), one per operationId,
// with the retry rule of each: the same as the Go client (client/).
//
// `idempotent: true` means a retry cannot count twice: events and
// corrections (the gateway dedupes them by the ids a retry keeps),
// projections, profiles and bans (PUTs of absolute values), reads, lookups,
// and the idempotent period and award operations (freeze, settle, ack).
// Tournaments: joins (a member already in answers joined: false) and
// cancels are retried; a create is sent once (a retry of one that went
// through would answer already_exists).
// Everything else is sent once: snapshots, tickets, rebuilds, derives,
// archives, review decisions, award retries, removals, lifting a ban, and
// the readiness probe (a probe that retries hides what it probes).

export type Method = "GET" | "POST" | "PUT" | "DELETE";

export interface Route {
  readonly method: Method;
  /** The path template of the OpenAPI document. */
  readonly path: string;
  readonly idempotent: boolean;
}

export const routes = {
  postEvent: { method: "POST", path: "/v1/events", idempotent: true },
  postEventBatch: { method: "POST", path: "/v1/events:batch", idempotent: true },
  putProjection: { method: "PUT", path: "/v1/boards/{family}/{period}/{dimension}/members/{member}", idempotent: true },
  removeMember: { method: "DELETE", path: "/v1/boards/{family}/{period}/{dimension}/members/{member}", idempotent: false },
  getMember: { method: "GET", path: "/v1/boards/{family}/{period}/{dimension}/members/{member}", idempotent: true },
  putProfile: { method: "PUT", path: "/v1/profiles/{member}", idempotent: true },
  getTop: { method: "GET", path: "/v1/boards/{family}/{period}/{dimension}/top", idempotent: true },
  getAround: { method: "GET", path: "/v1/boards/{family}/{period}/{dimension}/members/{member}/around", idempotent: true },
  getLive: { method: "GET", path: "/v1/boards/{family}/{period}/{dimension}/live", idempotent: false },
  getEntries: { method: "GET", path: "/v1/boards/{family}/{period}/{dimension}/entries", idempotent: true },
  lookupMembers: { method: "POST", path: "/v1/boards/{family}/{period}/{dimension}/members:lookup", idempotent: true },
  getCount: { method: "GET", path: "/v1/boards/{family}/{period}/{dimension}/count", idempotent: true },
  getRange: { method: "GET", path: "/v1/boards/{family}/{period}/{dimension}/range", idempotent: true },
  createSnapshot: { method: "POST", path: "/v1/boards/{family}/{period}/{dimension}/snapshots", idempotent: false },
  listBoards: { method: "GET", path: "/v1/boards/{family}/{period}", idempotent: true },
  getPeriod: { method: "GET", path: "/v1/families/{family}/period", idempotent: true },
  listFamilies: { method: "GET", path: "/v1/families", idempotent: true },
  createTicket: { method: "POST", path: "/v1/tickets", idempotent: false },
  getLayout: { method: "GET", path: "/v1/layout", idempotent: true },
  getPeriodDetail: { method: "GET", path: "/v1/periods/{family}/{period}", idempotent: true },
  freezePeriod: { method: "POST", path: "/v1/periods/{family}/{period}/freeze", idempotent: true },
  listReviews: { method: "GET", path: "/v1/reviews", idempotent: true },
  decideReview: { method: "POST", path: "/v1/reviews/{id}/decision", idempotent: false },
  settlePeriod: { method: "POST", path: "/v1/periods/{family}/{period}/settle", idempotent: true },
  getSettlement: { method: "GET", path: "/v1/periods/{family}/{period}/settlement", idempotent: true },
  archivePeriod: { method: "POST", path: "/v1/periods/{family}/{period}/archive", idempotent: false },
  derivePeriod: { method: "POST", path: "/v1/periods/{family}/{period}/derive", idempotent: false },
  postCorrection: { method: "POST", path: "/v1/corrections", idempotent: true },
  rebuildBoard: { method: "POST", path: "/v1/boards/{family}/{period}/{dimension}/rebuild", idempotent: false },
  reconcileBoard: { method: "GET", path: "/v1/boards/{family}/{period}/{dimension}/reconcile", idempotent: true },
  getMemberHistory: { method: "GET", path: "/v1/boards/{family}/{period}/{dimension}/members/{member}/history", idempotent: true },
  listBans: { method: "GET", path: "/v1/bans", idempotent: true },
  listAudit: { method: "GET", path: "/v1/audit", idempotent: true },
  putBan: { method: "PUT", path: "/v1/bans/{member}", idempotent: true },
  deleteBan: { method: "DELETE", path: "/v1/bans/{member}", idempotent: false },
  eraseMember: { method: "DELETE", path: "/v1/members/{member}", idempotent: true },
  exportMember: { method: "GET", path: "/v1/members/{member}/export", idempotent: true },
  listAwards: { method: "GET", path: "/v1/awards", idempotent: true },
  ackAward: { method: "POST", path: "/v1/awards/{key}/ack", idempotent: true },
  retryAward: { method: "POST", path: "/v1/awards/{key}/retry", idempotent: false },
  createTournament: { method: "POST", path: "/v1/tournaments", idempotent: false },
  listTournaments: { method: "GET", path: "/v1/tournaments", idempotent: true },
  getTournament: { method: "GET", path: "/v1/tournaments/{id}", idempotent: true },
  cancelTournament: { method: "DELETE", path: "/v1/tournaments/{id}", idempotent: true },
  joinTournament: { method: "POST", path: "/v1/tournaments/{id}/join", idempotent: true },
  getLeague: { method: "GET", path: "/v1/families/{family}/members/{member}/league", idempotent: true },
  listCohorts: { method: "GET", path: "/v1/families/{family}/cohorts", idempotent: true },
  listMoves: { method: "GET", path: "/v1/families/{family}/moves", idempotent: true },
  getOpenAPI: { method: "GET", path: "/v1/openapi.json", idempotent: true },
  healthz: { method: "GET", path: "/healthz", idempotent: true },
  readyz: { method: "GET", path: "/readyz", idempotent: false },
  metrics: { method: "GET", path: "/metrics", idempotent: true },
  statusPage: { method: "GET", path: "/ui/", idempotent: true },
  liveBoardPage: { method: "GET", path: "/ui/live/{family}/{period}/{dimension}", idempotent: true },
  statusPageFile: { method: "GET", path: "/ui/{file}", idempotent: true },
} as const satisfies Record<string, Route>;

/** An operationId of the API. */
export type OperationId = keyof typeof routes;
