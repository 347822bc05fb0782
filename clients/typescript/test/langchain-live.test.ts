// LangChain.js: MemrankCompressor inside ContextualCompressionRetriever (@langchain/classic) over a
// MemoryVectorStore with @langchain/core's SyntheticEmbeddings, against the live server at MEMRANK_ADDR.
// Each expected order is the server's own placement for the same hits, with the candidates written out by hand.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { after, describe, test } from "node:test";
import { ContextualCompressionRetriever } from "@langchain/classic/retrievers/contextual_compression";
import { MemoryVectorStore } from "@langchain/classic/vectorstores/memory";
import { Document, type DocumentInterface } from "@langchain/core/documents";
import { SyntheticEmbeddings } from "@langchain/core/utils/testing";
import { candidate, MemrankClient, MemrankError, Placement, status, timestamp, type Candidate } from "../src/index.js";
import { MappingError, MemrankCompressor, type MemrankExplanation } from "../src/langchain.js";

const addr = process.env["MEMRANK_ADDR"];
const REF = new Date("2026-06-01T12:00:00Z");
const QUERY = "what did Caroline decide about the trip to Lisbon?";

interface Turn {
  thread: string;
  position: number;
  speaker: string;
  created_at: string;
  importance?: number;
  kind?: string;
}

// The Python adapters' corpus (tests/frameworks/conftest.py): a conversation, positions are turns of s1 / s2.
const CORPUS: [string, string, Turn][] = [
  ["t0", "Caroline: I keep thinking about a trip this summer.",
    { thread: "s1", position: 0, speaker: "Caroline", created_at: "2026-05-01T10:00:00Z" }],
  ["t1", "Melanie: Where would you go? Lisbon or Porto?",
    { thread: "s1", position: 1, speaker: "Melanie", created_at: "2026-05-01T10:01:00Z" }],
  ["t2", "Caroline: I decided on Lisbon, the trip is booked for July.",
    { thread: "s1", position: 2, speaker: "Caroline", created_at: "2026-05-01T10:02:00Z", importance: 0.9, kind: "decision" }],
  ["t3", "Melanie: Lisbon in July will be hot, take a hat.",
    { thread: "s1", position: 3, speaker: "Melanie", created_at: "2026-05-01T10:03:00Z" }],
  ["t4", "Caroline: I painted a sunrise over the lake last weekend.",
    { thread: "s2", position: 0, speaker: "Caroline", created_at: "2026-04-12T09:00:00Z" }],
  ["t5", "Melanie: My kids love the pottery class on Tuesdays.",
    { thread: "s2", position: 1, speaker: "Melanie", created_at: "2026-04-12T09:01:00Z" }],
  ["t6", "Caroline: The adoption agency called back about the interview.",
    { thread: "s2", position: 2, speaker: "Caroline", created_at: "2026-04-12T09:02:00Z", importance: 0.8, kind: "fact" }],
  ["t7", "Melanie: We went camping by the river, the trip was lovely.",
    { thread: "s2", position: 3, speaker: "Melanie", created_at: "2026-04-12T09:03:00Z" }],
  ["t8", "Caroline: Lisbon has great tiles, I want to paint them on the trip.",
    { thread: "s1", position: 4, speaker: "Caroline", created_at: "2026-05-01T10:04:00Z" }],
  ["t9", "Melanie: Porto is cheaper than Lisbon, but Lisbon it is then.",
    { thread: "s1", position: 5, speaker: "Melanie", created_at: "2026-05-01T10:05:00Z" }],
];
const TEXT = new Map(CORPUS.map(([id, text]) => [id, text]));
const TURN = new Map(CORPUS.map(([id, , turn]) => [id, turn]));

function docs(): Document[] {
  return CORPUS.map(([id, text, meta]) => new Document({ pageContent: text, metadata: { ...meta }, id }));
}

