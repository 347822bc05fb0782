// The LangChain.js adapter's mapping on its own (no server): what each documented rule sends, and its errors.
// The cases follow the Python adapters' tests (tests/frameworks/test_mapping.py): one mapping, two languages.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { Document } from "@langchain/core/documents";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { candidatesOf } from "../src/columns.js";
import { Server, ServerCredentials, type sendUnaryData, type ServerUnaryCall } from "@grpc/grpc-js";
import {
  BudgetSchema,
  Placement,
  RankedMemorySchema,
  RankRequestSchema,
  RankResponseSchema,
  SafetyStatus,
  Source,
  type Candidate,
  type RankRequest,
  type RankResponse,
} from "../src/index.js";
import {
  buildRankRequest,
  MappingError,
  MemrankCompressor,
  metadataKeys,
  type Item,
  type MappingOptions,
} from "../src/langchain.js";

const EPOCH_2026_05_01 = 1777593600; // 2026-05-01T00:00:00Z

function one(meta: Record<string, unknown>, options: MappingOptions = {}): Candidate {
  const c = buildRankRequest("q", [{ content: "text", metadata: meta, id: "d0", score: 0.5 }], options).candidates[0];
  assert.ok(c);
  return c;
}

function mappingError(fn: () => unknown, check: (err: MappingError) => void): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof MappingError, `expected a MappingError, got ${String(err)}`);
    check(err);
    return true;
  });
}

test("timestamps in every documented form", () => {
  for (const value of [
    "2026-05-01T00:00:00Z", "2026-05-01T02:00:00+02:00", "2026-05-01T00:00:00", "2026-05-01 00:00:00",
    "2026-05-01", "2026-04-30T19:00:00-05:00", EPOCH_2026_05_01, String(EPOCH_2026_05_01), 1777593600.0,
    new Date(Date.UTC(2026, 4, 1)),
  ]) {
    const ts = one({ created_at: value }).createdAt;
    assert.deepEqual([ts?.seconds, ts?.nanos], [BigInt(EPOCH_2026_05_01), 0], `created_at ${String(value)}`);
  }
  const frac = one({ event_time: "2026-05-01T00:00:00.25Z", valid_to: 1777593600.5 });
  assert.deepEqual([frac.eventTime?.nanos, frac.validTo?.nanos], [250_000_000, 500_000_000]);
  assert.equal(timestampDate(one({ valid_from: "0001-01-01T00:00:00Z" }).validFrom!).toISOString(),
    "0001-01-01T00:00:00.000Z");
});

test("malformed values name the document and the key", () => {
  const cases: [string, unknown, string][] = [
    ["created_at", "yesterday", "a timestamp must be"],
    ["created_at", "2026-02-30", "a timestamp must be"],
    ["valid_to", [2026], "a timestamp must be"],
    ["valid_to", new Date(Number.NaN), "a timestamp must be"],
    ["importance", 1.5, "importance must be a number in [0, 1]"],
    ["importance", true, "importance must be a number in [0, 1]"],
    ["importance", Number.NaN, "importance must be a number in [0, 1]"],
    ["position", 2 ** 53 + 2, "position must be an integer in [0, 2^53]"],
    ["position", 1.5, "position must be an integer in [0, 2^53]"],
    ["position", "1.5", "position must be an integer in [0, 2^53]"],
    ["token_count", -3, "token_count must be an integer"],
    ["access_count", 2 ** 32, "access_count must be an integer in [0, 2^32 - 1]"],
    ["kind", 3, "kind must be a string"],
    ["thread", 1.5, "thread must be a string or an integer"],
    ["thread", { id: 1 }, "thread must be a string or an integer"],
    ["safety", "fine", "safety must be one of safe, review_needed"],
    ["memory_source", 99, "source must be one of system_verified"],
    ["embedding", ["a", "b"], "an embedding must be a non-empty sequence of finite numbers"],
    ["embedding", [], "an embedding must be a non-empty sequence of finite numbers"],
    ["embedding", [1, Number.POSITIVE_INFINITY], "an embedding must be a non-empty sequence of finite numbers"],
  ];
  for (const [key, value, problem] of cases) {
    mappingError(() => one({ [key]: value }), (err) => {
      assert.equal(err.document, "document 0 (id 'd0')");
      assert.equal(err.key, `metadata['${key}']`);
      assert.ok(err.problem.includes(problem), `${key}=${String(value)}: ${err.problem}`);
      assert.equal(err.message, `${err.document}: ${err.key}: ${err.problem}`);
    });
  }
});

