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

  /** The same error with `rename` applied to its details and each violation's field and description. */
  renamed(rename: (text: string) => string): MemrankError {
    const violations = this.violations.map((v) => ({ field: rename(v.field), description: rename(v.description) }));
    return new MemrankError(this.code, rename(this.details), violations, this.reason, this.metadata);
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
    const details = err.code === status.RESOURCE_EXHAUSTED ? explainSizeLimit(err.details) : err.details;
    return new MemrankError(err.code, details, violations, reason, err.metadata ?? new Metadata());
  }
}

const SERVER_LIMIT = "the server's server.max_message_bytes (MEMRANK_MAX_MESSAGE_BYTES)";
const CLIENT_LIMIT = "this client's maxMessageBytes (new MemrankClient(address, { maxMessageBytes }))";
// grpc's refusal of a message over a limit, which names neither setting: the server's of a request
// ("SERVER: Received message larger than max (70026307 vs. 67108864)") and grpc-js's of a response
// ("Received message larger than max (N vs M)", "Received message that decompresses to a size larger than M").
const TOO_LARGE = /(SERVER: )?Received message larger than max \((\d+) vs\.? (\d+)\)/;
const DECOMPRESSED = /Received message that decompresses to a size larger than (\d+)/;

/** The refusal of a request of `size` bytes over this client's limit, before it is sent. */
export function tooLarge(size: number, limit: number): MemrankError {
  return new MemrankError(status.RESOURCE_EXHAUSTED,
    `the request is ${size} bytes, over ${CLIENT_LIMIT}, ${limit} bytes: send fewer or smaller candidates, or ` +
      `raise maxMessageBytes and ${SERVER_LIMIT} with it`);
}

/** grpc's "message larger than max" said as which limit it is and the setting that raises it (other details as
 * they are); grpc's own words follow in brackets. */
function explainSizeLimit(details: string): string {
  const found = TOO_LARGE.exec(details);
  if (found) {
    const [, server, size, limit] = found;
    const said = server
      ? `the request is ${size} bytes, over ${SERVER_LIMIT}, ${limit} bytes: send fewer or smaller candidates, ` +
        "or raise that setting on the server"
      : `the response is ${size} bytes, over ${CLIENT_LIMIT}, ${limit} bytes: raise it`;
    return `${said} [grpc: ${details}]`;
  }
  const decompressed = DECOMPRESSED.exec(details);
  return decompressed ? `the response is over ${CLIENT_LIMIT}, ${decompressed[1]} bytes: raise it [grpc: ${details}]`
    : details;
}
