// Replays every tests/vectors/*.json conformance case against the live server at MEMRANK_ADDR.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { clone, create, fromJson, toBinary, type DescMessage, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import {
  dropReasonName,
  MemrankClient,
  MemrankError,
  packEmbeddings,
  RankRequestSchema,
  RankResponseSchema,
  RECEIPT_SCHEMA,
  RECEIPT_SCHEMA_V2,
  receiptCanonical,
  status,
  verifyReceipt,
} from "../src/index.js";

interface Vector {
  name: string;
  request: JsonValue;
  embeddings?: number[][];
  expect?: {
    selected_ids: string[];
    ranks: Record<string, number>;
    final_scores: Record<string, number>;
    dropped: Record<string, string>;
    // The optional expectations (tests/vectors/README.md).
    covered_by?: Record<string, string>;
    stages?: Record<string, StageRecord[]>;
    importance_suggestions?: Record<string, number>;
    shadow?: { profile: string; k: number; overlap_at_k: number; kendall_tau: number; selected_ids: string[] };
    receipt?: { schema: string; lines: string[] };
  };
  expect_error?: { code: string; field: string };
}

/** One expected RankingStage; a field left out of the vector is not checked. */
interface StageRecord {
  stage?: string;
  provenance?: string;
  objective_contains?: string;
  input_score: number;
  output_score?: number;
  position: number;
}

type Expect = NonNullable<Vector["expect"]>;
type Response = MessageShape<typeof RankResponseSchema>;

const close = (got: number, want: number): boolean => Math.abs(got - want) <= 1e-9;

/** covered_by, stages, importance_suggestions, shadow and receipt, when the vector gives them. */
function checkExtras(want: Expect, resp: Response): void {
  if (want.covered_by) {
    const got = Object.fromEntries(
      resp.dropped.filter((d) => d.id in want.covered_by!).map((d) => [d.id, d.breakdown?.coveredBy ?? ""]),
    );
    assert.deepEqual(got, want.covered_by, "covered_by");
  }
  if (want.stages) {
    for (const m of resp.selected) {
      const recs: StageRecord[] = want.stages[m.id] ?? [];
      assert.equal(m.stages.length, recs.length, `${m.id}: stages`);
      recs.forEach((r, i) => {
        const st = m.stages[i]!;
        const where = `${m.id}: stage ${i} ${JSON.stringify(r)}`;
        if (r.stage !== undefined) assert.equal(st.stage, r.stage, where);
        if (r.provenance !== undefined) assert.equal(st.provenance, r.provenance, where);
        assert.ok(st.objective.includes(r.objective_contains ?? ""), `${where}: objective ${st.objective}`);
        assert.equal(st.position, r.position, where);
        assert.ok(close(st.inputScore, r.input_score), `${where}: input ${st.inputScore}`);
        if (r.output_score !== undefined) assert.ok(close(st.outputScore, r.output_score), `${where}: output ${st.outputScore}`);
      });
    }
  }
  if (want.importance_suggestions) {
    const got = new Map(resp.importanceSuggestions.map((s) => [s.id, s.suggestedImportance]));
    assert.equal(got.size, resp.importanceSuggestions.length, "importance_suggestions: an id twice");
    assert.deepEqual([...got.keys()].sort(), Object.keys(want.importance_suggestions).sort(), "importance_suggestions");
    for (const [id, value] of Object.entries(want.importance_suggestions)) {
      assert.ok(close(got.get(id)!, value), `importance_suggestions ${id}: want ${value}, got ${got.get(id)}`);
    }
  }
  if (want.shadow) {
    const sh = resp.shadow;
    assert.ok(sh !== undefined, "no shadow comparison");
    assert.equal(sh.profile, want.shadow.profile);
    assert.equal(sh.k, want.shadow.k);
    assert.deepEqual(sh.selectedIds, want.shadow.selected_ids);
    assert.ok(close(sh.overlapAtK, want.shadow.overlap_at_k), `overlap_at_k ${sh.overlapAtK}`);
    assert.ok(close(sh.kendallTau, want.shadow.kendall_tau), `kendall_tau ${sh.kendallTau}`);
  }
  if (want.receipt) {
    assert.equal(resp.receipt?.schema, want.receipt.schema);
    assert.equal(resp.receipt?.digest, receiptDigest(want.receipt.lines, resp.policyVersion), "receipt digest");
  }
}

/** verifyReceipt rebuilds the receipt from the request and the response and it verifies; copies with one score
 * changed (one ulp up), one id swapped (or renamed) and one dropped candidate removed fail. */