test("the Python adapters' message, word for word", () => {
  const items: Item[] = ["t0", "t1", "t2", "t3"].map((id) => ({ content: id, metadata: {}, id }));
  (items[3] as Item).metadata["importance"] = "very";
  assert.throws(() => buildRankRequest("q", items), {
    name: "MappingError",
    message: "document 3 (id 't3'): metadata['importance']: importance must be a number in [0, 1], got 'very'",
  });
});

test("documented conversions", () => {
  const c = one({
    position: "7", token_count: 12.0, access_count: "3", thread: 42, importance: "0.25",
    memory_source: "Source_Chat", safety: 2, kind: "decision", layer: "session", speaker: "Caroline",
    provenance: "crm", embedding: new Float32Array([1, 2.5, 3]),
  });
  assert.deepEqual([c.position, c.tokenCount, c.accessCount, c.thread, c.importance], [7n, 12, 3, "42", 0.25]);
  assert.deepEqual([c.source, c.safety], [Source.CHAT, SafetyStatus.REVIEW_NEEDED]);
  assert.deepEqual([c.kind, c.layer, c.speaker, c.provenance, c.embedding], ["decision", "session", "Caroline", "crm", [1, 2.5, 3]]);
  assert.equal(one({ memory_source: "user-provided" }).source, Source.USER_PROVIDED);
  assert.equal(one({ safety: "SAFETY_STATUS_QUARANTINED" }).safety, SafetyStatus.QUARANTINED);
});

test("null is absent and absent is unset; other metadata is not sent", () => {
  const c = one({ importance: null, position: undefined, source: "docs/a.txt", page: 3 });
  assert.equal(c.importance, undefined);
  assert.equal(c.position, undefined);
  assert.equal(c.createdAt, undefined);
  assert.equal(c.source, Source.UNSPECIFIED);
  assert.deepEqual(c.metadata, {});
});

test("keys set to null are not read; renamed keys are", () => {
  assert.equal(one({ importance: "not a number" }, { keys: metadataKeys({ importance: null }) }).importance, undefined);
  const c = one({ when: "2026-05-01", conv: "s1", turn: 4 },
    { keys: metadataKeys({ createdAt: "when", thread: "conv", position: "turn" }) });
  assert.deepEqual([c.createdAt?.seconds, c.thread, c.position], [BigInt(EPOCH_2026_05_01), "s1", 4n]);
});

test("ids: the document's own, else metadata, else the batch index; duplicates refused", () => {
  const req = buildRankRequest("q", [
    { content: "a", metadata: { id: "meta-a" }, id: "own-a" },
    { content: "b", metadata: { id: 7 } },
    { content: "c", metadata: {} },
  ]);
  assert.deepEqual(req.candidates.map((c) => c.id), ["own-a", "7", "#2"]);
  mappingError(() => buildRankRequest("q", [{ content: "a", metadata: { id: 1.5 } }]), (err) => {
    assert.equal(err.message, "document 0: metadata['id']: an id must be a non-empty string or an integer, got 1.5");
  });
  mappingError(() => buildRankRequest("q", [{ content: "a", metadata: {}, id: "x" }, { content: "b", metadata: {}, id: "x" }]),
    (err) => assert.equal(err.message,
      "document 1 (id 'x'): id: the same id as document 0: ids must be unique (deduplicate before ranking)"));
});

