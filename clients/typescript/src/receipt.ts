// Receipt verification: the canonical bytes (memrank.receipt.v3, or v2 when the receipt names it;
// docs/concepts/receipts.md) rebuilt from the RankRequest (its candidates in either form) and the RankResponse alone, their SHA-256 compared with receipt.digest, and the
// HMAC-SHA256 signature checked under the receipt key when one is given.
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import {
  type Candidate,
  type DroppedMemory,
  DropReason,
  type RankRequest,
  type RankResponse,
} from "./gen/memrank/v1/ranking_pb.js";
import { candidatesOf } from "./columns.js";

/** The receipt form the server writes; verifyReceipt rebuilds it and RECEIPT_SCHEMA_V2. */
export const RECEIPT_SCHEMA = "memrank.receipt.v3";
/** The form before v3 (one text line per candidate and per drop), still verified. */
export const RECEIPT_SCHEMA_V2 = "memrank.receipt.v2";

/** What verifyReceipt found: ok only when the digest was recomputed and matches (and, with a key, so does the
 * signature); problems say what differs, unchecked what could not be checked. */
export interface ReceiptCheck {
  ok: boolean;
  /** The recomputed digest ("" when it could not be recomputed). */
  digest: string;
  problems: string[];
  unchecked: string[];
}

/** Thrown by receiptCanonical when the response lacks a part the receipt binds. */
export class ReceiptUnverifiable extends Error {
  override name = "ReceiptUnverifiable";
}

const AGAIN =
  "the receipt is the same at every explain level, so the same request asked at EXPLAIN_LEVEL_FULL " +
  "(with the response's reference_time) gives a response that verifies against the same digest";

/** q(s): the JSON string literal of s in ASCII (README; JSON.stringify escapes otherwise). */
function q(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i); // UTF-16 code units: a code point above U+FFFF is its surrogate pair
    if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += "\\\\";
    else if (c === 0x08) out += "\\b";
    else if (c === 0x0c) out += "\\f";
    else if (c === 0x0a) out += "\\n";
    else if (c === 0x0d) out += "\\r";
    else if (c === 0x09) out += "\\t";
    else if (c < 0x20 || c >= 0x7f) out += "\\u" + c.toString(16).padStart(4, "0");
    else out += s[i];
  }
  return out + '"';
}

/** f(x): the 16 hex digits of the big-endian float64 bits of x. */
function f(x: number): string {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x, false);
  return Buffer.from(view.buffer).toString("hex");
}

/** h(b): SHA-256 hex of bytes, or of a string's UTF-8 bytes. */
function h(data: Uint8Array | string): string {
  return createHash("sha256").update(data).digest("hex");
}

const opt = (x: number | undefined): string => (x === undefined ? "-" : f(x));
const time = (t: Timestamp | undefined): string => (t === undefined ? "-" : f(Number(t.seconds) + t.nanos / 1e9));

function sortedLines(tag: string, m: Record<string, number>): string[] {
  return Object.entries(m)
    .map(([k, v]) => `${tag} ${q(k)} ${f(v)}`)
    .sort(); // keys are distinct and q(key) is ASCII: this is q(key) byte order
}

function embeddingsLine(req: RankRequest): string {
  if (req.embeddingsF32.length > 0) return `embeddings ${req.embeddingDim} ${h(req.embeddingsF32)}`;
  const dim = Math.max(0, ...req.candidates.map((c) => c.embedding.length));
  if (dim === 0) return "embeddings 0 -";
  const matrix = new DataView(new ArrayBuffer(4 * dim * req.candidates.length));
  req.candidates.forEach((c, row) => {
    if (c.embedding.length !== dim) return; // a candidate without an embedding is a row of zeros
    c.embedding.forEach((v, i) => matrix.setFloat32(4 * (row * dim + i), v, true));
  });
  return `embeddings ${dim} ${h(new Uint8Array(matrix.buffer))}`;
}

const utf8 = new TextEncoder();

/** UTF-8 byte order (code point order; JavaScript's default sort compares UTF-16 code units). */
const byUtf8 = (a: string, b: string): number => Buffer.compare(utf8.encode(a), utf8.encode(b));