function checkReceipt(request: MessageShape<typeof RankRequestSchema>, resp: Response): void {
  const check = verifyReceipt(request, resp);
  assert.ok(check.ok, `receipt: ${JSON.stringify(check)}`);
  assert.equal(check.digest, resp.receipt?.digest);
  const tampered: Record<string, Response> = {};
  let bad = clone(RankResponseSchema, resp);
  const target = bad.selected[0] ?? bad.dropped[0]!;
  target.score = nextUp(target.score);
  tampered["score"] = bad;
  bad = clone(RankResponseSchema, resp);
  if (bad.selected[0] && bad.dropped[0]) {
    [bad.selected[0].id, bad.dropped[0].id] = [bad.dropped[0].id, bad.selected[0].id];
  } else (bad.selected[0] ?? bad.dropped[0]!).id += "-x";
  tampered["id"] = bad;
  if (resp.dropped.length > 0) {
    bad = clone(RankResponseSchema, resp);
    bad.dropped.shift();
    tampered["dropped"] = bad;
  }
  for (const [what, copy] of Object.entries(tampered)) {
    const got = verifyReceipt(request, copy);
    assert.ok(!got.ok && got.problems.length > 0, `tampered ${what} verified: ${JSON.stringify(got)}`);
  }
}

/** The next float64 above x (x finite). */
function nextUp(x: number): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  view.setBigUint64(0, x === 0 ? 1n : x > 0 ? bits + 1n : bits - 1n);
  return view.getFloat64(0);
}

/** SHA-256 hex of the vector's canonical receipt lines, ${policy_version} filled with the JSON string of the
 * response's policy_version, each line ending in a newline. */
