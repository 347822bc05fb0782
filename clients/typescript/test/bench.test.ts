// The bench driver (bench/e2e.ts) speaks its line protocol against the live server at MEMRANK_ADDR.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const addr = process.env["MEMRANK_ADDR"];
const driver = fileURLToPath(new URL("../bench/e2e.js", import.meta.url));

const workload = {
  query: "which database runs the ledger", profile: "default", referenceTime: "2026-06-01T12:00:00Z",
  budget: { maxTokens: 4000, maxItems: 2 },
  candidates: [
    { id: "m1", layer: "durable", kind: "fact", content: "The ledger runs on Postgres 16", retrievalScore: 0.9,
      accessCount: 3, source: "SOURCE_CHAT", safety: "SAFETY_STATUS_SAFE", importance: 0.5,
      createdAt: "2026-05-01T10:00:00Z" },
    { id: "m2", layer: "session", kind: "decision", content: "We chose Postgres for the ledger", retrievalScore: 0.7,
      accessCount: 0, source: "SOURCE_IMPORTED", safety: "SAFETY_STATUS_SAFE", lastAccessedAt: "2026-05-30T08:00:00.5Z" },
    { id: "m3", layer: "session", kind: "note", content: "Lunch was pasta", retrievalScore: 0.1,
      accessCount: 1, source: "SOURCE_CHAT", safety: "SAFETY_STATUS_SAFE" },
  ],
  embeddings: [[1, 0], [0.8, 0.6], [0, 1]],
};

for (const mode of [[], ["--per-candidate"]]) {
  test(`bench/e2e ${mode.join(" ") || "(columns)"}: load, rank, errors, quit`, { skip: addr ? false : "MEMRANK_ADDR is not set" },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "memrank-bench-"));
      try {
        writeFileSync(join(dir, "w.json"), JSON.stringify(workload));
        writeFileSync(join(dir, "bad.json"), JSON.stringify({ ...workload, candidates: [{ ...workload.candidates[0], source: "CHAT" }] }));
        const child = spawn(process.execPath, [driver, ...mode, addr ?? ""], { stdio: ["pipe", "pipe", "inherit"] });
        const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
        const ask = async (cmd: string): Promise<string> => {
          child.stdin.write(cmd + "\n");
          return String((await lines.next()).value);
        };
        assert.equal(await ask("rank"), "error: no workload loaded (load PATH first)");
        assert.equal(await ask(`load ${join(dir, "bad.json")}`), 'error: candidates[0].source: unknown value "CHAT"');
        assert.equal(await ask(`load ${join(dir, "w.json")}`), "ok");
        for (let i = 0; i < 3; i++) {
          const reply = await ask("rank");
          assert.match(reply, /^[1-9]\d*$/, reply);
          assert.ok(BigInt(reply) < 60_000_000_000n, reply);
        }
        assert.match(await ask("frob"), /^error: unknown command "frob"/);
        const code = new Promise((resolve) => child.once("exit", resolve));
        child.stdin.write("quit\n");
        assert.equal(await code, 0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
}
