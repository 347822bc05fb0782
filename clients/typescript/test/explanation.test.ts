// The LangChain.js adapter's answer against the vectors the Python adapters are checked with
// (tests/vectors/frameworks/explanation.json, read by tests/frameworks/test_explanation_vectors.py too): the
// selected documents in placement order, each with its explanation. No server: the responses are in the file.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { RankRequestSchema, RankResponseSchema } from "../src/index.js";
import { selections } from "../src/langchain.js";

interface Case {
  name: string;
  request: JsonValue;
  response: JsonValue;
  expect: { index: number; score: number; explanation: Record<string, unknown> }[];
}

const file = fileURLToPath(new URL("../../../../tests/vectors/frameworks/explanation.json", import.meta.url));
const cases = (JSON.parse(readFileSync(file, "utf8")) as { cases: Case[] }).cases;

test("the explanation vectors are present, with and without breakdowns", () => {
  const shapes = new Set(cases.flatMap((c) => c.expect.map((s) => "signals" in s.explanation)));
  assert.deepEqual([...shapes].sort(), [false, true]);
});

for (const c of cases) {
  test(`explanation vector ${c.name}`, () => {
    const request = fromJson(RankRequestSchema, c.request);
    const response = fromJson(RankResponseSchema, c.response);
    // JSON's view of the values (the explanation is plain data: what a caller would serialise).
    const got = JSON.parse(JSON.stringify(selections(request, response))) as unknown;
    assert.deepStrictEqual(got, c.expect);
  });
}
