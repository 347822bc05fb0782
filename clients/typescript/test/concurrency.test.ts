// Four times the default concurrency on one client (one connection) against the live server at MEMRANK_ADDR: every
// call succeeds (issue #32, item 6). Retries are off, so a refused stream would show as UNAVAILABLE instead of
// hiding behind a retry.
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { candidate, DEFAULT_CONCURRENCY, MemrankClient, MemrankError, RankRequestSchema } from "../src/index.js";

const addr = process.env["MEMRANK_ADDR"];
const CALLERS = 4 * DEFAULT_CONCURRENCY;
const CALLS_EACH = 3;

// 40 candidates of some text: enough work that calls overlap.
const request = create(RankRequestSchema, {
  query: "green tea",
  candidates: Array.from({ length: 40 }, (_, i) =>
    candidate(`m${i}`, "the user prefers green tea ".repeat(20), { retrievalScore: 0.2 + i / 100 })),
});

describe("one connection", { skip: addr ? false : "MEMRANK_ADDR is not set" }, () => {
  // A generous deadline: the machine may be loaded; a lost call is a failure, a slow one is not.
  const client = new MemrankClient(addr ?? "", { retries: 0, timeoutMs: 120_000 });
  after(() => client.close());

  test(`${CALLERS} callers at once (4 x DEFAULT_CONCURRENCY) lose no call`, async () => {
    const codes = new Map<string, number>();
    const caller = async (): Promise<void> => {
      for (let i = 0; i < CALLS_EACH; i++) {
        let code = "OK";
        try {
          await client.rank(request);
        } catch (err) {
          code = err instanceof MemrankError ? `${err.code} ${err.message}`.slice(0, 120) : String(err);
        }
        codes.set(code, (codes.get(code) ?? 0) + 1);
      }
    };
    await Promise.all(Array.from({ length: CALLERS }, caller));
    assert.deepEqual(Object.fromEntries(codes), { OK: CALLERS * CALLS_EACH });
  });
});
