// The wrapper against an in-process fake server: retries, deadlines and error decoding.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import {
  Metadata,
  Server,
  ServerCredentials,
  status,
  type sendUnaryData,
  type ServerUnaryCall,
  type UntypedServiceImplementation,
} from "@grpc/grpc-js";
import { BadRequestSchema, ErrorInfoSchema } from "../src/gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../src/gen/google/rpc/status_pb.js";
import { candidatesOf } from "../src/columns.js";
import {
  candidate,
  MemrankClient,
  MemrankError,
  RankRequestSchema,
  RankResponseSchema,
  RankedMemorySchema,
  serviceConfig,
  type RankRequest,
  type RankResponse,
  timestamp,
} from "../src/index.js";

type Behaviour = (req: RankRequest, call: ServerUnaryCall<RankRequest, unknown>) =>
  { code: status; details?: string; metadata?: Metadata; afterMs?: number } | "ok" | "hang";
let behaviour: Behaviour = () => "ok";
let calls = 0;
const server = new Server();
let addr = "";

const rank = (call: ServerUnaryCall<RankRequest, unknown>, callback: sendUnaryData<unknown>) => {
  calls++;
  const outcome = behaviour(call.request, call);
  if (outcome === "hang") return;
  if (outcome !== "ok") {
    const fail = () => callback({ code: outcome.code, details: outcome.details ?? "", metadata: outcome.metadata ?? new Metadata() });
    if (outcome.afterMs) setTimeout(fail, outcome.afterMs);
    else fail();
    return;
  }
  const selected = candidatesOf(call.request).map((c, i) => create(RankedMemorySchema, { id: c.id, rank: i + 1, position: i }));
  callback(null, create(RankResponseSchema, { requestId: call.request.requestId, selected }));
};

before(async () => {
  const impl: UntypedServiceImplementation = { Rank: rank };
  server.addService(
    {
      Rank: {
        path: "/memrank.v1.RankingService/Rank",
        requestStream: false,
        responseStream: false,
        requestSerialize: (m: RankRequest) => Buffer.from(toBinary(RankRequestSchema, m)),
        requestDeserialize: (b: Buffer) => fromBinary(RankRequestSchema, b),
        responseSerialize: (m: RankResponse) => Buffer.from(toBinary(RankResponseSchema, m)),
        responseDeserialize: (b: Buffer) => fromBinary(RankResponseSchema, b),
      },
    },
    impl,
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  addr = `127.0.0.1:${port}`;
});
after(() => server.forceShutdown());

test("the service config is clients/service_config.json, and says what the defaults are", () => {
  const shared = JSON.parse(readFileSync(new URL("../../../service_config.json", import.meta.url), "utf8"));
  assert.deepEqual(serviceConfig(), shared, "src/gen/service_config.ts is stale: run clients/gen.sh");
  const policy = serviceConfig().methodConfig[0]?.retryPolicy;
  assert.equal(policy?.maxAttempts, 4); // retries 3
  assert.equal(policy?.initialBackoff, "0.05s"); // backoffMs 50
  assert.deepEqual(policy?.retryableStatusCodes, ["UNAVAILABLE"]);
  assert.deepEqual(new MemrankClient("127.0.0.1:1").serviceConfig, shared);
});

test("retries and backoffMs map onto the service config", () => {
  assert.equal(serviceConfig({ retries: 0 }).methodConfig[0]?.retryPolicy, undefined);
  const long = serviceConfig({ retries: 10, backoffMs: 2000 }).methodConfig[0];
  assert.equal(long?.retryPolicy?.maxAttempts, 5);
  assert.equal(long?.waitForReady, true);
  assert.equal(long?.retryPolicy?.initialBackoff, "2s");
  assert.equal(long?.retryPolicy?.maxBackoff, "2s");
  const short = serviceConfig({ retries: 2, backoffMs: 10 }).methodConfig[0];
  assert.equal(short?.retryPolicy?.maxAttempts, 3);
  assert.equal(short?.waitForReady, undefined);
  assert.equal(short?.retryPolicy?.initialBackoff, "0.01s");
  assert.equal(short?.retryPolicy?.maxBackoff, "1s");
  assert.throws(() => serviceConfig({ retries: -1 }), RangeError);
});

// Every attempt answers UNAVAILABLE after 300 ms: five attempts would take at least 1.5 s, so a call
// ending before that was cut by its 1 s deadline, with a retry in it (margins wide enough for a loaded
// machine, where the first attempt also pays for the connection).
test("the deadline bounds every attempt", async () => {
  calls = 0;
  behaviour = () => ({ code: status.UNAVAILABLE, details: "draining", afterMs: 300 });
  const client = new MemrankClient(addr, { timeoutMs: 1000, retries: 4, backoffMs: 1 });
  const started = Date.now();
  await assert.rejects(client.rank({}), (err: unknown) =>
    err instanceof MemrankError && (err.code === status.DEADLINE_EXCEEDED || err.code === status.UNAVAILABLE));
  const took = Date.now() - started;
  assert.ok(took < 1500, `the call outlived its 1 s deadline: ${took} ms`);
  assert.ok(calls >= 2 && calls <= 4, `want 2 to 4 attempts within the deadline, the server saw ${calls}`);
  client.close();
});

test("a refused connection ends within the deadline", async () => {
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => resolve(p)); // nothing listens: every attempt is UNAVAILABLE
    });
  });
  for (const retries of [3, 10]) { // 10: waitForReady, so the deadline ends it
    const client = new MemrankClient(`127.0.0.1:${port}`, { timeoutMs: 500, retries });
    const started = Date.now();
    await assert.rejects(client.listProfiles(), (err: unknown) =>
      err instanceof MemrankError && (err.code === status.UNAVAILABLE || err.code === status.DEADLINE_EXCEEDED));
    const took = Date.now() - started;
    assert.ok(took < 1500, `retries ${retries}: the call outlived its 500 ms deadline: ${took} ms`);
    client.close();
  }
});

