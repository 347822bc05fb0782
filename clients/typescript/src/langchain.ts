// LangChain.js: memrank as a document compressor (`memrank-sidecar/langchain`; needs @langchain/core).
//
//   import { ContextualCompressionRetriever } from "@langchain/classic/retrievers/contextual_compression";
//   import { MemrankCompressor } from "memrank-sidecar/langchain";
//
//   const retriever = new ContextualCompressionRetriever({
//     baseCompressor: new MemrankCompressor({ target: "localhost:50051", topN: 5 }),
//     baseRetriever: vectorStore.asRetriever(50),
//   });
//   const docs = await retriever.invoke("what did Caroline decide about the trip?");
//
// The mapping of documents to candidates is the Python adapters' (memrank/integrations/mapping.py and the
// README's "The mapping"): the same metadata keys, the same score normalisation, the same errors. Only the
// option names are camelCase (keys.createdAt reads metadata["created_at"] by default). The selected documents
// come back in placement order, copies carrying their explanation under metadata["memrank"], whose fields
// are the Python adapters' (snake_case: retrieval_score, combined_score, signals, ...).
import { Metadata } from "@grpc/grpc-js";
import type { Callbacks } from "@langchain/core/callbacks/manager";
import { Document, type DocumentInterface } from "@langchain/core/documents";
import { BaseDocumentCompressor } from "@langchain/core/retrievers/document_compressors";
import { MemrankClient, type CallOptions, type ClientOptions } from "./client.js";
import { columnar, inCandidateWords } from "./columns.js";
import { MemrankError } from "./errors.js";
import type { RankRequest, RankResponse } from "./gen/memrank/v1/ranking_pb.js";
import {
  buildRankRequest,
  checkTopN,
  keyName,
  list,
  metadataKeys,
  nameDocuments,
  repr,
  SCORE_MODES,
  selections,
  type Item,
  type MappingOptions,
  type MetadataKeys,
  type RankRequestInit,
  type ScoreMode,
} from "./mapping.js";

// The mapping's public names, as `memrank-sidecar/langchain` has always exported them.
export {
  buildRankRequest,
  DEFAULT_KEYS,
  documentId,
  explanation,
  MappingError,
  metadataKeys,
  retrievalScores,
  SCORE_MODES,
  selections,
  type Item,
  type KeyField,
  type MappingOptions,
  type MemrankExplanation,
  type MetadataKeys,
  type RankRequestInit,
  type ScoreMode,
} from "./mapping.js";

/** Options of a MemrankCompressor: give `target` or `client`. */
export interface MemrankCompressorOptions {
  /** The sidecar's "host:port"; the compressor opens (and close() closes) its own client. */
  target?: string;
  /** Options of the client opened for target (credentials for TLS, retries, ...). */
  clientOptions?: ClientOptions;
  /** A client to use instead (left open by close()). */
  client?: MemrankClient;
  /** Bearer token, sent as "authorization: Bearer <token>" on every call. */
  token?: string;
  /** Deadline of each call in milliseconds (default: the client's, 5000). */
  timeoutMs?: number;
  /** Caps the selection (budget.maxItems); unset: memrank's selection alone decides. */
  topN?: number;
  profile?: string;
  /** How the retriever's score (metadata[keys.score]) becomes retrieval_score. Default "auto". */
  scores?: ScoreMode;
  /** Overrides of the metadata keys, e.g. { createdAt: "timestamp", thread: "session_id", importance: null }. */
  keys?: Partial<MetadataKeys>;
  /** Further RankRequest fields, e.g. { placement: Placement.EDGES, budget: { maxTokens: 2000 } }. */
  request?: RankRequestInit;
}

/** Ranks, deduplicates and budgets retrieved documents through a memrank sidecar. */
export class MemrankCompressor extends BaseDocumentCompressor {
  readonly keys: MetadataKeys;
  readonly topN: number | undefined;
  readonly profile: string | undefined;
  readonly scores: ScoreMode;
  readonly request: RankRequestInit;
  readonly #client: MemrankClient;
  readonly #owned: boolean;
  readonly #callOptions: CallOptions;
  readonly #token: string | undefined;

  constructor(options: MemrankCompressorOptions) {
    super();
    if (!options.target && !options.client) throw new TypeError("memrank needs a target ('host:port') or a client");
    if (options.topN !== undefined) checkTopN(options.topN);
    const scores = options.scores ?? "auto";
    if (!SCORE_MODES.includes(scores)) throw new RangeError(`scores must be one of ${list(SCORE_MODES)}, got ${repr(scores)}`);
    this.keys = metadataKeys(options.keys);
    this.topN = options.topN;
    this.profile = options.profile;
    this.scores = scores;
    this.request = options.request ?? {};
    this.#owned = !options.client;
    this.#client = options.client ?? new MemrankClient(options.target ?? "",
      { ...options.clientOptions, ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}) });
    this.#callOptions = options.client && options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {};
    this.#token = options.token;
    buildRankRequest("", [], this.#mapping()); // refuse a bad `request` now, not at the first call
  }

  #mapping(): MappingOptions {
    const key = this.keys.score;
    return {
      keys: this.keys, scores: this.scores, topN: this.topN, profile: this.profile, request: this.request,
      scoreField: key === null ? "score" : keyName(key),
    };
  }

  /** The RankRequest compressDocuments sends for these documents. */
  buildRequest(documents: readonly DocumentInterface[], query: string): RankRequest {
    const key = this.keys.score;
    const items = documents.map((d): Item => ({
      content: d.pageContent, metadata: d.metadata ?? {}, id: d.id,
      score: key === null ? undefined : d.metadata?.[key],
    }));
    return buildRankRequest(query, items, this.#mapping());
  }

  /** The documents memrank selects for `query`, in placement order, with metadata[keys.output] added. */
  override async compressDocuments(documents: DocumentInterface[], query: string,
    _callbacks?: Callbacks): Promise<DocumentInterface[]> {
    if (!documents.length) return [];
    const request = this.buildRequest(documents, query);
    const options: CallOptions = { ...this.#callOptions };
    if (this.#token) {
      options.metadata = new Metadata();
      options.metadata.set("authorization", `Bearer ${this.#token}`);
    }
    // Sent as columns (the server answers both forms alike); errors in the candidates' words, naming documents.
    const sent = columnar(request);
    let response: RankResponse;
    try {
      response = await this.#client.rank(sent, options);
    } catch (err) {
      if (!(err instanceof MemrankError)) throw err;
      throw nameDocuments(sent === request ? err : err.renamed(inCandidateWords), request);
    }
    return selections(request, response).map(({ index, explanation: info }) => {
      const d = documents[index] as DocumentInterface;
      return new Document({ pageContent: d.pageContent, metadata: { ...d.metadata, [this.keys.output]: info }, id: d.id });
    });
  }

  /** Closes the client opened for `target` (a given client is left open). */
  close(): void {
    if (this.#owned) this.#client.close();
  }
}
