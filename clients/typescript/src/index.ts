// Client of the memrank ranking sidecar: promises, deadlines, retries on UNAVAILABLE (gRPC's, from the shared service config),
// and a MemrankError carrying the gRPC code and BadRequest field violations.
export { DEFAULT_CONCURRENCY, DEFAULT_MAX_MESSAGE_BYTES, MAX_ATTEMPTS, MemrankClient, dial, serviceConfig, type CallOptions, type ClientOptions, type ServiceConfig } from "./client.js";
export { candidatesOf, columnar, inCandidateWords, rankRequest, type CandidateInit, type SentRequest } from "./columns.js";
export { MemrankError, type FieldViolation } from "./errors.js";
export {
  candidate,
  dropReasonName,
  packEmbeddings,
  timestamp,
  type CandidateFields,
  type PackedEmbeddings,
} from "./helpers.js";
export { RECEIPT_SCHEMA, RECEIPT_SCHEMA_V2, ReceiptUnverifiable, receiptCanonical, verifyReceipt, type ReceiptCheck } from "./receipt.js";
export * from "./gen/memrank/v1/ranking_pb.js";
export { RankingService } from "./gen/memrank/v1/ranking_service_pb.js";
export { status } from "@grpc/grpc-js";
