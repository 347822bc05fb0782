// The one mapping from a framework's documents to memrank candidates (the TypeScript twin of
// memrank/integrations/mapping.py and the README's "The mapping"): the same metadata keys, the same score
// normalisation, the same errors. Only the option names are camelCase (keys.createdAt reads
// metadata["created_at"] by default). It imports no framework: langchain.ts (and any other adapter) builds on it.
import { clone, create, type MessageInitShape } from "@bufbuild/protobuf";
import { MemrankError } from "./errors.js";
import {
  BudgetSchema,
  CandidateSchema,
  RankRequestSchema,
  SafetyStatusSchema,
  SourceSchema,
  type Candidate,
  type RankedMemory,
  type RankRequest,
  type RankResponse,
} from "./gen/memrank/v1/ranking_pb.js";
import { enumNames, enumNumber, integer, real, toEmbedding, toTimestamp } from "./values.js";

/** How a retriever's score becomes retrieval_score (see retrievalScores). */
export type ScoreMode = "auto" | "unit" | "minmax" | "order";
export const SCORE_MODES: readonly ScoreMode[] = ["auto", "unit", "minmax", "order"];

const MAX_POSITION = 2 ** 53;
const MAX_UINT32 = 2 ** 32 - 1;
const TIME_FIELDS = ["createdAt", "lastAccessedAt", "eventTime", "ingestedAt", "validFrom", "validTo"] as const;
const STRING_FIELDS = ["kind", "layer", "speaker", "provenance"] as const;
const COUNT_FIELDS = ["tokenCount", "accessCount"] as const;

/** Where each candidate field is read from in a document's metadata (null: not read). */
export interface MetadataKeys {
  id: string | null;
  /** The retriever's score (a LangChain Document has no score of its own). */
  score: string | null;
  createdAt: string | null;
  lastAccessedAt: string | null;
  eventTime: string | null;
  ingestedAt: string | null;
  validFrom: string | null;
  validTo: string | null;
  importance: string | null;
  accessCount: string | null;
  kind: string | null;
  /** Not "source": LangChain's loaders put a file path or URL there. */
  source: string | null;
  provenance: string | null;
  safety: string | null;
  layer: string | null;
  tokenCount: string | null;
  thread: string | null;
  position: string | null;
  speaker: string | null;
  embedding: string | null;
  /** Fields (by their names above) a document must carry: absent is a MappingError, not a default. */
  required: readonly KeyField[];
  /** Where the selected documents get their explanation. */
  output: string;
}

/** A candidate field read from metadata: the MetadataKeys entries but required and output. */
export type KeyField = Exclude<keyof MetadataKeys, "required" | "output">;

/** The default keys: the Python adapters' (snake_case metadata keys). */
export const DEFAULT_KEYS: Readonly<MetadataKeys> = Object.freeze({
  id: "id",
  score: "score",
  createdAt: "created_at",
  lastAccessedAt: "last_accessed_at",
  eventTime: "event_time",
  ingestedAt: "ingested_at",
  validFrom: "valid_from",
  validTo: "valid_to",
  importance: "importance",
  accessCount: "access_count",
  kind: "kind",
  source: "memory_source",
  provenance: "provenance",
  safety: "safety",
  layer: "layer",
  tokenCount: "token_count",
  thread: "thread",
  position: "position",
  speaker: "speaker",
  embedding: "embedding",
  required: [],
  output: "memrank",
});

const KEY_FIELDS = Object.keys(DEFAULT_KEYS).filter((k) => k !== "required" && k !== "output") as KeyField[];