/** S: the strings' UTF-8 byte lengths as 4-byte big-endian integers, then their bytes. */
function colS(values: string[]): Uint8Array {
  const encoded = values.map((v) => utf8.encode(v));
  const lengths = Buffer.alloc(4 * values.length);
  encoded.forEach((e, i) => lengths.writeUInt32BE(e.length, 4 * i));
  return Buffer.concat([lengths, ...encoded]);
}

/** F: each number's big-endian IEEE-754 float64 bits. */
function colF(values: number[]): Uint8Array {
  const out = Buffer.alloc(8 * values.length);
  values.forEach((v, i) => out.writeDoubleBE(v, 8 * i));
  return out;
}

/** O: a presence byte per value (1 set, 0 unset), then F with 0.0 for an unset value. */
function colO(values: (number | undefined)[]): Uint8Array {
  const present = Buffer.from(values.map((v) => (v === undefined ? 0 : 1)));
  return Buffer.concat([present, colF(values.map((v) => v ?? 0))]);
}

/** M: per name any map carries, in UTF-8 byte order: S of the name, then O of every map's value for it. */
function colM(maps: Record<string, number>[]): Uint8Array {
  const names = [...new Set(maps.flatMap((m) => Object.keys(m)))].sort(byUtf8);
  return Buffer.concat(names.flatMap((n) => [colS([n]), colO(maps.map((m) => (n in m ? m[n] : undefined)))]));
}

/** K: the key counts as 4-byte big-endian integers, then S of every map's keys, each in UTF-8 byte order. */
function colK(maps: Record<string, string>[]): Uint8Array {
  const counts = Buffer.alloc(4 * maps.length);
  maps.forEach((m, i) => counts.writeUInt32BE(Object.keys(m).length, 4 * i));
  return Buffer.concat([counts, colS(maps.flatMap((m) => Object.keys(m).sort(byUtf8)))]);
}

const seconds = (t: Timestamp | undefined): number | undefined =>
  t === undefined ? undefined : Number(t.seconds) + t.nanos / 1e9;

/** v3's candidate section: one line per column, the SHA-256 of its bytes. */
function candidateColumns(cs: Candidate[]): string[] {
  const columns: [string, Uint8Array][] = [
    ["id", colS(cs.map((c) => c.id))],
    ["layer", colS(cs.map((c) => c.layer))],
    ["kind", colS(cs.map((c) => c.kind))],
    ["content", colS(cs.map((c) => c.content))],
    ["retrieval_score", colF(cs.map((c) => c.retrievalScore))],
    ["importance", colO(cs.map((c) => c.importance))],
    ["access_count", colF(cs.map((c) => c.accessCount))],
    ["token_count", colF(cs.map((c) => c.tokenCount))],
    ["source", colF(cs.map((c) => c.source))],
    ["safety", colF(cs.map((c) => c.safety))],
    ["provenance", colS(cs.map((c) => c.provenance))],
    ["thread", colS(cs.map((c) => c.thread))],
    ["position", colO(cs.map((c) => (c.position === undefined ? undefined : Number(c.position))))],
    ["speaker", colS(cs.map((c) => c.speaker))],
    ["created_at", colO(cs.map((c) => seconds(c.createdAt)))],
    ["last_accessed_at", colO(cs.map((c) => seconds(c.lastAccessedAt)))],
    ["event_time", colO(cs.map((c) => seconds(c.eventTime)))],
    ["ingested_at", colO(cs.map((c) => seconds(c.ingestedAt)))],
    ["valid_from", colO(cs.map((c) => seconds(c.validFrom)))],
    ["valid_to", colO(cs.map((c) => seconds(c.validTo)))],
    ["facet_scores", colM(cs.map((c) => c.facetScores))],
    ["stage_scores", colM(cs.map((c) => c.stageScores))],
    ["metadata", colK(cs.map((c) => c.metadata))],
  ];
  return columns.map(([name, data]) => `candidate ${name} ${h(data)}`);
}

