// The columnar form rank() sends: its columns written out by hand for small requests, and, against the live
// server at MEMRANK_ADDR, every conformance vector sent in both forms with the same answer and a receipt that
// verifies from either.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { clone, create, fromJson, toBinary, type JsonValue } from "@bufbuild/protobuf";
import {
  type CandidateInit,
  candidate,
  candidatesOf,
  columnar,
  inCandidateWords,
  MemrankClient,
  MemrankError,
  packEmbeddings,
  RankRequestSchema,
  RankResponseSchema,
  rankRequest,
  receiptCanonical,
  SafetyStatus,
  Source,
  verifyReceipt,
  type RankRequest,
} from "../src/index.js";

const dir = fileURLToPath(new URL("../../../../tests/vectors/", import.meta.url));
const addr = process.env["MEMRANK_ADDR"];
const t0 = new Date("2026-06-01T12:00:00.250Z");

/** A message's fields as an init object (what a plain-object caller passes to rank()). */
function init(req: RankRequest): Omit<RankRequest, "$typeName"> {
  const { $typeName: _, ...rest } = req;
  return rest;
}

test("rank() sends a plain object's candidates as columns: each column as written by hand", () => {
  const sent = rankRequest({
    query: "q",
    candidates: [
      candidate("a", "alpha", { kind: "fact", retrievalScore: 0.5, importance: 0.25, createdAt: t0,
        facetScores: { bm25: 2 }, metadata: { k: "v" }, source: Source.CHAT, embedding: [1, 2], rerankerScore: 2.5 }),
      { id: "b", content: "beta", retrievalScore: 0.75, position: 3n, safety: SafetyStatus.QUARANTINED,
        facetScores: { dense: 0.5 } },
    ],
  });
  assert.equal(sent.columnar, true);
  const { message: m } = sent;
  const c = m.columns!;
  assert.equal(m.candidates.length, 0);
  assert.deepEqual([c.ids, c.contents, c.kinds, c.retrievalScores], [["a", "b"], ["alpha", "beta"], ["fact", ""], [0.5, 0.75]]);
  assert.deepEqual([c.importance, c.importancePresent], [[0.25, 0], [true, false]]);
  assert.deepEqual([c.positions, c.positionsPresent], [[0n, 3n], [false, true]]);
  assert.deepEqual([c.createdAt?.seconds, c.createdAt?.nanos, c.createdAt?.present],
    [[1780315200n, 0n], [250_000_000, 0], [true, false]]);
  assert.deepEqual([c.sources, c.safety], [[Source.CHAT, 0], [0, SafetyStatus.QUARANTINED]]);
  assert.deepEqual([c.facetNames, c.facetScores.map(String)], [["bm25", "dense"], ["2", "NaN", "NaN", "0.5"]]);
  assert.deepEqual(c.metadata.map((r) => r.entries), [{ k: "v" }, {}]);
  assert.deepEqual(c.rerankerScores.map(String), ["2.5", "NaN"]); // NaN: b has no reranker score
  // Columns no candidate sets stay empty (unset for every row).
  assert.deepEqual([c.layers, c.accessCounts, c.threads, c.stageNames, c.lastAccessedAt], [[], [], [], [], undefined]);
  // Candidate a's own embedding packed, b's a row of zeros (what the server reads for a missing one).
  assert.deepEqual([m.embeddingDim, m.embeddingsF32], [2, packEmbeddings([[1, 2], [0, 0]]).embeddingsF32]);
});

test("candidatesOf reads the columns back into the candidates they came from", () => {
  const cands = [
    candidate("a", "alpha", { kind: "fact", retrievalScore: 0.5, importance: 0, createdAt: t0, validTo: t0,
      stageScores: { ce: 0.25 }, metadata: { k: "v" }, thread: "t", speaker: "s", tokenCount: 7, accessCount: 2, rerankerScore: -1.25 }),
    candidate("b", "beta", { layer: "episodic", position: 0n, provenance: "p", safety: SafetyStatus.UNSAFE }),
  ];
  const sent = rankRequest({ candidates: cands });
  assert.equal(sent.columnar, true);
  assert.deepEqual(candidatesOf(sent.message), cands);
  const plain = create(RankRequestSchema, { candidates: cands });
  assert.equal(candidatesOf(plain), plain.candidates);
});

test("what the columns cannot carry goes per candidate; a message goes as it is", () => {
  const perCandidate = (candidates: CandidateInit[], extra = {}) => {
    const sent = rankRequest({ ...extra, candidates });
    assert.equal(sent.columnar, false);
    assert.equal(sent.message.columns, undefined);
    assert.equal(sent.message.candidates.length, candidates.length);
  };
  perCandidate([{ id: "a", facetScores: { bm25: Number.NaN } }]); // NaN: "no score" in the matrix
  perCandidate([{ id: "a", rerankerScore: Number.NaN }]); // NaN: "no score" in the column, refused per candidate
  perCandidate([{ id: "a", stageScores: { "": 1 } }]); // the server names the empty name on its candidate
  perCandidate([{ id: "a", embedding: [1, 2] }, { id: "b", embedding: [1] }]); // two dimensions: no matrix
  perCandidate([{ id: "a", embedding: [1] }], packEmbeddings([[1]])); // packed and per candidate at once
  const message = create(RankRequestSchema, { candidates: [{ id: "a" }] });
  assert.equal(rankRequest(message).message, message);
  assert.equal(columnar(message).columns?.ids[0], "a");
  assert.equal(message.columns, undefined, "columnar() copies");
});