/** The keys from overrides of the defaults (checked: unknown names and bad required lists throw). */
export function metadataKeys(overrides: Partial<MetadataKeys> = {}): MetadataKeys {
  const known = Object.keys(DEFAULT_KEYS);
  const unknown = Object.keys(overrides).filter((k) => !known.includes(k)).sort();
  if (unknown.length) throw new TypeError(`keys has unknown fields ${list(unknown)}; known: ${list(known)}`);
  const keys: MetadataKeys = { ...DEFAULT_KEYS, ...overrides, required: [...(overrides.required ?? [])] };
  for (const f of KEY_FIELDS) {
    if (keys[f] === undefined) keys[f] = DEFAULT_KEYS[f];
    if (keys[f] !== null && typeof keys[f] !== "string") {
      throw new TypeError(`keys.${f} must be a string or null, got ${repr(keys[f])}`);
    }
  }
  const badRequired = keys.required.filter((r) => !(KEY_FIELDS as string[]).includes(r)).sort();
  if (badRequired.length) {
    throw new RangeError(`keys.required names unknown fields ${list(badRequired)}; known: ${list([...KEY_FIELDS].sort())}`);
  }
  const off = keys.required.filter((r) => keys[r] === null);
  if (off.length) throw new RangeError(`keys.required names fields whose key is null: ${list(off)}`);
  if (typeof keys.output !== "string" || !keys.output) throw new RangeError("keys.output must be a non-empty key");
  return keys;
}

/** A document whose metadata cannot be sent: names the document and the key. */
export class MappingError extends Error {
  override readonly name = "MappingError";

  constructor(
    /** E.g. "document 3 (id 't3')". */
    readonly document: string,
    /** E.g. "metadata['importance']". */
    readonly key: string,
    readonly problem: string,
  ) {
    super(`${document}: ${key}: ${problem}`);
  }
}

/** One framework document, as the adapter found it (values unchecked). */
export interface Item {
  content: string | null | undefined;
  metadata: Record<string, unknown>;
  /** The framework's own id, when it has one. */
  id?: string | undefined;
  /** The retriever's score. */
  score?: unknown;
}

/** RankRequest fields the adapter adds to (not query, candidates or packed embeddings). */
export type RankRequestInit = MessageInitShape<typeof RankRequestSchema>;

/** Options of buildRankRequest. */
export interface MappingOptions {
  keys?: MetadataKeys;
  scores?: ScoreMode;
  /** How errors name the score, e.g. "metadata['score']". */
  scoreField?: string;
  /** budget.maxItems. */
  topN?: number;
  profile?: string;
  /** Further RankRequest fields (an init object or a message, e.g. from fromJson(RankRequestSchema, json)). */
  request?: RankRequestInit;
}

/** A string the way Python's repr shows one (the messages match the Python adapters'); other values as JSON. */
export function repr(value: unknown): string {
  if (typeof value === "string") {
    const quote = value.includes("'") && !value.includes('"') ? '"' : "'";
    const body = value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\t/g, "\\t");
    return quote + (quote === "'" ? body.replace(/'/g, "\\'") : body) + quote;
  }
  if (typeof value === "number" || typeof value === "boolean" || value === null || value === undefined) {
    return String(value);
  }
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Date) return `Date(${Number.isNaN(value.getTime()) ? "Invalid Date" : value.toISOString()})`;
  try {
    const json = JSON.stringify(value);
    if (json !== undefined) return json.length > 80 ? `${json.slice(0, 77)}...` : json;
  } catch {
    // circular or with a bigint: fall through
  }
  return typeName(value);
}

export function list(names: readonly string[]): string {
  return `[${names.map(repr).join(", ")}]`;
}

function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "object") return (value as object).constructor?.name ?? "object";
  return typeof value;
}

function docName(i: number, ident: string | null): string {
  return `document ${i}` + (ident ? ` (id ${repr(ident)})` : "");
}

export function keyName(key: string): string {
  return `metadata[${repr(key)}]`;
}

export function documentId(i: number, item: Item, keys: MetadataKeys): string {
  if (item.id) return String(item.id);
  const value = keys.id === null ? undefined : item.metadata[keys.id];
  if (keys.id !== null && value !== undefined && value !== null) {
    const ok = (typeof value === "string" && value !== "") || (typeof value === "number" && Number.isInteger(value))
      || typeof value === "bigint";
    if (!ok) {
      throw new MappingError(docName(i, null), keyName(keys.id),
        `an id must be a non-empty string or an integer, got ${repr(value)}`);
    }
    return String(value);
  }
  return `#${i}`;
}