async function vectorStore(documents: Document[] = docs()): Promise<MemoryVectorStore> {
  return MemoryVectorStore.fromDocuments(documents, new SyntheticEmbeddings({ vectorSize: 32 }));
}

/** The candidate the README's mapping table says document `id` becomes, written out by hand. */
function byHand(id: string, retrievalScore: number): Candidate {
  const t = TURN.get(id);
  assert.ok(t, id);
  return candidate(id, TEXT.get(id) ?? "", {
    retrievalScore, thread: t.thread, position: BigInt(t.position), speaker: t.speaker, createdAt: new Date(t.created_at),
    ...(t.importance !== undefined ? { importance: t.importance } : {}), ...(t.kind !== undefined ? { kind: t.kind } : {}),
  });
}

/** The README's rule for documents without scores: the i-th of n (0-based) gets (n - i) / n. */
function orderScores(n: number): number[] {
  return Array.from({ length: n }, (_, i) => (n - i) / n);
}

function info(d: DocumentInterface): MemrankExplanation {
  return d.metadata["memrank"] as MemrankExplanation;
}

describe("LangChain.js compressor against a live server", { skip: addr ? false : "MEMRANK_ADDR is not set" }, () => {
  const client = new MemrankClient(addr ?? "", { timeoutMs: 10_000 });
  const opened: MemrankCompressor[] = [];
  const compressor = (options: ConstructorParameters<typeof MemrankCompressor>[0] = {}): MemrankCompressor => {
    const c = new MemrankCompressor({ target: addr, request: { referenceTime: timestamp(REF) }, ...options });
    opened.push(c);
    return c;
  };
  after(() => {
    client.close();
    for (const c of opened) c.close();
  });

  /** The server's placement of `hits` (ids), scored by hand, as ids. */
  async function expectedIds(hits: readonly string[], scores: readonly number[], extra: object = {}): Promise<string[]> {
    const resp = await client.rank({
      query: QUERY, referenceTime: timestamp(REF), candidates: hits.map((id, i) => byHand(id, scores[i] ?? Number.NaN)), ...extra,
    });
    return resp.selected.map((m) => m.id);
  }

  test("a vector-store pipeline follows the server's placement; top-N honoured; breakdown present", async () => {
    const base = (await vectorStore()).asRetriever(8);
    const hits = await base.invoke(QUERY);
    assert.equal(hits.length, 8);
    const ids = hits.map((d) => d.id ?? "");
    const retriever = new ContextualCompressionRetriever({ baseCompressor: compressor({ topN: 4 }), baseRetriever: base });
    const got = await retriever.invoke(QUERY);
    const expected = await expectedIds(ids, orderScores(8), { relevanceThreshold: 0, budget: { maxItems: 4 } });
    assert.equal(expected.length, 4);
    assert.deepEqual(got.map((d) => d.id), expected);
    assert.notDeepEqual(expected, ids.slice(0, 4), "memrank reorders the retriever's hits (else this test shows little)");
    const byId = new Map(hits.map((d) => [d.id, d]));
    for (const d of got) {
      const m = info(d);
      const hit = byId.get(d.id);
      assert.ok(hit);
      assert.equal(d.pageContent, hit.pageContent);
      assert.equal(m.id, d.id);
      const { memrank: _, ...rest } = d.metadata;
      assert.deepEqual(rest, hit.metadata, "the caller's metadata is kept; the explanation is added beside it");
      assert.equal("memrank" in hit.metadata, false, "the retriever's documents are not modified");
      assert.ok(Math.abs((m.retrieval_score ?? -1) - (orderScores(8)[ids.indexOf(d.id ?? "")] ?? -2)) < 1e-12);
      const total = Object.values(m.signals ?? {}).reduce((sum, s) => sum + s.contribution, 0) + (m.blend_term ?? 0);
      assert.ok(Math.abs(total - (m.combined_score ?? Number.NaN)) < 1e-9, `${total} vs ${m.combined_score}`);
      assert.ok(m.signals?.["relevance"] && m.signals["lexical"], "per-signal breakdown");
      assert.ok(Array.isArray(m.reasons));
      assert.match(m.receipt, /^[0-9a-f]{64}$/);
      assert.ok(m.stages.length > 0);
    }
    assert.deepEqual(got.map((d) => info(d).rank), [1, 2, 3, 4], "best first by default");
  });

  test("scores in [0, 1] in metadata are sent as they are, under the profile's own threshold", async () => {
    const store = await vectorStore();
    const scored = (await store.similaritySearchWithScore(QUERY, 10))
      .map(([d, score]) => new Document({ pageContent: d.pageContent, metadata: { ...d.metadata, score }, id: d.id }));
    assert.ok(scored.every((d) => d.metadata["score"] >= 0 && d.metadata["score"] <= 1));
    const got = await compressor().compressDocuments(scored, QUERY);
    const ids = scored.map((d) => d.id ?? "");
    assert.deepEqual(got.map((d) => d.id), await expectedIds(ids, scored.map((d) => d.metadata["score"] as number)));
    assert.ok(got.length > 0);
    for (const d of got) assert.ok(Math.abs((info(d).retrieval_score ?? -1) - d.metadata["score"]) < 1e-12);
  });

  test("unbounded scores are min-max normalised within the batch, threshold 0", async () => {
    const raw = [7.5, 3, 12, 0.5, 9, 4, 1, 6];
    const batch = docs().slice(0, raw.length).map((d, i) => new Document({ ...d, metadata: { ...d.metadata, score: raw[i] } }));
    const got = await compressor({ topN: 5 }).compressDocuments(batch, QUERY);
    const scaled = raw.map((s) => (s - 0.5) / (12 - 0.5));
    const ids = batch.map((d) => d.id ?? "");
    assert.deepEqual(got.map((d) => d.id), await expectedIds(ids, scaled, { relevanceThreshold: 0, budget: { maxItems: 5 } }));
    for (const d of got) assert.ok(Math.abs((info(d).retrieval_score ?? -1) - (scaled[ids.indexOf(d.id ?? "")] ?? -2)) < 1e-12);
  });

  test("placement BEST_LAST puts rank one last", async () => {
    const got = await compressor({ topN: 5, request: { referenceTime: timestamp(REF), placement: Placement.BEST_LAST } })
      .compressDocuments(docs(), QUERY);
    assert.deepEqual(got.map((d) => info(d).rank), [5, 4, 3, 2, 1]);
    assert.deepEqual(got.map((d) => info(d).position), [0, 1, 2, 3, 4]);
  });

  test("malformed metadata in a pipeline names the document and the key", async () => {
    const documents = docs();
    (documents[3] as Document).metadata["importance"] = "very";
    const retriever = new ContextualCompressionRetriever({
      baseCompressor: compressor(), baseRetriever: (await vectorStore(documents)).asRetriever(10),
    });
    await assert.rejects(retriever.invoke(QUERY), (err: unknown) => {
      assert.ok(err instanceof MappingError, String(err));
      assert.match(err.message, /^document \d \(id 't3'\): metadata\['importance'\]: importance must be a number in \[0, 1\], got 'very'$/);
      assert.equal(err.key, "metadata['importance']");
      return true;
    });
  });

  test("a missing required key is an error, not a default", async () => {
    const documents = docs();
    delete (documents[5] as Document).metadata["created_at"];
    await assert.rejects(compressor({ keys: { required: ["createdAt"] } }).compressDocuments(documents, QUERY), {
      name: "MappingError",
      message: "document 5 (id 't5'): metadata['created_at']: absent, and keys.required lists 'createdAt'",
    });
  });

  test("configured keys are read", async () => {
    const renamed = CORPUS.map(([id, text, t]) => new Document({
      pageContent: text, id, metadata: { when: t.created_at, conv: t.thread, turn: t.position, who: t.speaker },
    }));
    const plain = CORPUS.map(([id, text, t]) => new Document({
      pageContent: text, id, metadata: { created_at: t.created_at, thread: t.thread, position: t.position, speaker: t.speaker },
    }));
    const a = await compressor({ keys: { createdAt: "when", thread: "conv", position: "turn", speaker: "who" } })
      .compressDocuments(renamed, QUERY);
    const b = await compressor().compressDocuments(plain, QUERY);
    assert.ok(a.length > 0);
    assert.deepEqual(a.map((d) => [d.id, info(d).score]), b.map((d) => [d.id, info(d).score]));
    assert.ok(a.some((d) => (info(d).signals?.["context"]?.raw ?? 0) > 0), "the context signal sees thread/position");
  });

  test("a server refusal names the document", async () => {
    const documents = docs();
    (documents[2] as Document).metadata["thread"] = "x".repeat(300); // over limits.max_thread_bytes (128)
    await assert.rejects(compressor().compressDocuments(documents, QUERY), (err: unknown) => {
      assert.ok(err instanceof MemrankError && err.code === status.INVALID_ARGUMENT, String(err));
      assert.ok(err.fields.includes("candidates[2].thread"), err.fields.join());
      assert.match(err.message, /\ncandidates\[2\]\.thread: document 2 \(id 't2'\)/);
      return true;
    });
  });

  test("documents without ids get their batch index", async () => {
    const documents = CORPUS.map(([, text, t]) => new Document({ pageContent: text, metadata: { ...t } }));
    const got = await compressor({ topN: 3 }).compressDocuments(documents, QUERY);
    assert.equal(got.length, 3);
    for (const d of got) {
      const index = Number(info(d).id.replace(/^#/, ""));
      assert.equal(documents[index]?.pageContent, d.pageContent);
    }
  });

  test("a given client is used and left open", async () => {
    const c = new MemrankCompressor({ client, topN: 2, request: { referenceTime: timestamp(REF) } });
    assert.equal((await c.compressDocuments(docs(), QUERY)).length, 2);
    c.close();
    assert.ok((await client.listProfiles()).profiles.length > 0);
  });

  test("the README's LangChain.js example runs as written", () => {
    const root = fileURLToPath(new URL("../..", import.meta.url)); // dist/test -> the package folder
    const readme = readFileSync(`${root}/README.md`, "utf8");
    const section = readme.slice(readme.indexOf("\n## LangChain.js\n"));
    const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
    assert.ok(code.includes("localhost:50051"), "a ts block with the placeholder target under ## LangChain.js");
    const script = `${root}/dist/readme-langchain.mjs`; // inside the package: "memrank-sidecar/langchain" resolves to itself
    writeFileSync(script, [
      'import { MemoryVectorStore } from "@langchain/classic/vectorstores/memory";',
      'import { Document } from "@langchain/core/documents";',
      'import { SyntheticEmbeddings } from "@langchain/core/utils/testing";',
      `const vectorStore = await MemoryVectorStore.fromDocuments(${JSON.stringify(CORPUS)}.map(([id, pageContent, metadata]) =>`,
      "  new Document({ id, pageContent, metadata })), new SyntheticEmbeddings({ vectorSize: 32 }));",
      code.replace("localhost:50051", addr ?? ""),
      "console.log(JSON.stringify(docs.map((d) => [d.metadata.memrank.rank, Object.keys(d.metadata.memrank.signals).length])));",
    ].join("\n"));
    const got = JSON.parse(execFileSync(process.execPath, [script], { encoding: "utf8", stdio: "pipe" })) as [number, number][];
    assert.ok(got.length > 0 && got.length <= 5, JSON.stringify(got));
    assert.deepEqual(got.map(([rank]) => rank), got.map((_, i) => i + 1), "best first: ranks 1, 2, ... in placement order");
    assert.ok(got.every(([, signals]) => signals > 0));
  });
});
