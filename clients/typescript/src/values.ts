// Metadata values as the wire wants them, read leniently: each reader returns null for a value not of its kind
// (mapping.ts then throws MappingError naming the document and the key). The twin of memrank/integrations/values.py.
import { create } from "@bufbuild/protobuf";
import { timestampFromDate, TimestampSchema, type Timestamp } from "@bufbuild/protobuf/wkt";
import { SafetyStatusSchema, SourceSchema } from "./gen/memrank/v1/ranking_pb.js";

const REAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const INTEGER = /^[+-]?\d+$/;

/** A finite number from a number, a bigint or a numeric string, else null. */
export function real(value: unknown): number | null {
  if (typeof value === "string") {
    const s = value.trim();
    if (!REAL.test(s)) return null;
    value = Number(s);
  }
  if (typeof value === "bigint") value = Number(value);
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/** An integer from an integral number, a bigint or an integer string, else null. */
export function integer(value: unknown): number | null {
  if (typeof value === "string") {
    const s = value.trim();
    return INTEGER.test(s) ? Number(s) : null;
  }
  if (typeof value === "bigint") return Number(value);
  return typeof value === "number" && Number.isInteger(value) ? value : null;
}

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?\s*(Z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)?$/i;
const MIN_SECONDS = -62135596800; // 0001-01-01T00:00:00Z
const MAX_SECONDS = 253402300799; // 9999-12-31T23:59:59Z

export function utcSeconds(y: number, mo: number, d: number, h: number, mi: number, s: number): number | null {
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  date.setUTCHours(h, mi, s, 0);
  const same = date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d
    && date.getUTCHours() === h && date.getUTCMinutes() === mi && date.getUTCSeconds() === s;
  return same ? date.getTime() / 1000 : null;
}

/** An ISO-8601 date or date-time (no zone: UTC), as a Timestamp; else null. */
export function isoTimestamp(text: string): Timestamp | null {
  const m = ISO.exec(text);
  if (!m) return null;
  const [y, mo, d, h, mi, s] = [1, 2, 3, 4, 5, 6].map((k) => Number(m[k] ?? 0)) as [number, number, number, number, number, number];
  if (y < 1) return null;
  let seconds = utcSeconds(y, mo, d, h, mi, s);
  if (seconds === null) return null;
  const zone = m[8]?.toUpperCase();
  if (zone && zone !== "Z") {
    const digits = zone.slice(1).replace(/:/g, "");
    const [oh, om, os] = [digits.slice(0, 2), digits.slice(2, 4), digits.slice(4, 6)].map((x) => Number(x || 0)) as [number, number, number];
    if (oh > 23 || om > 59 || os > 59) return null;
    seconds -= (zone.startsWith("-") ? -1 : 1) * (oh * 3600 + om * 60 + os);
  }
  // Microseconds, as Python's datetime keeps them.
  const nanos = m[7] ? Number(m[7].padEnd(9, "0").slice(0, 6)) * 1000 : 0;
  return seconds >= MIN_SECONDS && seconds <= MAX_SECONDS ? timestampOf(seconds, nanos) : null;
}

export function timestampOf(seconds: number, nanos: number): Timestamp {
  return create(TimestampSchema, { seconds: BigInt(seconds), nanos });
}

/** A Timestamp from a Date, epoch seconds (a number or a numeric string) or an ISO-8601 string, else null. */
export function toTimestamp(value: unknown): Timestamp | null {
  if (typeof value === "string") {
    const iso = isoTimestamp(value.trim());
    if (iso) return iso;
  }
  if (value instanceof Date) {
    const ms = value.getTime();
    return Number.isNaN(ms) || ms / 1000 < MIN_SECONDS || ms / 1000 > MAX_SECONDS ? null : timestampFromDate(value);
  }
  const epoch = real(value);
  if (epoch === null) return null;
  let seconds = Math.floor(epoch);
  let nanos = Math.round((epoch - seconds) * 1e6) * 1000; // microseconds, as Python's datetime.fromtimestamp
  if (nanos >= 1e9) {
    seconds += 1;
    nanos -= 1e9;
  }
  return seconds >= MIN_SECONDS && seconds <= MAX_SECONDS ? timestampOf(seconds, nanos) : null;
}

export type EnumSchema = typeof SourceSchema | typeof SafetyStatusSchema;

/** An enum number from its name (any case, prefix optional) or its number, else null. */
export function enumNumber(value: unknown, schema: EnumSchema, prefix: string): number | null {
  if (typeof value === "string") {
    let name = value.trim().toUpperCase().replace(/[- ]/g, "_");
    if (!name.startsWith(prefix)) name = prefix + name;
    return schema.values.find((v) => v.name === name)?.number ?? null;
  }
  const n = integer(value);
  return n !== null && schema.values.some((v) => v.number === n) ? n : null;
}

export function enumNames(schema: EnumSchema, prefix: string): string {
  return schema.values.filter((v) => !v.name.endsWith("UNSPECIFIED"))
    .map((v) => v.name.slice(prefix.length).toLowerCase()).join(", ");
}

/** Finite numbers from an array or a typed array of numbers, else null. */
export function toEmbedding(value: unknown): number[] | null {
  if (!(Array.isArray(value) || (ArrayBuffer.isView(value) && !(value instanceof DataView)))) return null;
  const values = Array.from(value as ArrayLike<unknown>);
  if (!values.length || !values.every((v) => typeof v === "number" && Number.isFinite(v))) return null;
  return values as number[];
}

/** The id a document is sent under: its own id, else metadata[keys.id], else "#<index>". */
