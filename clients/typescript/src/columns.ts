// Candidates as the columnar form (RankRequest.columns, one repeated field per Candidate field) with their
// embeddings packed (RankRequest.embeddingsF32), built straight from the caller's candidates: what rank()
// sends. The TypeScript twin of memrank/client/requests.py (columns_of, rank_request, candidates_of).
import { create, isMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import {
  CandidateColumnsSchema,
  CandidateSchema,
  MetadataRowSchema,
  RankRequestSchema,
  TimeColumnSchema,
  type Candidate,
  type CandidateColumns,
  type RankRequest,
  type TimeColumn,
} from "./gen/memrank/v1/ranking_pb.js";
import { packEmbeddings } from "./helpers.js";

/** A candidate as rank() takes it: a Candidate message (e.g. from candidate()) or its init object. */
export type CandidateInit = MessageInitShape<typeof CandidateSchema>;
type TimeInit = { seconds?: bigint | number | string; nanos?: number } | undefined;

const TEXTS = [["id", "ids"], ["layer", "layers"], ["kind", "kinds"], ["content", "contents"],
  ["provenance", "provenance"], ["thread", "threads"], ["speaker", "speakers"]] as const;
const NUMBERS = [["retrievalScore", "retrievalScores"], ["accessCount", "accessCounts"],
  ["tokenCount", "tokenCounts"], ["source", "sources"], ["safety", "safety"]] as const;
const TIMES = ["createdAt", "lastAccessedAt", "eventTime", "ingestedAt", "validFrom", "validTo"] as const;
const MATRICES = [["facetScores", "facetNames"], ["stageScores", "stageNames"]] as const;
/** The server's longest facet or stage name, in UTF-8 bytes (a longer one is refused on its candidate). */
const MAX_NAME_BYTES = 128;
const utf8 = new TextEncoder();

/** What the columnar form cannot say as sent (a NaN facet or reranker score is "no score" there, a bad name has no row,
 * embeddings of several dimensions no matrix): such candidates go as they are, and the server names the fault. */
class PerCandidate extends Error {}

/** One time field of every candidate: seconds, nanos only when any is set, present only when a row is unset. */
function timeColumn(cands: readonly CandidateInit[], field: (typeof TIMES)[number]): TimeColumn | undefined {
  const stamps = cands.map((c) => c[field] as TimeInit);
  if (stamps.every((t) => t === undefined)) return undefined;
  const col = create(TimeColumnSchema);
  col.seconds = stamps.map((t) => BigInt(t?.seconds ?? 0));
  if (stamps.some((t) => t?.nanos)) col.nanos = stamps.map((t) => t?.nanos ?? 0);
  if (stamps.some((t) => t === undefined)) col.present = stamps.map((t) => t !== undefined);
  return col;
}

/** A map field as a dense matrix: sorted names, row-major values, NaN where a row lacks a name. */
function matrix(maps: readonly (Record<string, number> | undefined)[]): { names: string[]; values: number[] } {
  const names = [...new Set(maps.flatMap((m) => (m ? Object.keys(m) : [])))].sort();
  if (names.some((k) => !k || utf8.encode(k).length > MAX_NAME_BYTES)) throw new PerCandidate();
  const values: number[] = [];
  for (const m of maps) {
    for (const k of names) {
      const v = m?.[k];
      if (v !== undefined && Number.isNaN(v)) throw new PerCandidate();
      values.push(v ?? Number.NaN);
    }
  }
  return { names, values };
}

function optional<T>(values: (T | undefined)[], zero: T): { values: T[]; present: boolean[] } | undefined {
  if (values.every((v) => v === undefined)) return undefined;
  const present = values.some((v) => v === undefined) ? values.map((v) => v !== undefined) : [];
  return { values: values.map((v) => v ?? zero), present };
}

/** The candidates as CandidateColumns. Throws PerCandidate for what the form cannot carry. */
function columnsOf(cands: readonly CandidateInit[]): CandidateColumns {
  const cols = create(CandidateColumnsSchema);
  for (const [field, column] of TEXTS) {
    const values = cands.map((c) => c[field] ?? "");
    if (field === "id" || values.some((v) => v !== "")) cols[column] = values;
  }
  for (const [field, column] of NUMBERS) {
    const values = cands.map((c) => (c[field] as number | undefined) ?? 0);
    if (values.some((v) => v !== 0)) cols[column] = values;
  }
  const importance = optional(cands.map((c) => c.importance), 0);
  if (importance) [cols.importance, cols.importancePresent] = [importance.values, importance.present];
  const reranker = cands.map((c) => c.rerankerScore);
  if (reranker.some((v) => v !== undefined)) {
    if (reranker.some((v) => v !== undefined && Number.isNaN(v))) throw new PerCandidate();
    cols.rerankerScores = reranker.map((v) => v ?? Number.NaN); // NaN: this row has no score
  }
  const positions = optional(cands.map((c) => (c.position === undefined ? undefined : BigInt(c.position))), 0n);
  if (positions) [cols.positions, cols.positionsPresent] = [positions.values, positions.present];
  for (const field of TIMES) cols[field] = timeColumn(cands, field);
  for (const [field, names] of MATRICES) {
    const maps = cands.map((c) => c[field] as Record<string, number> | undefined);
    if (maps.some((m) => m && Object.keys(m).length)) {
      const { names: keys, values } = matrix(maps);
      [cols[names], cols[field]] = [keys, values];
    }
  }
  const metadata = cands.map((c) => c.metadata);
  if (metadata.some((m) => m && Object.keys(m).length)) {
    cols.metadata = metadata.map((m) => create(MetadataRowSchema, { entries: m ?? {} }));
  }
  return cols;
}

/** The candidates' own embeddings as packed fields (zero rows where missing, as the server reads them);
 * undefined when none has one. Throws PerCandidate when they differ in dimension. */
function ownEmbeddings(cands: readonly CandidateInit[]): { embeddingsF32: Uint8Array; embeddingDim: number } | undefined {
  const dims = new Set(cands.map((c) => c.embedding?.length ?? 0));
  dims.delete(0);
  if (dims.size === 0) return undefined;
  if (dims.size > 1) throw new PerCandidate();
  const dim = [...dims][0] ?? 0;
  const flat = new Float32Array(cands.length * dim);
  cands.forEach((c, i) => {
    if (c.embedding?.length) flat.set(c.embedding, i * dim);
  });
  return packEmbeddings(flat, dim);
}

/** A request as rank() sends it, and whether its candidates went as columns (errors then name candidates). */
export interface SentRequest {
  message: RankRequest;
  columnar: boolean;
}

/**
 * The RankRequest rank() sends for `request`: a RankRequest message as it is; an init object (a plain object,
 * the README's form) with its candidates as RankRequest.columns and their embeddings packed in embeddingsF32,
 * unless they cannot be said that way (a NaN facet, stage or reranker score, an empty or overlong facet or stage name,
 * embeddings of several dimensions, embeddings both packed and per candidate): then per candidate, as given.
 */
export function rankRequest(request: RankRequest | MessageInitShape<typeof RankRequestSchema>): SentRequest {
  if (isMessage(request, RankRequestSchema)) return { message: request, columnar: false };
  const { candidates, ...rest } = request;
  const message = create(RankRequestSchema, rest);
  const cands = candidates ?? [];
  if (message.columns !== undefined) {
    message.candidates = cands.map((c) => create(CandidateSchema, c));
    return { message, columnar: false };
  }
  try {
    const packed = message.embeddingsF32.length > 0;
    const own = ownEmbeddings(cands);
    if (packed && own) throw new PerCandidate();
    message.columns = columnsOf(cands);
    if (own) [message.embeddingsF32, message.embeddingDim] = [own.embeddingsF32, own.embeddingDim];
    return { message, columnar: true };
  } catch (err) {
    if (!(err instanceof PerCandidate)) throw err;
    message.columns = undefined;
    message.candidates = cands.map((c) => create(CandidateSchema, c));
    return { message, columnar: false };
  }
}

/** A RankRequest message with its candidates as columns (as rank() sends a plain object); `request` itself
 * when it has none or they cannot go as columns. */
export function columnar(request: RankRequest): RankRequest {
  if (request.columns !== undefined || request.candidates.length === 0) return request;
  const { $typeName: _, ...init } = request;
  const sent = rankRequest(init as MessageInitShape<typeof RankRequestSchema>);
  return sent.columnar ? sent.message : request;
}

const FIELD_OF: Record<string, string> = {
  ids: "id", layers: "layer", kinds: "kind", contents: "content", provenance: "provenance", threads: "thread",
  speakers: "speaker", retrieval_scores: "retrieval_score", access_counts: "access_count",
  token_counts: "token_count", sources: "source", safety: "safety", importance: "importance", positions: "position",
  reranker_scores: "reranker_score",
};
const COLUMN_PATH = /columns\.(\w+)\[(\d+)\]/g;
const TOTALS: Record<string, string> = { "columns.ids": "candidates", "columns.facet_names": "candidates.facet_scores" };

/** A violation of a request rank() sent as columns, in the words of the candidates it was given:
 * `columns.retrieval_scores[3]` is `candidates[3].retrieval_score`. */
export function inCandidateWords(text: string): string {
  const renamed = text.replace(COLUMN_PATH, (_, column: string, row: string) =>
    `candidates[${row}].${FIELD_OF[column] ?? column}`);
  return TOTALS[renamed] ?? renamed;
}

const TIME_KEYS = ["createdAt", "lastAccessedAt", "eventTime", "ingestedAt", "validFrom", "validTo"] as const;

/** A request's candidates as messages, whichever form it sent them in (receipts and accounting read these). */
export function candidatesOf(req: RankRequest): Candidate[] {
  const c = req.columns;
  if (c === undefined) return req.candidates;
  const out = c.ids.map((id) => create(CandidateSchema, { id }));
  const n = out.length;
  for (const [field, column] of [...TEXTS, ...NUMBERS]) {
    const values = c[column] as (string | number)[];
    values.forEach((v, i) => {
      if (i < n) (out[i] as unknown as Record<string, unknown>)[field] = v;
    });
  }
  c.importance.forEach((v, i) => {
    if (i < n && (!c.importancePresent.length || c.importancePresent[i])) out[i]!.importance = v;
  });
  c.positions.forEach((v, i) => {
    if (i < n && (!c.positionsPresent.length || c.positionsPresent[i])) out[i]!.position = v;
  });
  for (const field of TIME_KEYS) {
    const t = c[field];
    t?.seconds.forEach((s, i) => {
      if (i < n && (!t.present.length || t.present[i])) {
        out[i]![field] = create(TimestampSchema, { seconds: s, nanos: t.nanos.length ? t.nanos[i] ?? 0 : 0 });
      }
    });
  }
  for (const [field, names] of MATRICES) {
    const keys = c[names];
    const values = c[field];
    if (!keys.length) continue;
    out.forEach((cand, i) => {
      keys.forEach((k, j) => {
        const v = values[i * keys.length + j];
        if (v !== undefined && !Number.isNaN(v)) cand[field][k] = v;
      });
    });
  }
  c.rerankerScores.forEach((v, i) => {
    if (i < n && !Number.isNaN(v)) out[i]!.rerankerScore = v;
  });
  c.metadata.forEach((row, i) => {
    if (i < n) Object.assign(out[i]!.metadata, row.entries);
  });
  return out;
}
