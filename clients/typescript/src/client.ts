import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { Client, credentials, Metadata, status, type ChannelCredentials, type ChannelOptions, type ServiceError } from "@grpc/grpc-js";
import {
  ListProfilesRequestSchema,
  ListProfilesResponseSchema,
  RankRequestSchema,
  RecordFeedbackRequestSchema,
  RecordFeedbackResponseSchema,
  RankResponseSchema,
  ScoreAdmissionRequestSchema,
  ScoreAdmissionResponseSchema,
  type ListProfilesResponse,
  type RankResponse,
  type RecordFeedbackResponse,
  type ScoreAdmissionResponse,
} from "./gen/memrank/v1/ranking_pb.js";
import { RankingService } from "./gen/memrank/v1/ranking_service_pb.js";
import { serviceConfigJson } from "./gen/service_config.js";
import { inCandidateWords, rankRequest } from "./columns.js";
import { MemrankError, tooLarge } from "./errors.js";

/** gRPC's cap on retryPolicy.maxAttempts (gRFC A6): more attempts count as 5. */
export const MAX_ATTEMPTS = 5;
/**
 * How many calls one MemrankClient (one connection) carries at once: the server's default stream limit per connection
 * (server.max_streams_per_connection, 32). grpc-js honours the limit the server announces: further calls wait in the
 * client for a free stream, none is refused.
 */
export const DEFAULT_CONCURRENCY = 32;
/** The largest request and response a client sends and takes by default (the server's default
 * server.max_message_bytes, and the Python client's max_message_bytes). */
export const DEFAULT_MAX_MESSAGE_BYTES = 64 << 20;

/** Options of a MemrankClient. */
export interface ClientOptions {
  /** Deadline of a call that sets none, in milliseconds, for all its attempts together. Default 5000. */
  timeoutMs?: number;
  /**
   * How often a call failing with UNAVAILABLE is retried. Default 3 (the service config's); 0: never. gRPC makes
   * at most 5 attempts, so more than 4 gives 4 retries and also makes calls wait for the connection (waitForReady)
   * up to their deadline, to ride out a server that is not up yet. See serviceConfig().
   */
  retries?: number;
  /**
   * The service config's initialBackoff in milliseconds (default 50): the delay before retry k is random in
   * [0, min(backoffMs * 2^(k-1), maxBackoff)], maxBackoff raised to backoffMs when lower.
   */
  backoffMs?: number;
  /** Channel credentials. Default: insecure (a local sidecar). */
  credentials?: ChannelCredentials;
  /**
   * The largest request this client sends and response it takes, in bytes. Default 64 MiB (the server's default
   * server.max_message_bytes). A larger request is refused before it is sent, with a MemrankError
   * (RESOURCE_EXHAUSTED) naming this option and the server's setting. Raise both together.
   */
  maxMessageBytes?: number;
  /** Extra grpc-js channel options (they win over the client's own, "grpc.service_config" included). */
  channelOptions?: ChannelOptions;
}

/** A gRPC service config: the parts the clients read. */
export interface ServiceConfig {
  methodConfig: {
    name: { service: string; method?: string }[];
    waitForReady?: boolean;
    retryPolicy?: {
      maxAttempts: number;
      initialBackoff: string;
      maxBackoff: string;
      backoffMultiplier: number;
      retryableStatusCodes: string[];
    };
  }[];
}

/** A Duration in protobuf JSON ("0.05s") from milliseconds. */
const duration = (ms: number): string => `${Number((ms / 1000).toFixed(9))}s`;

/**
 * The gRPC service config of a client made with these options: the shipped clients/service_config.json (one file
 * for every memrank client) with `retries` and `backoffMs` mapped onto its retryPolicy: maxAttempts =
 * min(retries + 1, 5); retries 0 removes the policy; retries above 4 also set waitForReady.
 */
export function serviceConfig(options: Pick<ClientOptions, "retries" | "backoffMs"> = {}): ServiceConfig {
  const { retries, backoffMs } = options;
  if (retries !== undefined && !(Number.isInteger(retries) && retries >= 0)) {
    throw new RangeError(`retries must be an integer >= 0, got ${retries}`);
  }
  if (backoffMs !== undefined && !(backoffMs > 0)) throw new RangeError(`backoffMs must be > 0, got ${backoffMs}`);
  const config = JSON.parse(serviceConfigJson) as ServiceConfig;
  for (const method of config.methodConfig) {
    const policy = method.retryPolicy;
    if (!policy) continue;
    if (retries === 0) {
      delete method.retryPolicy;
      continue;
    }
    if (retries !== undefined) {
      policy.maxAttempts = Math.min(retries + 1, MAX_ATTEMPTS);
      if (retries + 1 > MAX_ATTEMPTS) method.waitForReady = true;
    }
    if (backoffMs !== undefined) {
      policy.initialBackoff = duration(backoffMs);
      if (parseFloat(policy.maxBackoff) * 1000 < backoffMs) policy.maxBackoff = duration(backoffMs);
    }
  }
  return config;
}

/** Options of one call. */
export interface CallOptions {
  /** Absolute deadline; overrides timeoutMs. */
  deadline?: Date;
  /** Deadline relative to now, in milliseconds; overrides the client's timeoutMs. */
  timeoutMs?: number;
  /** Request metadata. */
  metadata?: Metadata;
}

type Init<D extends DescMessage> = MessageShape<D> | MessageInitShape<D>;

const SERVICE = `/${RankingService.typeName}/`;

/** A client of one memrank sidecar (memrank.v1.RankingService). */
export class MemrankClient {
  readonly #client: Client;
  readonly #timeoutMs: number;
  readonly #waitForReady: boolean;
  readonly #maxMessageBytes: number;
  /** The gRPC service config of the channel (retries come from it). */
  readonly serviceConfig: ServiceConfig;