test("unit scores keep the profile's threshold, relative ones send zero", () => {
  const items = (scores: unknown[]): Item[] => scores.map((score, i) => ({ content: `c${i}`, metadata: {}, id: `c${i}`, score }));
  const unit = buildRankRequest("q", items([0.2, 0.9]));
  assert.deepEqual(unit.candidates.map((c) => c.retrievalScore), [0.2, 0.9]);
  assert.equal(unit.relevanceThreshold, undefined);
  const minmax = buildRankRequest("q", items([3, 12, "6"]));
  assert.deepEqual(minmax.candidates.map((c) => c.retrievalScore), [0, 1, 1 / 3]);
  assert.equal(minmax.relevanceThreshold, 0);
  const order = buildRankRequest("q", items([undefined, null, undefined, undefined]));
  assert.deepEqual(order.candidates.map((c) => c.retrievalScore), [1, 0.75, 0.5, 0.25]);
  assert.equal(order.relevanceThreshold, 0);
  const kept = buildRankRequest("q", items([3, 5]), { request: { relevanceThreshold: 0.3 } });
  assert.equal(kept.relevanceThreshold, 0.3);
  assert.deepEqual(buildRankRequest("q", items([0.2, 0.9]), { scores: "minmax" }).candidates.map((c) => c.retrievalScore), [0, 1]);
  assert.deepEqual(buildRankRequest("q", items([0.7, 0.7]), { scores: "minmax" }).candidates.map((c) => c.retrievalScore), [1, 1]);
  assert.deepEqual(buildRankRequest("q", items([0.2, 0.9]), { scores: "order" }).candidates.map((c) => c.retrievalScore), [1, 0.5]);
  mappingError(() => buildRankRequest("q", items([0.5, 1.5]), { scores: "unit", scoreField: "metadata['score']" }),
    (err) => assert.equal(err.message, "document 1 (id 'c1'): metadata['score']: 1.5 is outside [0, 1] (scores='unit'); "
      + "use scores='minmax' for unbounded scores"));
  mappingError(() => buildRankRequest("q", items(["high"])), (err) => assert.match(err.problem, /a score must be a finite number, got 'high'/));
  mappingError(() => buildRankRequest("q", items([0.5, undefined])),
    (err) => assert.equal(err.problem, "no score, while scores='auto' needs one on every document (the others carry one)"));
  assert.throws(() => buildRankRequest("q", items([0.5]), { scores: "rank" as never }), /scores must be one of/);
});

test("embedding dimensions must agree", () => {
  mappingError(() => buildRankRequest("q", [
    { content: "a", metadata: { embedding: [1, 2] }, id: "a" },
    { content: "b", metadata: {}, id: "b" },
    { content: "c", metadata: { embedding: [1] }, id: "c" },
  ]), (err) => assert.match(err.message, /^document 2 \(id 'c'\): embedding: 1 dimensions, while document 0 \(id 'a'\) has 2/));
});

test("required keys: absence is an error, not a default", () => {
  const keys = metadataKeys({ required: ["createdAt", "thread"] });
  mappingError(() => one({ created_at: "2026-05-01" }, { keys }), (err) => {
    assert.equal(err.message, "document 0 (id 'd0'): metadata['thread']: absent, and keys.required lists 'thread'");
  });
  assert.equal(one({ created_at: "2026-05-01", thread: "s1" }, { keys }).thread, "s1");
});

test("request extras and their limits; the caller's request is not modified", () => {
  const budget = create(BudgetSchema, { maxTokens: 100 });
  const extra = { placement: Placement.EDGES, budget };
  const req = buildRankRequest("q", [{ content: "a", metadata: {}, id: "a", score: 0.5 }],
    { topN: 3, profile: "default", request: extra });
  assert.deepEqual([req.budget?.maxItems, req.budget?.maxTokens, req.placement, req.profile, req.query],
    [3, 100, Placement.EDGES, "default", "q"]);
  assert.equal(budget.maxItems, 0, "the caller's budget is copied, not filled in");
  assert.throws(() => buildRankRequest("q", [], { request: { candidates: [{ id: "x" }] } }), /request may not set \['candidates'\]/);
  assert.throws(() => buildRankRequest("q", [], { request: { placment: 1 } as never }), /not a RankRequest: unknown fields \['placment'\]/);
  assert.throws(() => buildRankRequest("q", [], { topN: 0 }), /topN must be a positive integer, got 0/);
});

test("metadata keys are checked", () => {
  assert.throws(() => metadataKeys({ required: ["created" as never] }), /unknown fields \['created'\]/);
  assert.throws(() => metadataKeys({ thread: null, required: ["thread"] }), /whose key is null: \['thread'\]/);
  assert.throws(() => metadataKeys({ createdat: "x" } as never), /keys has unknown fields \['createdat'\]/);
  assert.throws(() => metadataKeys({ output: "" }), /keys.output must be a non-empty key/);
  assert.equal(metadataKeys().source, "memory_source");
});

test("the compressor refuses bad options at construction, and sends nothing for no documents", async () => {
  assert.throws(() => new MemrankCompressor({}), /a target \('host:port'\) or a client/);
  assert.throws(() => new MemrankCompressor({ target: "127.0.0.1:9", topN: 0 }), /topN must be a positive integer/);
  assert.throws(() => new MemrankCompressor({ target: "127.0.0.1:9", scores: "best" as never }), /scores must be one of/);
  assert.throws(() => new MemrankCompressor({ target: "127.0.0.1:9", request: { query: "x" } }), /may not set \['query'\]/);
  const unreachable = new MemrankCompressor({ target: "127.0.0.1:9", timeoutMs: 100 });
  assert.deepEqual(await unreachable.compressDocuments([], "q"), []);
  const req = unreachable.buildRequest([new Document({ pageContent: "x", metadata: { score: 0.4, kind: "fact" }, id: "d" })], "q");
  assert.deepEqual([req.candidates[0]?.id, req.candidates[0]?.retrievalScore, req.candidates[0]?.kind], ["d", 0.4, "fact"]);
  unreachable.close();
});