test("errors of a columnar request are said in the candidates' words", () => {
  assert.equal(inCandidateWords("columns.retrieval_scores[3]"), "candidates[3].retrieval_score");
  assert.equal(inCandidateWords("columns.ids[2]"), "candidates[2].id");
  assert.equal(inCandidateWords("columns.reranker_scores[5]"), "candidates[5].reranker_score");
  assert.equal(inCandidateWords("columns.ids"), "candidates");
  assert.equal(inCandidateWords("columns.positions[0]"), "candidates[0].position");
  assert.equal(inCandidateWords("columns.created_at[1]"), "candidates[1].created_at");
  assert.equal(inCandidateWords('columns.facet_scores[4]["bm25"]'), 'candidates[4].facet_scores["bm25"]');
  assert.equal(inCandidateWords("columns.facet_names"), "candidates.facet_scores");
  assert.equal(inCandidateWords("embeddings_f32"), "embeddings_f32");
});

interface Vector {
  name: string;
  request: JsonValue;
  expect_error?: { code: string; field: string };
}

const vectors: Vector[] = readdirSync(dir).filter((f) => f.endsWith(".json")).sort()
  .map((f) => JSON.parse(readFileSync(dir + f, "utf8")) as Vector);

test("the receipt fixtures (v2 and v3) rebuild from their requests in columnar form", () => {
  for (const name of readdirSync(`${dir}receipts/`).filter((n) => n.endsWith(".json"))) {
    const fx = JSON.parse(readFileSync(`${dir}receipts/${name}`, "utf8")) as { request: JsonValue; response: JsonValue; lines: string[] };
    const perCandidate = fromJson(RankRequestSchema, fx.request);
    const asColumns = columnar(perCandidate);
    assert.ok(asColumns.columns !== undefined && asColumns.candidates.length === 0, name);
    const response = fromJson(RankResponseSchema, fx.response);
    assert.equal(receiptCanonical(asColumns, response), fx.lines.map((l) => l + "\n").join(""), name);
    assert.ok(verifyReceipt(asColumns, response).ok, name);
  }
});

/** A copy of a columnar request with one column value changed: a receipt must not verify against it. */
function tamperedColumns(req: RankRequest): RankRequest {
  const bad = clone(RankRequestSchema, req);
  const c = bad.columns!;
  if (c.retrievalScores.length) c.retrievalScores[0] = c.retrievalScores[0]! + 2 ** -40;
  else c.contents = c.ids.map((_, i) => (c.contents[i] ?? "") + "!");
  return bad;
}

describe("both request forms against the live server", { skip: addr ? false : "MEMRANK_ADDR is not set" }, () => {
  const client = new MemrankClient(addr ?? "", { timeoutMs: 10_000 });
  after(() => client.close());

  for (const v of vectors) {
    test(v.name, async () => {
      const perCandidate = fromJson(RankRequestSchema, v.request);
      const plain = init(perCandidate); // a plain object: rank() sends it as columns
      const asColumns = rankRequest(plain);
      assert.equal(asColumns.columnar, true, "the vector's candidates go as columns");
      const [one, two] = await Promise.allSettled([client.rank(perCandidate), client.rank(plain)]);
      if (v.expect_error) {
        assert.ok(one.status === "rejected" && two.status === "rejected", "both refused");
        const [a, b] = [one.reason, two.reason] as [MemrankError, MemrankError];
        assert.ok(a instanceof MemrankError && b instanceof MemrankError);
        assert.deepEqual([b.code, b.fields], [a.code, a.fields]);
        assert.ok(b.fields.includes(v.expect_error.field), JSON.stringify(b.fields));
        return;
      }
      assert.ok(one.status === "fulfilled" && two.status === "fulfilled", String((one as PromiseRejectedResult).reason
        ?? (two as PromiseRejectedResult).reason));
      const [a, b] = [one.value, two.value];
      assert.deepEqual(toBinary(RankResponseSchema, b), toBinary(RankResponseSchema, a), "byte-identical responses");
      for (const req of [asColumns.message, perCandidate]) {
        const check = verifyReceipt(req, b);
        assert.ok(check.ok, JSON.stringify(check));
      }
      const bad = verifyReceipt(tamperedColumns(asColumns.message), b);
      assert.ok(!bad.ok && bad.problems.some((p) => p.startsWith("digest:")), JSON.stringify(bad));
      const dropped = clone(RankRequestSchema, asColumns.message);
      dropped.columns!.ids = dropped.columns!.ids.map((id, i) => (i === 0 ? `${id}-x` : id));
      assert.ok(!verifyReceipt(dropped, b).ok, "a renamed candidate column verified");
    });
  }
});
