// The client covers every route of api/openapi.yaml: the route table has
// each operation (method + path, by operationId) and nothing else, and the
// client has a method named by each operationId. (e2e.test.mjs then calls
// every one of them against a real gateway.)
import assert from "node:assert/strict";
import { test } from "node:test";

import { RankgateClient, routes } from "../dist/index.js";
import { specOperations } from "./spec.mjs";

test("the route table is the OpenAPI document's operations, one method each", () => {
  const ops = specOperations();
  assert.ok(ops.length >= 40, `only ${ops.length} operations read from api/openapi.yaml`);
  const missing = [];
  const wrong = [];
  for (const op of ops) {
    const r = routes[op.operationId];
    if (!r) missing.push(`${op.method} ${op.path} (${op.operationId})`);
    else if (r.method !== op.method || r.path !== op.path) wrong.push(`${op.operationId}: client ${r.method} ${r.path}, document ${op.method} ${op.path}`);
    if (typeof RankgateClient.prototype[op.operationId] !== "function") missing.push(`method RankgateClient.${op.operationId} (${op.method} ${op.path})`);
  }
  const extra = Object.keys(routes).filter((id) => !ops.some((op) => op.operationId === id));
  assert.deepEqual({ missing, wrong, extra }, { missing: [], wrong: [], extra: [] },
    `the client does not cover api/openapi.yaml: ${ops.length} operations in the document, ${Object.keys(routes).length} in src/routes.ts`);
});

test("retried routes: reads and the idempotent writes only", () => {
  const once = Object.entries(routes).filter(([, r]) => !r.idempotent).map(([id]) => id).sort();
  assert.deepEqual(once, ["archivePeriod", "createSnapshot", "createTicket", "createTournament", "decideReview", "deleteBan", "derivePeriod",
    "getLive", "readyz", "rebuildBoard", "removeMember", "retryAward"].sort());
  for (const [id, r] of Object.entries(routes)) {
    if (r.method === "GET" && !["getLive", "readyz"].includes(id)) assert.ok(r.idempotent, `${id}: a read must be retried`);
  }
});