function absent(value: unknown): boolean {
  return value === undefined || value === null;
}

/**
 * Each document's retrieval_score, and whether the scores are relative to the batch.
 *
 * - "unit": the retriever's scores as they are; each must be a number in [0, 1].
 * - "minmax": (s - min) / (max - min) within the batch (every score 1.0 when all are equal).
 * - "order": scores ignored; the i-th of n documents (0-based) gets (n - i) / n.
 * - "auto" (the default): "order" when no document carries a score; otherwise every document must carry
 *   one, and "unit" applies when all lie in [0, 1], "minmax" when any does not (BM25 and other unbounded scores).
 *
 * Relative scores ("minmax", "order") make the request's relevanceThreshold 0 unless the caller sets one.
 */
export function retrievalScores(items: readonly Item[], mode: ScoreMode, scoreField: string,
  names: readonly string[]): { scores: number[]; relative: boolean } {
  if (!SCORE_MODES.includes(mode)) throw new RangeError(`scores must be one of ${list(SCORE_MODES)}, got ${repr(mode)}`);
  const n = items.length;
  if (mode === "auto" && items.every((it) => absent(it.score))) mode = "order";
  if (mode === "order") return { scores: items.map((_, i) => (n - i) / n), relative: true };
  const values = items.map((it, i) => {
    if (absent(it.score)) {
      throw new MappingError(names[i] ?? docName(i, null), scoreField,
        `no score, while scores=${repr(mode)} needs one on every document` + (mode === "auto" ? " (the others carry one)" : ""));
    }
    const value = real(it.score);
    if (value === null) {
      throw new MappingError(names[i] ?? docName(i, null), scoreField, `a score must be a finite number, got ${repr(it.score)}`);
    }
    if (mode === "unit" && !(value >= 0 && value <= 1)) {
      throw new MappingError(names[i] ?? docName(i, null), scoreField,
        `${value} is outside [0, 1] (scores='unit'); use scores='minmax' for unbounded scores`);
    }
    return value;
  });
  if (mode === "auto") mode = values.every((v) => v >= 0 && v <= 1) ? "unit" : "minmax";
  if (mode === "unit") return { scores: values, relative: false };
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  return { scores: hi === lo ? values.map(() => 1) : values.map((v) => (v - lo) / (hi - lo)), relative: true };
}