  constructor(address: string, options: ClientOptions = {}) {
    this.serviceConfig = serviceConfig(options);
    const max = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    if (!(Number.isInteger(max) && max >= 1024)) throw new RangeError(`maxMessageBytes must be an integer >= 1024, got ${max}`);
    this.#maxMessageBytes = max;
    const channelOptions: ChannelOptions = {
      "grpc.service_config": JSON.stringify(this.serviceConfig),
      "grpc.enable_retries": 1,
      "grpc.service_config_disable_resolution": 1, // this config, never one from DNS
      // grpc-js keeps a request to replay it on a retry: its default buffer, 1 MiB, would leave a larger one unretried.
      "grpc.per_rpc_retry_buffer_size": max,
      "grpc.retry_buffer_size": max,
      "grpc.max_send_message_length": max,
      "grpc.max_receive_message_length": max,
      ...options.channelOptions,
    };
    this.#client = new Client(address, options.credentials ?? credentials.createInsecure(), channelOptions);
    this.#timeoutMs = options.timeoutMs ?? 5000;
    // grpc-js reads methodConfig.waitForReady but does not apply it: the client sets it on each call.
    const ranking = this.serviceConfig.methodConfig.find((m) => m.name.some((n) => n.service === RankingService.typeName));
    this.#waitForReady = ranking?.waitForReady === true;
  }

  /**
   * Scores, gates, selects and orders the request's candidates. A plain object's candidates are sent as columns
   * (RankRequest.columns, their embeddings packed; errors still name them `candidates[i].field`); a RankRequest
   * message (create(), fromJson()) is sent as it is.
   */
  async rank(request: Init<typeof RankRequestSchema>, options?: CallOptions): Promise<RankResponse> {
    const sent = rankRequest(request);
    try {
      return await this.#call("Rank", RankRequestSchema, RankResponseSchema, sent.message, options);
    } catch (err) {
      throw sent.columnar && err instanceof MemrankError ? err.renamed(inCandidateWords) : err;
    }
  }

  /** Scores one memory for admission: ADMIT, HOLD or REJECT. */
  scoreAdmission(
    request: Init<typeof ScoreAdmissionRequestSchema>,
    options?: CallOptions,
  ): Promise<ScoreAdmissionResponse> {
    return this.#call("ScoreAdmission", ScoreAdmissionRequestSchema, ScoreAdmissionResponseSchema, request, options);
  }

  /** Lists the server's profiles and their weights. */
  listProfiles(options?: CallOptions): Promise<ListProfilesResponse> {
    return this.#call("ListProfiles", ListProfilesRequestSchema, ListProfilesResponseSchema, {}, options);
  }

  /**
   * Labels the candidates of one logged Rank decision: `decision` is the Rank response (its receipt digest
   * and request id are sent) or its decision id; `relevance` maps candidate ids to grades 0..3. The server
   * writes a memrank.feedback.v1 record to its decision log; FAILED_PRECONDITION when the log is off.
   */
  recordFeedback(
    decision: RankResponse | string,
    relevance: Record<string, number>,
    options?: CallOptions & { labeler?: string },
  ): Promise<RecordFeedbackResponse> {
    const ids = typeof decision === "string"
      ? { decisionId: decision }
      : { decisionId: decision.receipt?.digest ?? "", requestId: decision.requestId };
    const labels = Object.keys(relevance).sort().map((candidateId) => ({ candidateId, relevance: relevance[candidateId] }));
    return this.#call("RecordFeedback", RecordFeedbackRequestSchema, RecordFeedbackResponseSchema,
      { ...ids, labels, labeler: options?.labeler ?? "" }, options);
  }

  /** Closes the channel. */
  close(): void {
    this.#client.close();
  }

  async #call<I extends DescMessage, O extends DescMessage>(
    method: string,
    input: I,
    output: O,
    request: Init<I>,
    options: CallOptions = {},
  ): Promise<MessageShape<O>> {
    const message = create(input, request as MessageInitShape<I>);
    // Encoded here, once: a request over the limit is refused by name, not with grpc's "message larger than max".
    const bytes = toBinary(input, message);
    if (bytes.length > this.#maxMessageBytes) throw tooLarge(bytes.length, this.#maxMessageBytes);
    // One deadline for the call: gRPC retries UNAVAILABLE within it, as the service config says.
    const deadline = options.deadline ?? new Date(Date.now() + (options.timeoutMs ?? this.#timeoutMs));
    const metadata = options.metadata?.clone() ?? new Metadata();
    if (this.#waitForReady) metadata.setOptions({ ...metadata.getOptions(), waitForReady: true });
    return this.#unary(method, output, bytes, deadline, metadata);
  }

  #unary<O extends DescMessage>(
    method: string,
    output: O,
    message: Uint8Array,
    deadline: Date,
    metadata: Metadata,
  ): Promise<MessageShape<O>> {
    return new Promise((resolve, reject) => {
      this.#client.makeUnaryRequest(
        SERVICE + method,
        (m: Uint8Array) => Buffer.from(m.buffer, m.byteOffset, m.byteLength),
        (b: Buffer) => fromBinary(output, b),
        message,
        metadata,
        { deadline },
        (err: ServiceError | null, value?: MessageShape<O>) => {
          if (err) reject(MemrankError.fromServiceError(err));
          else if (value === undefined) reject(new MemrankError(status.INTERNAL, "empty response"));
          else resolve(value);
        },
      );
    });
  }
}

/** A client of the sidecar at address ("host:port"); the connection is made lazily. */
export function dial(address: string, options?: ClientOptions): MemrankClient {
  return new MemrankClient(address, options);
}
