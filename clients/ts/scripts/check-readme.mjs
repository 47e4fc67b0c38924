// Type-checks the TypeScript examples of README.md against src/ (strict),
// so the example a reader pastes compiles: each ```ts block is a module of
// its own; "@rankgate/client" resolves to src/index.ts; identifiers a
// snippet takes from the text before it (baseUrl, token, board, rankgate)
// are declared for it.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const blocks = [...readFileSync(join(root, "README.md"), "utf8").matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
if (blocks.length === 0) {
  console.error("README.md has no ```ts example");
  process.exit(1);
}
const context = `import type { RankgateClient as __C } from "@rankgate/client";
declare const baseUrl: string;
declare const token: string;
declare const board: { family: string; period: string; dimension: string };
`;
const dir = mkdtempSync(join(root, ".readme-check-"));
try {
  const files = blocks.map((b, i) => {
    const f = `example${i}.ts`;
    const declares = /\bconst rankgate\b/.test(b) ? "" : "declare const rankgate: __C;\n";
    const usesContext = i > 0;
    writeFileSync(join(dir, f), (usesContext ? context + declares : "") + b + (/\b(import|export)\b/.test(b) ? "" : "\nexport {};\n"));
    return f;
  });
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
    extends: "../tsconfig.json",
    compilerOptions: { noEmit: true, rootDir: "..", types: ["node"], paths: { "@rankgate/client": ["../src/index.ts"] }, allowImportingTsExtensions: true },
    include: files,
  }));
  execFileSync(join(root, "node_modules", ".bin", "tsc"), ["-p", join(dir, "tsconfig.json")], { stdio: "inherit" });
  console.log(`README.md: ${blocks.length} TypeScript examples type-check`);
} catch {
  console.error("README.md: an example does not type-check (above)");
  process.exitCode = 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
