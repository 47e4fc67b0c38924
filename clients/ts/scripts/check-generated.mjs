// Fails when src/schema.ts is not what openapi-typescript makes of
// api/openapi.yaml today (regenerate: npm run generate, or make ts-generate).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dir = mkdtempSync(join(tmpdir(), "rankgate-ts-schema-"));
try {
  const out = join(dir, "schema.ts");
  execFileSync(join(root, "node_modules", ".bin", "openapi-typescript"), ["../../api/openapi.yaml", "--output", out], {
    cwd: root,
    stdio: ["ignore", "ignore", "inherit"],
  });
  const want = readFileSync(out, "utf8");
  const got = readFileSync(join(root, "src", "schema.ts"), "utf8");
  if (want !== got) {
    const a = got.split("\n");
    const b = want.split("\n");
    let i = 0;
    while (i < a.length && i < b.length && a[i] === b[i]) i++;
    console.error(`clients/ts/src/schema.ts is stale: it differs from api/openapi.yaml at line ${i + 1}:`);
    console.error(`  committed: ${a[i] ?? "(end of file)"}`);
    console.error(`  generated: ${b[i] ?? "(end of file)"}`);
    console.error("Regenerate it: make ts-generate (or cd clients/ts && npm run generate), and commit it.");
    process.exitCode = 1;
  } else {
    console.log("clients/ts/src/schema.ts is up to date with api/openapi.yaml");
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
