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