test("the package's main entry does not load @langchain; its /langchain subpath does", () => {
  // A resolve hook refuses every @langchain/* import; the main entry must load anyway (self-reference by name).
  const hook = "data:text/javascript," + encodeURIComponent(
    "export async function resolve(s, c, next) { if (s.startsWith('@langchain/')) throw new Error('loaded ' + s); return next(s, c); }");
  const root = fileURLToPath(new URL("../..", import.meta.url)); // dist/test -> the package folder
  const name = (JSON.parse(readFileSync(`${root}/package.json`, "utf8")) as { name: string }).name;
  const run = (code: string) => execFileSync(process.execPath, ["--input-type=module", "-e", code], { cwd: root, encoding: "utf8", stdio: "pipe" });
  const refuse = `import { register } from "node:module"; register(${JSON.stringify(hook)});`;
  assert.equal(run(`${refuse} const m = await import("${name}"); console.log(typeof m.MemrankClient);`).trim(), "function");
  assert.throws(() => run(`${refuse} await import("${name}/langchain");`), /loaded @langchain\//);
  assert.equal(run(`const m = await import("${name}/langchain"); console.log(typeof m.MemrankCompressor);`).trim(), "function");
});

test("against a fake server: the bearer token is sent, documents come back in the response's order", async () => {
  const seen: { auth: unknown[]; request?: RankRequest } = { auth: [] };
  const server = new Server();
  server.addService({
    Rank: {
      path: "/memrank.v1.RankingService/Rank", requestStream: false, responseStream: false,
      requestSerialize: (m: RankRequest) => Buffer.from(toBinary(RankRequestSchema, m)),
      requestDeserialize: (b: Buffer) => fromBinary(RankRequestSchema, b),
      responseSerialize: (m: RankResponse) => Buffer.from(toBinary(RankResponseSchema, m)),
      responseDeserialize: (b: Buffer) => fromBinary(RankResponseSchema, b),
    },
  }, {
    Rank: (call: ServerUnaryCall<RankRequest, unknown>, callback: sendUnaryData<unknown>) => {
      seen.auth = call.metadata.get("authorization");
      seen.request = call.request;
      // Selects the last two candidates, the last one first.
      const selected = candidatesOf(call.request).slice(-2).reverse()
        .map((c, i) => create(RankedMemorySchema, { id: c.id, rank: i + 1, position: i, score: 0.5 - i / 10 }));
      callback(null, create(RankResponseSchema, { selected, profile: "default" }));
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  const compressor = new MemrankCompressor({ target: `127.0.0.1:${port}`, token: "s3cret", topN: 2 });
  try {
    const input: Document[] = ["a", "b", "c"].map((id) => new Document({ pageContent: id, metadata: { kind: "fact" }, id }));
    const got = await compressor.compressDocuments(input, "q");
    assert.deepEqual(seen.auth, ["Bearer s3cret"]);
    assert.deepEqual([seen.request?.query, seen.request?.budget?.maxItems, seen.request?.relevanceThreshold], ["q", 2, 0]);
    // The documents went as columns: ids, contents and kinds one column each, nothing per candidate.
    assert.deepEqual([seen.request?.candidates.length, seen.request?.columns?.ids, seen.request?.columns?.contents,
      seen.request?.columns?.kinds], [0, ["a", "b", "c"], ["a", "b", "c"], ["fact", "fact", "fact"]]);
    assert.deepEqual(got.map((d) => [d.id, d.pageContent, d.metadata["kind"]]), [["c", "c", "fact"], ["b", "b", "fact"]]);
    assert.deepEqual(got.map((d) => d.metadata["memrank"]), [
      { id: "c", rank: 1, position: 0, score: 0.5, layer: "", profile: "default", stages: [], receipt: "" },
      { id: "b", rank: 2, position: 1, score: 0.4, layer: "", profile: "default", stages: [], receipt: "" },
    ]);
    assert.equal(input[2]?.metadata["memrank"], undefined, "the input documents are not modified");
  } finally {
    compressor.close();
    server.forceShutdown();
  }
});