// The third attempt gets the answer: gRPC retried the two UNAVAILABLE ones.
test("retries UNAVAILABLE, then succeeds", async () => {
  calls = 0;
  behaviour = () => (calls <= 2 ? { code: status.UNAVAILABLE, details: "warming up" } : "ok");
  const client = new MemrankClient(addr, { backoffMs: 1 });
  const resp = await client.rank({ requestId: "r1", candidates: [candidate("a", "x")] });
  assert.equal(resp.requestId, "r1");
  assert.deepEqual(resp.selected.map((m) => m.id), ["a"]);
  assert.equal(calls, 3);
  client.close();
});

test("gives up after the configured retries", async () => {
  calls = 0;
  behaviour = () => ({ code: status.UNAVAILABLE, details: "down" });
  const client = new MemrankClient(addr, { backoffMs: 1, retries: 1 });
  await assert.rejects(client.rank({}), (err: unknown) => err instanceof MemrankError && err.code === status.UNAVAILABLE);
  assert.equal(calls, 2);
  client.close();
});

test("decodes BadRequest and ErrorInfo from grpc-status-details-bin, without retrying", async () => {
  calls = 0;
  behaviour = () => {
    const details = create(StatusSchema, {
      code: status.INVALID_ARGUMENT,
      message: "bad candidate",
      details: [
        anyPack(BadRequestSchema, create(BadRequestSchema, { fieldViolations: [{ field: "candidates[1].id", description: "duplicate id" }] })),
        anyPack(ErrorInfoSchema, create(ErrorInfoSchema, { reason: "INVALID_CANDIDATE", domain: "memrank" })),
      ],
    });
    const metadata = new Metadata();
    metadata.set("grpc-status-details-bin", Buffer.from(toBinary(StatusSchema, details)));
    return { code: status.INVALID_ARGUMENT, details: "bad candidate", metadata };
  };
  const client = new MemrankClient(addr);
  await assert.rejects(client.rank({}), (err: unknown) => {
    assert.ok(err instanceof MemrankError);
    assert.equal(err.codeName, "INVALID_ARGUMENT");
    assert.deepEqual(err.fields, ["candidates[1].id"]);
    assert.equal(err.violations[0]?.description, "duplicate id");
    assert.equal(err.reason, "INVALID_CANDIDATE");
    assert.match(err.message, /INVALID_ARGUMENT: bad candidate \[candidates\[1\]\.id: duplicate id\]/);
    return true;
  });
  assert.equal(calls, 1);
  client.close();
});

test("applies the default deadline", async () => {
  let sawDeadline = false;
  behaviour = (_req, call) => {
    sawDeadline = call.getDeadline() !== Infinity;
    return "hang";
  };
  const client = new MemrankClient(addr, { timeoutMs: 50 });
  await assert.rejects(client.rank({}), (err: unknown) => err instanceof MemrankError && err.code === status.DEADLINE_EXCEEDED);
  assert.ok(sawDeadline);
  client.close();
});

test("candidate() converts dates and keeps an explicit zero importance", () => {
  const at = new Date("2026-06-01T12:00:00Z");
  const c = candidate("m1", "text", { kind: "fact", importance: 0, eventTime: at, retrievalScore: 0.5 });
  assert.equal(c.importance, 0);
  assert.equal(c.eventTime?.seconds, timestamp(at).seconds);
  assert.equal(c.createdAt, undefined);
});
