// LangChain.js: memrank as the document compressor of a ContextualCompressionRetriever, over a small in-memory
// store (synthetic embeddings: no model, no network), on a running sidecar (memrank serve):
//   node dist/example/langchain.js [host:port]    (default: $MEMRANK_ADDR, else 127.0.0.1:50051)
// Needs @langchain/core (the compressor's peer dependency) and @langchain/classic (the retriever and the store).
// In your code, import MemrankCompressor from "memrank-sidecar/langchain"; this file sits in the client's folder.
import { MemoryVectorStore } from "@langchain/classic/vectorstores/memory";
import { Document } from "@langchain/core/documents";
import { SyntheticEmbeddings } from "@langchain/core/utils/testing";

const target = process.argv[2] ?? process.env["MEMRANK_ADDR"] ?? "127.0.0.1:50051";
const TURNS = [ // one conversation: each turn with its thread, position and speaker (the context and speaker signals)
  ["t0", "Caroline", "I keep thinking about a trip this summer."],
  ["t1", "Melanie", "Where would you go? Lisbon or Porto?"],
  ["t2", "Caroline", "I decided on Lisbon, the trip is booked for July."],
  ["t3", "Melanie", "Lisbon in July will be hot, take a hat."],
  ["t4", "Caroline", "I painted a sunrise over the lake last weekend."],
  ["t5", "Melanie", "My kids love the pottery class on Tuesdays."],
] as const;
const vectorStore = await MemoryVectorStore.fromDocuments(
  TURNS.map(([id, who, text], position) =>
    new Document({ id, pageContent: `${who}: ${text}`, metadata: { thread: "s1", position, speaker: who } })),
  new SyntheticEmbeddings({ vectorSize: 32 }),
);

// --8<-- [start:memrank]
import { ContextualCompressionRetriever } from "@langchain/classic/retrievers/contextual_compression";
import { MemrankCompressor } from "../src/langchain.js"; // in your code: from "memrank-sidecar/langchain"

const memrank = new MemrankCompressor({ target, topN: 5 });
const retriever = new ContextualCompressionRetriever({ baseCompressor: memrank, baseRetriever: vectorStore.asRetriever(6) });
const docs = await retriever.invoke("what did Caroline decide about the trip?"); // docs[0].metadata.memrank.signals
memrank.close();
// --8<-- [end:memrank]

for (const d of docs) console.log(d.metadata["memrank"].rank, d.id, d.pageContent);
