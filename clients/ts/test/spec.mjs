// The operations of api/openapi.yaml: [{operationId, method, path, statuses}].
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";

import { repoRoot } from "./gateway.mjs";

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"];

export function specOperations() {
  const doc = parse(readFileSync(join(repoRoot, "api", "openapi.yaml"), "utf8"));
  const ops = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const m of METHODS) {
      const op = item[m];
      if (!op) continue;
      ops.push({ operationId: op.operationId, method: m.toUpperCase(), path, statuses: Object.keys(op.responses ?? {}).map(Number) });
    }
  }
  return ops;
}
