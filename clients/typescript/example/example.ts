// Ranks three memories with the agent-observer profile on a running sidecar (memrank serve):
//   node dist/example/example.js [host:port]    (default: $MEMRANK_ADDR, else 127.0.0.1:50051)
import { candidate, dropReasonName, MemrankClient, MemrankError, Placement, timestamp } from "../src/index.js";

const target = process.argv[2] ?? process.env["MEMRANK_ADDR"] ?? "127.0.0.1:50051";
const client = new MemrankClient(target, { timeoutMs: 2000 });
try {
  const resp = await client.rank({
    query: "which database runs the ledger",
    referenceTime: timestamp(new Date()),
    profile: "agent-observer",
    placement: Placement.EDGES,
    candidates: [
      candidate("m1", "The ledger runs on Postgres 16", { kind: "fact", retrievalScore: 0.9 }),
      candidate("m2", "We chose Postgres for the ledger", { kind: "decision", retrievalScore: 0.4 }),
      candidate("m3", "User prefers short answers", { kind: "preference", retrievalScore: 0.2 }),
    ],
  });
  for (const m of resp.selected) {
    console.log(`position ${m.position} rank ${m.rank} ${m.id} final_score ${m.breakdown?.finalScore.toFixed(4)}`);
  }
  for (const d of resp.dropped) console.log(`dropped ${d.id}: ${dropReasonName(d.reason)}`);
} catch (err) {
  if (err instanceof MemrankError) {
    console.error(`rank failed: code=${err.codeName} fields=${err.fields.join(",")} reason=${err.reason}`);
    process.exitCode = 1;
  } else {
    throw err;
  }
} finally {
  client.close();
}
