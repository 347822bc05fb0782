// Times Rank end to end through the TypeScript client as its users call it, for a harness that alternates it
// with other rankers (bench/). It reads commands from stdin, one a line, and answers each with one line on
// stdout:
//
//   load PATH   read a JSON workload into the client's own types (Candidate messages from candidate(),
//               number[][] rows): "ok"
//   rank        build the request from them through the public API (a plain object, rows by packEmbeddings),
//               call rank(), check the selection is not empty: the nanoseconds all of it took
//               (process.hrtime.bigint)
//   quit        exit
//
// A command that fails answers "error: " and why, and the program goes on. The workload file:
//
//   {"query": str, "profile": str, "referenceTime": RFC 3339, "budget": {"maxTokens": int, "maxItems": int},
//    "candidates": [{"id", "layer", "kind", "content", "retrievalScore", "accessCount", "source": "SOURCE_CHAT",
//                    "safety": "SAFETY_STATUS_...", "importance"?, "createdAt"?, "lastAccessedAt"?}],
//    "embeddings": [[float, ...], ...]}
//
// Usage: node dist/bench/e2e.js [--per-candidate] 127.0.0.1:50051
//   (--per-candidate: the request as a RankRequest message, which rank() sends as it is, to compare)
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { create } from "@bufbuild/protobuf";
import {
  candidate,
  MemrankClient,
  packEmbeddings,
  RankRequestSchema,
  SafetyStatusSchema,
  SourceSchema,
  timestamp,
  type Candidate,
} from "../src/index.js";

interface FileCandidate {
  id: string;
  layer: string;
  kind: string;
  content: string;
  retrievalScore: number;
  accessCount: number;
  source: string;
  safety: string;
  importance?: number;
  createdAt?: string;
  lastAccessedAt?: string;
}

interface WorkloadFile {
  query: string;
  profile: string;
  referenceTime: string;
  budget: { maxTokens: number; maxItems: number };
  candidates: FileCandidate[];
  embeddings?: number[][];
}

/** What a program ranking its memories holds: the client's candidates and its embedding rows. */
interface Workload {
  query: string;
  profile: string;
  at: Date;
  budget: { maxTokens: number; maxItems: number };
  candidates: Candidate[];
  embeddings: number[][];
}

function enumNumber(schema: typeof SourceSchema | typeof SafetyStatusSchema, name: string, field: string): number {
  const value = schema.values.find((v) => v.name === name);
  if (value === undefined) throw new Error(`${field}: unknown value ${JSON.stringify(name)}`);
  return value.number;
}

function date(text: string, field: string): Date {
  const d = new Date(text);
  if (Number.isNaN(d.getTime())) throw new Error(`${field}: not an RFC 3339 time: ${JSON.stringify(text)}`);
  return d;
}

/** Reads a workload file into the client's types, as a program would hold its memories. */
function load(path: string): Workload {
  const f = JSON.parse(readFileSync(path, "utf8")) as WorkloadFile;
  const candidates = f.candidates.map((c, i) => {
    const at = `candidates[${i}]`;
    return candidate(c.id, c.content, {
      layer: c.layer, kind: c.kind, retrievalScore: c.retrievalScore, accessCount: c.accessCount,
      source: enumNumber(SourceSchema, c.source, `${at}.source`),
      safety: enumNumber(SafetyStatusSchema, c.safety, `${at}.safety`),
      ...(c.importance !== undefined ? { importance: c.importance } : {}),
      ...(c.createdAt !== undefined ? { createdAt: date(c.createdAt, `${at}.createdAt`) } : {}),
      ...(c.lastAccessedAt !== undefined ? { lastAccessedAt: date(c.lastAccessedAt, `${at}.lastAccessedAt`) } : {}),
    });
  });
  return { query: f.query, profile: f.profile, at: date(f.referenceTime, "referenceTime"), budget: f.budget,
    candidates, embeddings: f.embeddings ?? [] };
}

/** One call as a user makes it: the request from the held values, the rows packed, rank(); its nanoseconds. */
async function rank(client: MemrankClient, w: Workload, perCandidate: boolean): Promise<bigint> {
  const start = process.hrtime.bigint();
  const request = {
    query: w.query, profile: w.profile, referenceTime: timestamp(w.at), budget: w.budget, candidates: w.candidates,
    ...(w.embeddings.length ? packEmbeddings(w.embeddings) : {}),
  };
  const resp = await client.rank(perCandidate ? create(RankRequestSchema, request) : request);
  if (resp.selected.length === 0) throw new Error("empty selection");
  return process.hrtime.bigint() - start;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const perCandidate = args[0] === "--per-candidate";
  const address = perCandidate ? args[1] : args[0];
  if (!address) {
    process.stderr.write("usage: node dist/bench/e2e.js [--per-candidate] HOST:PORT\n");
    process.exit(2);
  }
  const client = new MemrankClient(address, { timeoutMs: 60_000 });
  let w: Workload | undefined;
  for await (const line of createInterface({ input: process.stdin })) {
    const [cmd, ...rest] = line.trim().split(" ");
    let reply: string;
    try {
      if (cmd === "quit") break;
      if (cmd === "load") {
        w = load(rest.join(" "));
        reply = "ok";
      } else if (cmd === "rank") {
        if (w === undefined) throw new Error("no workload loaded (load PATH first)");
        reply = String(await rank(client, w, perCandidate));
      } else throw new Error(`unknown command ${JSON.stringify(cmd)} (load PATH, rank, quit)`);
    } catch (err) {
      reply = `error: ${err instanceof Error ? err.message : String(err)}`.replace(/\n/g, " ");
    }
    process.stdout.write(reply + "\n");
  }
  client.close();
  process.exit(0); // stdin may still be open (the harness keeps its end): quit means now
}

await main();