function receiptDigest(lines: string[], policyVersion: string): string {
  assert.match(policyVersion, /^[ !#-[\]-~]*$/, "policy_version needs JSON escapes");
  const text = lines.map((l) => l.replaceAll("${policy_version}", `"${policyVersion}"`) + "\n").join("");
  return createHash("sha256").update(text, "utf8").digest("hex");
}

const dir = fileURLToPath(new URL("../../../../tests/vectors/", import.meta.url));
const vectors: Vector[] = readdirSync(dir)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((f) => JSON.parse(readFileSync(dir + f, "utf8")) as Vector);
const addr = process.env["MEMRANK_ADDR"];
const digestsDir = process.env["MEMRANK_DIGESTS_DIR"];

/** SHA-256 of a message as encoded here, so clients/test.sh can compare the bytes of every client. */
function digest<D extends DescMessage>(schema: D, message: MessageShape<D>): string {
  return createHash("sha256").update(toBinary(schema, message)).digest("hex");
}

test("vectors are present", () => {
  assert.ok(vectors.length >= 20, `only ${vectors.length} vectors in ${dir}`);
});

test("packEmbeddings gives the packed vectors' embeddingsF32", () => {
  const packed = vectors.filter((v) => v.embeddings !== undefined);
  assert.ok(packed.length > 0, "no vector carries packed embeddings");
  for (const v of packed) {
    const want = fromJson(RankRequestSchema, v.request);
    const got = packEmbeddings(v.embeddings!);
    assert.deepEqual(got.embeddingsF32, want.embeddingsF32, v.name);
    assert.equal(got.embeddingDim, want.embeddingDim, v.name);
    const flat = packEmbeddings(Float32Array.from(v.embeddings!.flat()), want.embeddingDim);
    assert.deepEqual(flat.embeddingsF32, want.embeddingsF32, `${v.name} (flat Float32Array)`);
  }
});

test("receiptCanonical writes v2's q(s), f(x) and times as docs/concepts/receipts.md says", () => {
  const id = 'a"b\\c\n\t\b\f\r\u0001\u001f\u007f é😀\u2028/<&>';
  const request = create(RankRequestSchema, {
    candidates: [{ id, retrievalScore: 0.1, position: 0n, createdAt: { seconds: 1780315200n, nanos: 250_000_000 } }],
  });
  const response = create(RankResponseSchema, { receipt: { schema: RECEIPT_SCHEMA_V2 } });
  const line = receiptCanonical(request, response).split("\n").find((l) => l.startsWith("candidate "));
  const want = '"a\\"b\\\\c\\n\\t\\b\\f\\r\\u0001\\u001f\\u007f \\u00e9\\ud83d\\ude00\\u2028/<&>"';
  assert.equal(line?.split(" 3fb999999999999a ")[0], `candidate ${want} "" "" ${createHash("sha256").digest("hex")}`);
  assert.ok(line?.endsWith(` - 0 0 0 0 "" "" 0 "" 41da875d10100000 - - - - -`), line);
  assert.equal(verifyReceipt(undefined, response).ok, false);
});

test("the receipt fixtures (tests/vectors/receipts: v2 and v3, derived offline) verify, a changed score not", () => {
  const fixtures = readdirSync(`${dir}receipts/`).filter((name) => name.endsWith(".json"));
  const schemas = new Set<string>();
  for (const name of fixtures) {
    const fx = JSON.parse(readFileSync(`${dir}receipts/${name}`, "utf8")) as {
      request: JsonValue;
      response: JsonValue;
      lines: string[];
    };
    const request = fromJson(RankRequestSchema, fx.request);
    const response = fromJson(RankResponseSchema, fx.response);
    schemas.add(response.receipt?.schema ?? "");
    assert.equal(receiptCanonical(request, response), fx.lines.map((l) => l + "\n").join(""), name);
    const check = verifyReceipt(request, response);
    assert.ok(check.ok, `${name}: ${JSON.stringify(check)}`);
    const changed = clone(RankResponseSchema, response);
    const first = changed.selected[0];
    assert.ok(first, name);
    const view = new DataView(new ArrayBuffer(8));
    view.setFloat64(0, first.score);
    view.setBigUint64(0, view.getBigUint64(0) - 1n); // one ulp closer to 0 (scores are positive)
    first.score = view.getFloat64(0);
    assert.equal(verifyReceipt(request, changed).ok, false, name);
  }
  assert.deepEqual([...schemas].sort(), [RECEIPT_SCHEMA_V2, RECEIPT_SCHEMA]);
});

test("packEmbeddings checks shapes", () => {
  assert.throws(() => packEmbeddings([[1, 2], [3]]), RangeError);
  assert.throws(() => packEmbeddings([]), RangeError);
  assert.throws(() => packEmbeddings(new Float32Array(5), 2), RangeError);
  const { embeddingsF32, embeddingDim } = packEmbeddings([[1, -2], [0.5, 0]]);
  assert.deepEqual(Array.from(embeddingsF32), [0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0, 0, 0, 0, 0x3f, 0, 0, 0, 0]);
  assert.equal(embeddingDim, 2);
});

describe("conformance vectors", { skip: addr ? false : "MEMRANK_ADDR is not set" }, () => {
  const client = new MemrankClient(addr ?? "", { timeoutMs: 10_000 });
  const digests: Record<string, Record<string, string>> = {};
  after(() => {
    client.close();
    if (digestsDir) writeFileSync(`${digestsDir}/typescript.json`, JSON.stringify(digests, null, 2));
  });

  for (const v of vectors) {
    test(v.name, async () => {
      const request = fromJson(RankRequestSchema, v.request);
      const sums: Record<string, string> = { request: digest(RankRequestSchema, request) };
      digests[v.name] = sums;
      if (v.expect_error) {
        const want = v.expect_error;
        await assert.rejects(client.rank(request), (err: unknown) => {
          assert.ok(err instanceof MemrankError, `not a MemrankError: ${String(err)}`);
          assert.equal(err.code, status[want.code as keyof typeof status]);
          assert.equal(err.codeName, want.code);
          assert.ok(err.fields.includes(want.field), `field ${want.field} not in ${JSON.stringify(err.fields)}`);
          return true;
        });
        return;
      }
      const want = v.expect!;
      const resp = await client.rank(request);
      sums["response"] = digest(RankResponseSchema, resp);
      assert.deepEqual(resp.selected.map((m) => m.id), want.selected_ids);
      assert.deepEqual(Object.fromEntries(resp.selected.map((m) => [m.id, m.rank])), want.ranks);
      resp.selected.forEach((m, i) => {
        assert.equal(m.position, i, `${m.id}: position`);
        const exp = want.final_scores[m.id];
        const got = m.breakdown?.finalScore ?? Number.NaN;
        assert.ok(exp !== undefined && Math.abs(got - exp) <= 1e-9, `${m.id}: final_score want ${exp}, got ${got}`);
      });
      assert.deepEqual(Object.fromEntries(resp.dropped.map((d) => [d.id, dropReasonName(d.reason)])), want.dropped);
      assert.equal(resp.selected.length + resp.dropped.length, request.candidates.length);
      checkExtras(want, resp);
      checkReceipt(request, resp);
    });
  }
});
