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
import { MemrankError } from "./errors.js";

/** Options of a MemrankClient. */
export interface ClientOptions {
  /** Deadline of a call that sets none, in milliseconds. Default 5000. */
  timeoutMs?: number;
  /** How often a call failing with UNAVAILABLE is retried. Default 3. */
  retries?: number;
  /** First retry delay in milliseconds; doubles per attempt, with jitter. Default 50. */
  backoffMs?: number;
  /** Channel credentials. Default: insecure (a local sidecar). */
  credentials?: ChannelCredentials;
  /** Extra grpc-js channel options. */
  channelOptions?: ChannelOptions;
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
  readonly #retries: number;
  readonly #backoffMs: number;

  constructor(address: string, options: ClientOptions = {}) {
    this.#client = new Client(address, options.credentials ?? credentials.createInsecure(), options.channelOptions);
    this.#timeoutMs = options.timeoutMs ?? 5000;
    this.#retries = options.retries ?? 3;
    this.#backoffMs = options.backoffMs ?? 50;
  }

  /** Scores, gates, selects and orders the request's candidates. */
  rank(request: Init<typeof RankRequestSchema>, options?: CallOptions): Promise<RankResponse> {
    return this.#call("Rank", RankRequestSchema, RankResponseSchema, request, options);
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
    for (let attempt = 0; ; attempt++) {
      const deadline = options.deadline ?? new Date(Date.now() + (options.timeoutMs ?? this.#timeoutMs));
      try {
        return await this.#unary(method, input, output, message, deadline, options.metadata ?? new Metadata());
      } catch (err) {
        const retryable = err instanceof MemrankError && err.code === status.UNAVAILABLE;
        const delay = this.#backoffMs * 2 ** attempt * (0.5 + Math.random());
        if (!retryable || attempt >= this.#retries || Date.now() + delay >= deadline.getTime()) throw err;
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  #unary<I extends DescMessage, O extends DescMessage>(
    method: string,
    input: I,
    output: O,
    message: MessageShape<I>,
    deadline: Date,
    metadata: Metadata,
  ): Promise<MessageShape<O>> {
    return new Promise((resolve, reject) => {
      this.#client.makeUnaryRequest(
        SERVICE + method,
        (m: MessageShape<I>) => Buffer.from(toBinary(input, m)),
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
