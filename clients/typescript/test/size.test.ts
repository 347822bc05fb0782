// A message over a size limit is refused naming the setting to raise: this client's maxMessageBytes (before the
// request is sent; and for a response) and the server's server.max_message_bytes (a live `memrank serve` started
// here with a 1 MiB limit), not with grpc's bare "message larger than max".
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { after, before, describe, test } from "node:test";
import { ExplainLevel, MemrankClient, MemrankError, status } from "../src/index.js";

const addr = process.env["MEMRANK_ADDR"];
const CLIENT = "this client's maxMessageBytes (new MemrankClient(address, { maxMessageBytes }))";
const SERVER = "the server's server.max_message_bytes (MEMRANK_MAX_MESSAGE_BYTES)";

function exhausted(err: unknown): MemrankError {
  assert.ok(err instanceof MemrankError, String(err));
  assert.equal(err.code, status.RESOURCE_EXHAUSTED);
  return err;
}

test("a request over maxMessageBytes is refused before it is sent, naming both settings", async () => {
  // Nothing listens on port 9: a request that was sent would fail UNAVAILABLE instead.
  const client = new MemrankClient("127.0.0.1:9", { maxMessageBytes: 4096, retries: 0, timeoutMs: 2000 });
  const content = "x".repeat(5000);
  // The request is only RankRequest.columns (field 18: a 2-byte tag, then a 2-byte length) holding ids ["a"]
  // (tag, length, 1 byte) and contents [content] (tag, 2-byte length, 5000 bytes).
  const size = 2 + 2 + (3 + (1 + 2 + 5000));
  await assert.rejects(client.rank({ candidates: [{ id: "a", content }] }), (err: unknown) => {
    assert.equal(exhausted(err).details, `the request is ${size} bytes, over ${CLIENT}, 4096 bytes: send fewer or ` +
      `smaller candidates, or raise maxMessageBytes and ${SERVER} with it`);
    return true;
  });
  assert.throws(() => new MemrankClient("127.0.0.1:9", { maxMessageBytes: 10 }), /maxMessageBytes must be an integer >= 1024, got 10/);
  client.close();
});

describe("against live servers", { skip: addr ? false : "MEMRANK_ADDR is not set" }, () => {
  let server: ChildProcess | undefined;
  let small = "";
  before(async () => {
    // `memrank serve` as clients/test.sh starts it (python3 with memrank installed), with a 1 MiB message limit.
    server = spawn("python3", ["-m", "memrank.cli", "serve", "--address", "127.0.0.1:0", "--metrics-port", "0"], {
      env: { ...process.env, MEMRANK_MAX_MESSAGE_BYTES: String(1 << 20) }, stdio: ["ignore", "ignore", "pipe"],
    });
    const lines = createInterface({ input: server.stderr! });
    small = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("memrank serve did not log \"serving\" within 60 s")), 60_000);
      server!.once("exit", (code) => reject(new Error(`memrank serve exited ${code}`)));
      lines.on("line", (line) => {
        const rec = line.startsWith("{") ? JSON.parse(line) as { msg?: string; port?: number } : {};
        if (rec.msg === "serving") {
          clearTimeout(timer);
          resolve(`127.0.0.1:${rec.port}`);
        }
      });
    });
  });
  after(() => {
    server?.kill("SIGTERM");
  });

  test("a request over the server's server.max_message_bytes is refused naming it", async () => {
    const client = new MemrankClient(small, { retries: 0, timeoutMs: 20_000 });
    const content = "y".repeat(2_000_000);
    // query "q" (tag, length, 1 byte), then the columns as above with 3-byte lengths (2,000,000 < 2^21).
    const size = 3 + 2 + 3 + (3 + (1 + 3 + 2_000_000));
    await assert.rejects(client.rank({ query: "q", candidates: [{ id: "a", content }] }), (err: unknown) => {
      const e = exhausted(err);
      assert.ok(e.details.startsWith(`the request is ${size} bytes, over ${SERVER}, 1048576 bytes: send fewer or ` +
        "smaller candidates, or raise that setting on the server [grpc: "), e.details);
      return true;
    });
    client.close();
  });

  test("a response over maxMessageBytes is refused naming it", async () => {
    const client = new MemrankClient(addr ?? "", { maxMessageBytes: 2048, retries: 0, timeoutMs: 10_000 });
    const candidates = Array.from({ length: 20 }, (_, i) => ({ id: `m${i}`, content: `memory number ${i} about the ledger`, retrievalScore: 0.5 }));
    await assert.rejects(client.rank({ query: "ledger", explain: ExplainLevel.FULL, candidates }), (err: unknown) => {
      const e = exhausted(err);
      assert.match(e.details, /^the response is \d+ bytes, over this client's maxMessageBytes \(new MemrankClient\(address, \{ maxMessageBytes \}\)\), 2048 bytes: raise it \[grpc: /);
      return true;
    });
    client.close();
  });
});