/** v2's text line of a candidate, then its facet, stage and metadata lines. */
function candidateLinesV2(c: Candidate): string[] {
  return [
    [
      "candidate", q(c.id), q(c.layer), q(c.kind), h(c.content), f(c.retrievalScore), opt(c.importance),
      c.accessCount, c.tokenCount, c.source, c.safety, q(c.provenance), q(c.thread),
      c.position === undefined ? "-" : c.position.toString(), q(c.speaker), time(c.createdAt),
      time(c.lastAccessedAt), time(c.eventTime), time(c.ingestedAt), time(c.validFrom), time(c.validTo),
    ].join(" "),
    ...sortedLines("facet", c.facetScores),
    ...sortedLines("stage", c.stageScores),
    ...Object.keys(c.metadata).map((k) => `metadata ${q(k)}`).sort(),
  ];
}

/** v3's dropped section: the count, then one line per column (response order). */
function droppedColumns(ds: DroppedMemory[]): string[] {
  const columns: [string, Uint8Array][] = [
    ["id", colS(ds.map((d) => d.id))],
    ["layer", colS(ds.map((d) => d.layer))],
    ["reason", colF(ds.map((d) => d.reason))],
    ["score", colF(ds.map((d) => d.score))],
    ["covered_by", colS(ds.map((d) => d.breakdown?.coveredBy ?? ""))],
  ];
  return [`dropped ${ds.length}`, ...columns.map(([name, data]) => `drop ${name} ${h(data)}`)];
}

/** The receipt's canonical bytes as a string (ASCII), each line ending in "\n", in the form the receipt names
 * (v3 when it names none); throws ReceiptUnverifiable when the response lacks a part the receipt binds
 * (breakdowns at EXPLAIN_LEVEL_NONE, covered_by below FULL). */
export function receiptCanonical(req: RankRequest, resp: RankResponse): string {
  const cands = candidatesOf(req); // either request form, as Candidate messages
  const schema = resp.receipt?.schema || RECEIPT_SCHEMA;
  const v2 = schema === RECEIPT_SCHEMA_V2;
  const lines: string[] = [
    `schema ${schema}`,
    `query ${h(req.query)}`,
    `reference_time ${resp.referenceTime?.seconds ?? 0n} ${resp.referenceTime?.nanos ?? 0}`,
    `profile ${q(resp.profile)}`,
    `policy_version ${q(resp.policyVersion)}`,
    `weights ${resp.weights.length}`,
    ...resp.weights.map((w) => `weight ${q(w.signal)} ${f(w.weight)} ${q(w.normalization)}`),
    `explicit_lookup ${req.explicitLookup ? 1 : 0}`,
    `placement ${req.placement}`,
    `budget ${req.budget?.maxTokens ?? 0} ${req.budget?.maxItems ?? 0}`,
    `min_score ${opt(req.minScore)}`,
    `relevance_threshold ${opt(req.relevanceThreshold)}`,
    `layers ${req.layers.length}`,
    ...req.layers.map((l) => `layer ${q(l.name)} ${f(l.share)} ${l.floorTokens} ${l.maxItems} ${opt(l.minScore)}`),
    embeddingsLine(req),
    `candidates ${cands.length}`,
    ...(v2 ? cands.flatMap(candidateLinesV2) : candidateColumns(cands)),
  ];
  const selected = [...resp.selected].sort((a, b) => a.rank - b.rank);
  lines.push(`selected ${selected.length}`);
  for (const m of selected) {
    const b = m.breakdown;
    if (b === undefined) {
      throw new ReceiptUnverifiable(
        `the digest: selected ${JSON.stringify(m.id)} carries no breakdown (EXPLAIN_LEVEL_NONE), and the ` +
          `receipt binds its combined, final and signal scores; ${AGAIN}`,
      );
    }
    lines.push(
      `memory ${m.rank} ${q(m.id)} ${q(m.layer)} ${m.position} ${f(m.score)} ${f(b.combinedScore)} ` +
        `${f(b.finalScore)} ${f(b.blendTerm)}`,
      ...b.signals.map(
        (s) => `signal ${q(s.name)} ${f(s.raw)} ${f(s.normalized)} ${f(s.weight)} ${f(s.contribution)}`,
      ),
    );
  }
  for (const d of resp.dropped) {
    if (d.reason === DropReason.REDUNDANT && d.breakdown === undefined) {
      throw new ReceiptUnverifiable(
        `the digest: dropped ${JSON.stringify(d.id)} is REDUNDANT but carries no breakdown (below ` +
          `EXPLAIN_LEVEL_FULL), so its covered_by is unknown; ${AGAIN}`,
      );
    }
  }
  if (v2) {
    lines.push(`dropped ${resp.dropped.length}`);
    for (const d of resp.dropped) {
      lines.push(`drop ${q(d.id)} ${q(d.layer)} ${d.reason} ${f(d.score)} ${q(d.breakdown?.coveredBy ?? "")}`);
    }
  } else lines.push(...droppedColumns(resp.dropped));
  return lines.map((l) => l + "\n").join("");
}