function toCandidate(name: string, ident: string, item: Item, keys: MetadataKeys, score: number): Candidate {
  const c = create(CandidateSchema, { id: ident, content: item.content ?? "", retrievalScore: score });
  const meta = item.metadata;
  const read = (field: KeyField): [string, unknown] | null => {
    const key = keys[field];
    if (key === null || absent(meta[key])) {
      if (keys.required.includes(field)) {
        throw new MappingError(name, keyName(key ?? field), `absent, and keys.required lists ${repr(field)}`);
      }
      return null;
    }
    return [key, meta[key]];
  };
  const bad = ([key, value]: [string, unknown], want: string) => new MappingError(name, keyName(key), `${want}, got ${repr(value)}`);

  for (const field of TIME_FIELDS) {
    const got = read(field);
    if (got) {
      const ts = toTimestamp(got[1]);
      if (!ts) throw bad(got, "a timestamp must be a Date, epoch seconds or an ISO-8601 string");
      c[field] = ts;
    }
  }
  let got = read("importance");
  if (got) {
    const value = real(got[1]);
    if (value === null || !(value >= 0 && value <= 1)) throw bad(got, "importance must be a number in [0, 1]");
    c.importance = value;
  }
  for (const field of STRING_FIELDS) {
    const g = read(field);
    if (g) {
      if (typeof g[1] !== "string") throw bad(g, `${field} must be a string`);
      c[field] = g[1];
    }
  }
  if ((got = read("thread"))) {
    const v = got[1];
    if (!(typeof v === "string" || (typeof v === "number" && Number.isInteger(v)) || typeof v === "bigint")) {
      throw bad(got, "thread must be a string or an integer");
    }
    c.thread = String(v);
  }
  if ((got = read("position"))) {
    const n = integer(got[1]);
    if (n === null || n < 0 || n > MAX_POSITION) throw bad(got, "position must be an integer in [0, 2^53]");
    c.position = BigInt(n);
  }
  for (const field of COUNT_FIELDS) {
    const g = read(field);
    if (g) {
      const n = integer(g[1]);
      const snake = field === "tokenCount" ? "token_count" : "access_count";
      if (n === null || n < 0 || n > MAX_UINT32) throw bad(g, `${snake} must be an integer in [0, 2^32 - 1]`);
      c[field] = n;
    }
  }
  if ((got = read("source"))) {
    const n = enumNumber(got[1], SourceSchema, "SOURCE_");
    if (n === null) throw bad(got, `source must be one of ${enumNames(SourceSchema, "SOURCE_")} (or its number)`);
    c.source = n;
  }
  if ((got = read("safety"))) {
    const n = enumNumber(got[1], SafetyStatusSchema, "SAFETY_STATUS_");
    if (n === null) {
      throw bad(got, `safety must be one of ${enumNames(SafetyStatusSchema, "SAFETY_STATUS_")} (or its number)`);
    }
    c.safety = n;
  }
  if ((got = read("embedding"))) {
    const vector = toEmbedding(got[1]);
    if (!vector) {
      throw new MappingError(name, keyName(got[0]),
        `an embedding must be a non-empty sequence of finite numbers, got ${typeName(got[1])}`);
    }
    c.embedding = vector;
  }
  return c;
}

const FILLED = ["query", "candidates", "embeddingsF32"] as const;
const REQUEST_FIELDS = new Set(RankRequestSchema.fields.map((f) => f.localName));

/**
 * The RankRequest for a query and a framework's documents: the Python adapters' build_request.
 * `request` may not set query, candidates or embeddingsF32 (the adapter fills them from the documents).
 */
export function buildRankRequest(query: string | null | undefined, items: readonly Item[],
  options: MappingOptions = {}): RankRequest {
  const keys = options.keys ?? metadataKeys();
  const extra = (options.request ?? {}) as Record<string, unknown>;
  const unknown = Object.keys(extra).filter((k) => !k.startsWith("$") && !REQUEST_FIELDS.has(k)).sort();
  if (unknown.length) throw new TypeError(`request is not a RankRequest: unknown fields ${list(unknown)}`);
  const clash = FILLED.filter((k) => {
    const v = extra[k];
    return v !== undefined && v !== null && v !== "" && !((Array.isArray(v) || v instanceof Uint8Array) && v.length === 0);
  });
  if (clash.length) throw new TypeError(`request may not set ${list(clash)}: the adapter fills them from the documents`);
  const req = clone(RankRequestSchema, create(RankRequestSchema, options.request ?? {}));
  if (query) req.query = query;
  if (options.profile) req.profile = options.profile;
  if (options.topN !== undefined) {
    checkTopN(options.topN);
    req.budget ??= create(BudgetSchema);
    req.budget.maxItems = options.topN;
  }
  const seen = new Map<string, number>();
  const idents = items.map((it, i) => {
    const ident = documentId(i, it, keys);
    const first = seen.get(ident);
    if (first !== undefined) {
      throw new MappingError(docName(i, ident), "id",
        `the same id as document ${first}: ids must be unique (deduplicate before ranking)`);
    }
    seen.set(ident, i);
    return ident;
  });
  const names = idents.map((ident, i) => docName(i, ident));
  const { scores, relative } = retrievalScores(items, options.scores ?? "auto",
    options.scoreField ?? "score", names);
  let firstDim: [number, number] | null = null; // (document, dimension) of the first embedding
  items.forEach((it, i) => {
    const c = toCandidate(names[i] ?? "", idents[i] ?? "", it, keys, scores[i] ?? 0);
    if (c.embedding.length) {
      if (firstDim === null) firstDim = [i, c.embedding.length];
      else if (c.embedding.length !== firstDim[1]) {
        throw new MappingError(names[i] ?? "", "embedding",
          `${c.embedding.length} dimensions, while ${names[firstDim[0]]} has ${firstDim[1]}: one dimension per batch`);
      }
    }
    req.candidates.push(c);
  });
  if (relative && req.relevanceThreshold === undefined) req.relevanceThreshold = 0;
  return req;
}

