import { fromBinary } from "@bufbuild/protobuf";
import { anyIs, anyUnpack } from "@bufbuild/protobuf/wkt";
import { Metadata, status, type ServiceError } from "@grpc/grpc-js";
import { BadRequestSchema, ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "./gen/google/rpc/status_pb.js";

/** One google.rpc.BadRequest field violation. */
export interface FieldViolation {
  field: string;
  description: string;
}

/** A failed call: the gRPC code, the BadRequest field violations and the ErrorInfo reason. */
export class MemrankError extends Error {
  override readonly name = "MemrankError";

  constructor(
    /** The numeric gRPC status code (grpc.status). */
    readonly code: status,
    /** The server's message. */
    readonly details: string,
    /** Field violations from google.rpc.BadRequest. */
    readonly violations: readonly FieldViolation[] = [],
    /** The google.rpc.ErrorInfo reason, e.g. "UNKNOWN_PROFILE"; "" when absent. */
    readonly reason: string = "",
    /** Trailing metadata of the call. */
    readonly metadata: Metadata = new Metadata(),
  ) {
    const fields = violations.map((v) => ` [${v.field}: ${v.description}]`).join("");
    super(`${status[code] ?? code}: ${details}${fields}`);
  }

  /** The code's name, e.g. "INVALID_ARGUMENT". */
  get codeName(): string {
    return status[this.code] ?? String(this.code);
  }

  /** The violated field paths, e.g. "candidates[1].id". */
  get fields(): string[] {
    return this.violations.map((v) => v.field);
  }

  /** Decodes a grpc-js error, including grpc-status-details-bin. */
  static fromServiceError(err: ServiceError): MemrankError {
    const violations: FieldViolation[] = [];
    let reason = "";
    for (const raw of err.metadata?.get("grpc-status-details-bin") ?? []) {
      if (typeof raw === "string") continue;
      for (const detail of fromBinary(StatusSchema, raw).details) {
        if (anyIs(detail, BadRequestSchema)) {
          for (const v of anyUnpack(detail, BadRequestSchema)?.fieldViolations ?? []) {
            violations.push({ field: v.field, description: v.description });
          }
        } else if (anyIs(detail, ErrorInfoSchema)) {
          reason = anyUnpack(detail, ErrorInfoSchema)?.reason ?? reason;
        }
      }
    }
    return new MemrankError(err.code, err.details, violations, reason, err.metadata ?? new Metadata());
  }
}
