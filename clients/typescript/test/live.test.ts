// ListProfiles and ScoreAdmission against the live server at MEMRANK_ADDR.
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { AdmissionDecision, candidate, MemrankClient, MemrankError, status, timestamp } from "../src/index.js";

const addr = process.env["MEMRANK_ADDR"];

describe("live RPCs", { skip: addr ? false : "MEMRANK_ADDR is not set" }, () => {
  const client = new MemrankClient(addr ?? "");
  after(() => client.close());

  test("listProfiles names the compatibility profiles", async () => {
    const resp = await client.listProfiles();
    const compat = new Map(resp.profiles.map((p) => [p.name, p.compatibility]));
    assert.equal(compat.get("agent-observer"), true);
    assert.equal(compat.get("generative-agents"), true);
  });

  test("recordFeedback labels a logged decision, and names a bad grade", async () => {
    const resp = await client.rank({
      requestId: "typescript-feedback",
      query: "where does alex live",
      logDecision: true,
      candidates: [
        candidate("m1", "Alex lives in Berlin.", { retrievalScore: 0.9 }),
        candidate("m2", "Alex likes tea.", { retrievalScore: 0.4 }),
      ],
    });
    assert.equal(resp.decisionLogged, true, "is the server's decision log on?");
    const fb = await client.recordFeedback(resp, { m2: 0, m1: 3 }, { labeler: "typescript" });
    assert.match(fb.feedbackId, /^[0-9a-f]{64}$/);
    assert.equal(fb.labelCount, 2);
    await assert.rejects(
      client.recordFeedback(resp, { m1: 9 }),
      (err: unknown) => err instanceof MemrankError && err.code === status.INVALID_ARGUMENT
        && err.fields.includes("labels[0].relevance"),
    );
  });

  test("scoreAdmission decides, and refuses a request without a candidate", async () => {
    const at = new Date("2026-06-01T12:00:00Z");
    const resp = await client.scoreAdmission({
      referenceTime: timestamp(at),
      candidate: candidate("a1", "The user is allergic to peanuts.", {
        kind: "fact",
        importance: 0.9,
        createdAt: new Date(at.getTime() - 3_600_000),
      }),
    });
    assert.notEqual(resp.decision, AdmissionDecision.UNSPECIFIED);
    assert.ok(resp.score >= 0 && resp.score <= 1);
    await assert.rejects(
      client.scoreAdmission({}),
      (err: unknown) => err instanceof MemrankError && err.code === status.INVALID_ARGUMENT,
    );
  });
});