export function checkTopN(topN: unknown): void {
  if (typeof topN !== "number" || !Number.isInteger(topN) || topN < 1 || topN > MAX_UINT32) {
    throw new RangeError(`topN must be a positive integer, got ${repr(topN)}`);
  }
}

/** A selected memory's explanation (the Python adapters' fields, snake_case). */
export interface MemrankExplanation {
  id: string;
  rank: number;
  position: number;
  score: number;
  layer: string;
  profile: string;
  retrieval_score?: number;
  combined_score?: number;
  final_score?: number;
  quality_score?: number;
  blend_term?: number;
  marginal_gain?: number;
  token_count?: number;
  token_count_estimated?: boolean;
  reasons?: string[];
  signals?: Record<string, { raw: number; normalized: number; weight: number; contribution: number; reasons: string[] }>;
  stages: { stage: string; objective: string; provenance: string; input_score: number; output_score: number; position: number }[];
  /** The response's receipt digest. */
  receipt: string;
}

/** A selected memory's rank, score, breakdown and reasons as plain (JSON-ready) values. */
export function explanation(m: RankedMemory, response: RankResponse): MemrankExplanation {
  const out: MemrankExplanation = {
    id: m.id, rank: m.rank, position: m.position, score: m.score, layer: m.layer, profile: response.profile,
    stages: [], receipt: "",
  };
  const b = m.breakdown;
  if (b) {
    Object.assign(out, {
      retrieval_score: b.retrievalScore, combined_score: b.combinedScore, final_score: b.finalScore,
      quality_score: b.qualityScore, blend_term: b.blendTerm, marginal_gain: b.marginalGain,
      token_count: b.tokenCount, token_count_estimated: b.tokenCountEstimated, reasons: [...b.reasons],
      signals: Object.fromEntries(b.signals.map((s) => [s.name, {
        raw: s.raw, normalized: s.normalized, weight: s.weight, contribution: s.contribution, reasons: [...s.reasons],
      }])),
    });
  }
  out.stages = m.stages.map((s) => ({
    stage: s.stage, objective: s.objective, provenance: s.provenance, input_score: s.inputScore,
    output_score: s.outputScore, position: s.position,
  }));
  out.receipt = response.receipt?.digest ?? "";
  return out;
}

/** The selected documents, in placement order, as indices into the request's candidates. */
export function selections(request: RankRequest, response: RankResponse):
  { index: number; score: number; explanation: MemrankExplanation }[] {
  const at = new Map(request.candidates.map((c, i) => [c.id, i]));
  return response.selected.map((m) => {
    const index = at.get(m.id);
    if (index === undefined) throw new Error(`memrank selected ${repr(m.id)}, which was not sent`);
    return { index, score: m.score, explanation: explanation(m, response) };
  });
}

const CANDIDATE = /^candidates\[(\d+)\]/;

/** Adds a line naming the document behind each candidates[i] field the server refused. */
export function nameDocuments(err: MemrankError, request: RankRequest): MemrankError {
  const seen = new Set<number>();
  const notes: string[] = [];
  for (const path of err.fields) {
    const m = CANDIDATE.exec(path);
    const i = m ? Number(m[1]) : -1;
    const c = request.candidates[i];
    if (c && !seen.has(i)) {
      seen.add(i);
      notes.push(`${path}: ${docName(i, c.id)}`);
    }
  }
  if (notes.length) err.message += "\n" + notes.join("\n");
  return err;
}
