// Replays every tests/vectors/*.json conformance case against the live server at MEMRANK_ADDR.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { fromJson, toBinary, type DescMessage, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import {
  dropReasonName,
  MemrankClient,
  MemrankError,
  packEmbeddings,
  RankRequestSchema,
  RankResponseSchema,
  status,
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
  };
  expect_error?: { code: string; field: string };
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
    });
  }
});