/** Candidates missing, unknown or twice in the response. */
function accounting(req: RankRequest, resp: RankResponse): string[] {
  const out: string[] = [];
  const asked = new Set(candidatesOf(req).map((c) => c.id));
  const told = new Map<string, number>();
  for (const id of [...resp.selected.map((m) => m.id), ...resp.dropped.map((d) => d.id)]) {
    told.set(id, (told.get(id) ?? 0) + 1);
  }
  for (const id of asked) if (!told.has(id)) out.push(`candidate ${JSON.stringify(id)} is neither selected nor dropped`);
  for (const [id, n] of told) {
    if (!asked.has(id)) out.push(`${JSON.stringify(id)} is in the response but is no candidate of the request`);
    else if (n > 1) out.push(`${JSON.stringify(id)} is in the response ${n} times`);
  }
  return out;
}

/**
 * Checks a response's receipt: rebuilds the canonical bytes from the request and the response, compares their
 * SHA-256 with receipt.digest and, with `key` (the receipt key file's bytes, surrounding whitespace removed),
 * checks receipt.signature. Without the request only the signature can be checked (the digest binds the
 * candidates' fields, which only the request holds).
 */
export function verifyReceipt(
  request: RankRequest | undefined,
  response: RankResponse,
  key?: Uint8Array | string,
): ReceiptCheck {
  const r = response.receipt;
  const problems: string[] = [];
  const unchecked: string[] = [];
  const done = (digest = ""): ReceiptCheck => ({ ok: digest !== "" && problems.length === 0, digest, problems, unchecked });
  if (r === undefined || (r.schema !== RECEIPT_SCHEMA && r.schema !== RECEIPT_SCHEMA_V2)) {
    problems.push(
      `receipt schema is ${JSON.stringify(r?.schema ?? "")}; this verifier knows ${RECEIPT_SCHEMA_V2} and ` +
        RECEIPT_SCHEMA,
    );
    return done();
  }
  if (key !== undefined && key.length > 0) {
    const want = Buffer.from(createHmac("sha256", key).update(r.digest).digest("hex"));
    const got = Buffer.from(r.signature);
    if (r.signature === "") problems.push("the receipt is not signed, but a key was given");
    else if (want.length !== got.length || !timingSafeEqual(want, got)) {
      problems.push("signature: not the HMAC-SHA256 of the digest under this key");
    }
  } else if (r.signature !== "") unchecked.push("the signature (no key given)");
  else unchecked.push("the signature: the receipt is unsigned (the server has no security.receipt_key_file)");
  if (request === undefined) {
    unchecked.push("the digest: it binds every candidate's fields, which only the request holds (give the request)");
    return done();
  }
  problems.push(...accounting(request, response));
  let canonical: string;
  try {
    canonical = receiptCanonical(request, response);
  } catch (err) {
    if (!(err instanceof ReceiptUnverifiable)) throw err;
    unchecked.push(err.message);
    return done();
  }
  const digest = h(canonical);
  if (digest !== r.digest) {
    problems.push(
      `digest: recomputed ${digest}, the receipt says ${r.digest || "(empty)"}: the request and response are ` +
        "not the pair the receipt was made for",
    );
  }
  return done(digest);
}
