import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { CandidateSchema, DropReasonSchema, type Candidate, type DropReason } from "./gen/memrank/v1/ranking_pb.js";

/** A protobuf Timestamp from a Date or epoch milliseconds. */
export function timestamp(when: Date | number): Timestamp {
  return timestampFromDate(typeof when === "number" ? new Date(when) : when);
}

/** Optional candidate fields; times may be given as Dates. */
export type CandidateFields = Partial<
  Omit<
    Candidate,
    "$typeName" | "$unknown" | "id" | "content" | "createdAt" | "lastAccessedAt" | "eventTime" | "ingestedAt" | "validFrom" | "validTo"
  >
> & {
  createdAt?: Date;
  lastAccessedAt?: Date;
  eventTime?: Date;
  ingestedAt?: Date;
  validFrom?: Date;
  validTo?: Date;
};

const TIME_FIELDS = ["createdAt", "lastAccessedAt", "eventTime", "ingestedAt", "validFrom", "validTo"] as const;

/** A candidate from its id, its content and optional fields. */
export function candidate(id: string, content: string, fields: CandidateFields = {}): Candidate {
  const { createdAt, lastAccessedAt, eventTime, ingestedAt, validFrom, validTo, ...rest } = fields;
  const times = { createdAt, lastAccessedAt, eventTime, ingestedAt, validFrom, validTo };
  const init: MessageInitShape<typeof CandidateSchema> = { ...rest, id, content };
  for (const key of TIME_FIELDS) {
    const value = times[key];
    if (value !== undefined) init[key] = timestamp(value);
  }
  return create(CandidateSchema, init);
}

/** The proto name of a drop reason, e.g. "DROP_REASON_MAX_ITEMS" (TypeScript enum keys drop the prefix). */
export function dropReasonName(reason: DropReason): string {
  return DropReasonSchema.value[reason]?.name ?? String(reason);
}

/** The two RankRequest fields that carry packed embeddings; spread them into a request. */
export interface PackedEmbeddings {
  embeddingsF32: Uint8Array;
  embeddingDim: number;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/**
 * Packs one embedding row per candidate, in candidate order, into RankRequest.embeddingsF32
 * (float32, row-major, little-endian) and embeddingDim: `client.rank({ ...request, ...packEmbeddings(rows) })`.
 * `rows` is an array of equal-length rows (number arrays or Float32Arrays), or one flat Float32Array
 * with `dim` values per row. The candidates must leave `embedding` empty (the server refuses both at once).
 */
export function packEmbeddings(rows: readonly ArrayLike<number>[] | Float32Array, dim?: number): PackedEmbeddings {
  let flat: Float32Array;
  let width: number;
  if (rows instanceof Float32Array) {
    if (dim === undefined || !Number.isInteger(dim) || dim < 1 || rows.length % dim !== 0) {
      throw new RangeError(`packEmbeddings: a flat Float32Array of ${rows.length} values needs dim >= 1 dividing it, got ${dim}`);
    }
    flat = rows;
    width = dim;
  } else {
    width = rows[0]?.length ?? 0;
    if (width < 1) throw new RangeError("packEmbeddings: needs at least one row of at least one value");
    flat = new Float32Array(rows.length * width);
    rows.forEach((row, i) => {
      if (row.length !== width) throw new RangeError(`packEmbeddings: row ${i} has ${row.length} values, row 0 has ${width}`);
      flat.set(row, i * width);
    });
  }
  const out = new Uint8Array(flat.length * 4);
  if (LITTLE_ENDIAN) {
    out.set(new Uint8Array(flat.buffer, flat.byteOffset, flat.byteLength));
  } else {
    const view = new DataView(out.buffer);
    flat.forEach((v, i) => view.setFloat32(i * 4, v, true));
  }
  return { embeddingsF32: out, embeddingDim: width };
}
