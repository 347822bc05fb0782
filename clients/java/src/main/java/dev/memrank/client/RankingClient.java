package dev.memrank.client;

import com.google.gson.Gson;
import com.google.protobuf.Timestamp;
import io.grpc.ChannelCredentials;
import io.grpc.ClientInterceptor;
import io.grpc.Deadline;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.WriteBufferWaterMark;
import io.grpc.stub.AbstractStub;
import io.grpc.stub.MetadataUtils;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import memrank.v1.Ranking.FeedbackLabel;
import memrank.v1.Ranking.ListProfilesRequest;
import memrank.v1.Ranking.ListProfilesResponse;
import memrank.v1.Ranking.RankRequest;
import memrank.v1.Ranking.RankResponse;
import memrank.v1.Ranking.RecordFeedbackRequest;
import memrank.v1.Ranking.RecordFeedbackResponse;
import memrank.v1.Ranking.ScoreAdmissionRequest;
import memrank.v1.Ranking.ScoreAdmissionResponse;
import memrank.v1.RankingServiceGrpc;

/**
 * A client of one memrank sidecar ({@code memrank.v1.RankingService} over gRPC). Safe for
 * concurrent use; close it when done.
 *
 * <pre>{@code
 * try (RankingClient client = RankingClient.builder("127.0.0.1:50051").timeout(Duration.ofSeconds(2)).build()) {
 *   RankResponse resp = client.rank(Requests.rankRequest(params, memories, embeddings));
 * }
 * }</pre>
 *
 * <p>A call without an explicit {@link Deadline} gets the client's timeout (default 5 s); either
 * deadline bounds all the call's attempts together. Retries are grpc-java's own, from the gRPC
 * service config every memrank client ships ({@code clients/service_config.json}, in the jar as
 * {@code dev/memrank/client/service_config.json}): only {@code UNAVAILABLE} is retried, 3 times,
 * the delay before retry k random in [0, min(50 ms * 2^(k-1), 1 s)]; {@code retries} and {@code
 * backoff} are mapped onto it ({@link #serviceConfig(int, Duration)}). A failed call throws {@link
 * RankingException} with the code, the BadRequest field violations and the ErrorInfo reason.
 */
public final class RankingClient implements AutoCloseable {
  /** Deadline of a call that sets none, for all its attempts together. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(5);
  /** How often a call failing with UNAVAILABLE is retried: the shipped service config's maxAttempts - 1. */
  public static final int DEFAULT_RETRIES = 3;
  /** The shipped service config's initialBackoff; the cap doubles per retry, the delay random below it. */
  public static final Duration DEFAULT_BACKOFF = Duration.ofMillis(50);
  /** Largest message sent or received (64 MiB, as the Python client). */
  public static final int DEFAULT_MAX_MESSAGE_BYTES = 64 << 20;
  /** gRPC's cap on retryPolicy.maxAttempts (gRFC A6): more attempts count as 5. */
  public static final int MAX_ATTEMPTS = 5;
  /**
   * How many calls one client (one connection) carries at once: the server's default stream limit
   * per connection ({@code server.max_streams_per_connection}, 32). grpc-java honours the limit the
   * server announces: further calls wait in the client for a free stream, none is refused.
   */
  public static final int DEFAULT_CONCURRENCY = 32;
  /**
   * Bytes the connection queues for the socket before it stops taking more (Netty's high write-buffer mark; its
   * default is 64 KiB). HTTP/2 flow control hands the socket at most this much per pass, so at Netty's default a
   * 0.7 MiB request (400 memories with 384-dim embeddings) went out as 12 passes of DATA frames, each a socket
   * write and two writability events through the pipeline; at 1 MiB it is one. The request's bytes are already
   * in the transport's buffers either way, so this moves no more memory, only fewer times.
   */
  static final int WRITE_BUFFER_HIGH_BYTES = 1 << 20;
  /** The service config's resource in the jar. */
  static final String SERVICE_CONFIG = "service_config.json";

  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  private final ManagedChannel channel;
  private final RankingServiceGrpc.RankingServiceBlockingStub stub;
  private final HealthGrpc.HealthBlockingStub health;
  private final Duration timeout;
  private final int maxMessageBytes;
  private final Map<String, Object> serviceConfig;

  private RankingClient(Builder b) {
    serviceConfig = serviceConfig(b.retries, b.backoff);
    ManagedChannelBuilder<?> cb = NettyChannelBuilder.forTarget(b.target, b.credentials)
        .withOption(ChannelOption.WRITE_BUFFER_WATER_MARK,
            new WriteBufferWaterMark(WRITE_BUFFER_HIGH_BYTES / 2, WRITE_BUFFER_HIGH_BYTES))
        .maxInboundMessageSize(b.maxMessageBytes)
        .defaultServiceConfig(serviceConfig)
        .disableServiceConfigLookUp() // this config, never one from the name resolver (DNS)
        .enableRetry()
        // A request larger than the retry buffer (default 1 MiB) would be committed, never retried.
        .perRpcBufferLimit(b.maxMessageBytes)
        .retryBufferSize(Math.max(16L << 20, b.maxMessageBytes));
    if (b.authority != null) {
      cb.overrideAuthority(b.authority);
    }
    List<ClientInterceptor> interceptors = new ArrayList<>(b.interceptors);
    if (b.token != null && !b.token.isEmpty()) {
      // For servers with security.auth_token_file: sent on every call, TLS or not.
      Metadata headers = new Metadata();
      headers.put(AUTHORIZATION, "Bearer " + b.token);
      interceptors.add(MetadataUtils.newAttachHeadersInterceptor(headers));
    }
    cb.intercept(interceptors);
    channel = cb.build();
    stub = RankingServiceGrpc.newBlockingStub(channel).withMaxOutboundMessageSize(b.maxMessageBytes);
    health = HealthGrpc.newBlockingStub(channel);
    timeout = b.timeout;
    maxMessageBytes = b.maxMessageBytes;
  }

  /**
   * The gRPC service config of a client built with {@code retries} (-1: the shipped config's) and
   * {@code backoff} ({@code null}: the shipped config's): the shipped {@code service_config.json}
   * with maxAttempts = min(retries + 1, 5) (retries 0 removes the retry policy; more than 4 also
   * sets waitForReady, so calls wait for a server that is not up yet, up to their deadline) and
   * initialBackoff = backoff (maxBackoff raised to it when lower). Numbers are Doubles, as
   * grpc-java's {@code defaultServiceConfig} wants them.
   */
  @SuppressWarnings("unchecked")
  public static Map<String, Object> serviceConfig(int retries, Duration backoff) {
    Map<String, Object> config = new Gson().fromJson(ShippedConfig.TEXT, Map.class);
    for (Object m : (List<Object>) config.getOrDefault("methodConfig", List.of())) {
      Map<String, Object> method = (Map<String, Object>) m;
      Map<String, Object> policy = (Map<String, Object>) method.get("retryPolicy");
      if (policy == null) {
        continue;
      }
      if (retries == 0) {
        method.remove("retryPolicy");
        continue;
      }
      if (retries > 0) {
        policy.put("maxAttempts", (double) Math.min(retries + 1, MAX_ATTEMPTS));
        if (retries + 1 > MAX_ATTEMPTS) {
          method.put("waitForReady", true);
        }
      }
      if (backoff != null) {
        policy.put("initialBackoff", duration(backoff));
        if (seconds((String) policy.get("maxBackoff")) * 1e9 < backoff.toNanos()) {
          policy.put("maxBackoff", duration(backoff));
        }
      }
    }
    return config;
  }

  /** The shipped service config's text, read once. */
  private static final class ShippedConfig {
    static final String TEXT = read();

    private static String read() {
      try (InputStream in = RankingClient.class.getResourceAsStream(SERVICE_CONFIG)) {
        if (in == null) {
          throw new IllegalStateException("memrank: " + SERVICE_CONFIG + " is missing from the jar");
        }
        return new String(in.readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new UncheckedIOException("memrank: cannot read " + SERVICE_CONFIG, e);
      }
    }
  }

  /** A protobuf JSON Duration ("0.05s"). */
  private static String duration(Duration d) {
    return new BigDecimal(d.toNanos()).movePointLeft(9).stripTrailingZeros().toPlainString() + "s";
  }

  private static double seconds(String duration) {
    return Double.parseDouble(duration.substring(0, duration.length() - 1));
  }

  /** A builder of a client of the sidecar at {@code target} ("host:port" or any gRPC target). */
  public static Builder builder(String target) {
    return new Builder(target);
  }

  /** A client of the sidecar at {@code target} with the defaults (insecure, 5 s, the shipped retry policy). */
  public static RankingClient connect(String target) {
    return builder(target).build();
  }

  /**
   * Scores, gates, selects and orders the request's candidates. Build the request from {@link Memory} objects
   * with {@link Requests#rankRequest} (the columnar form, embeddings packed); any RankRequest is sent as it is.
   * A request over {@code maxMessageBytes} is refused before it is sent (RESOURCE_EXHAUSTED naming the setting).
   */
  public RankResponse rank(RankRequest request) {
    return rank(request, null);
  }

  /** {@link #rank(RankRequest)} under a deadline covering every attempt ({@code null}: the client's timeout). */
  public RankResponse rank(RankRequest request, Deadline deadline) {
    MessageSize.check(request, maxMessageBytes);
    return call(stub, deadline, s -> s.rank(request));
  }

  /** Scores one memory for admission: ADMIT, HOLD or REJECT. */
  public ScoreAdmissionResponse scoreAdmission(ScoreAdmissionRequest request) {
    return scoreAdmission(request, null);
  }

  /** {@link #scoreAdmission(ScoreAdmissionRequest)} under a deadline covering every attempt. */
  public ScoreAdmissionResponse scoreAdmission(ScoreAdmissionRequest request, Deadline deadline) {
    MessageSize.check(request, maxMessageBytes);
    return call(stub, deadline, s -> s.scoreAdmission(request));
  }

  /** Lists the server's profiles and their weights. */
  public ListProfilesResponse listProfiles() {
    return listProfiles(null);
  }

  /** {@link #listProfiles()} under a deadline covering every attempt. */
  public ListProfilesResponse listProfiles(Deadline deadline) {
    return call(stub, deadline, s -> s.listProfiles(ListProfilesRequest.getDefaultInstance()));
  }

  /**
   * Labels the candidates of one logged Rank decision (see {@link #feedbackFor}): the server writes
   * a memrank.feedback.v1 record to its decision log; FAILED_PRECONDITION when the log is off.
   */
  public RecordFeedbackResponse recordFeedback(RecordFeedbackRequest request) {
    return recordFeedback(request, null);
  }

  /** {@link #recordFeedback(RecordFeedbackRequest)} under a deadline covering every attempt. */
  public RecordFeedbackResponse recordFeedback(RecordFeedbackRequest request, Deadline deadline) {
    MessageSize.check(request, maxMessageBytes);
    return call(stub, deadline, s -> s.recordFeedback(request));
  }

  /**
   * The feedback on the decision {@code resp} answered: its decision id (receipt digest) and
   * request id, and one label per candidate id (relevance 0..3), in id order. Set the labeler
   * on the builder if wanted.
   */
  public static RecordFeedbackRequest.Builder feedbackFor(RankResponse resp, Map<String, Integer> relevance) {
    RecordFeedbackRequest.Builder req = RecordFeedbackRequest.newBuilder()
        .setDecisionId(resp.getReceipt().getDigest()).setRequestId(resp.getRequestId());
    new TreeMap<>(relevance).forEach((id, grade) ->
        req.addLabels(FeedbackLabel.newBuilder().setCandidateId(id).setRelevance(grade)));
    return req;
  }

  /** The server's health ({@code grpc.health.v1}): "SERVING", "NOT_SERVING", ... */
  public String health() {
    return health("", null);
  }

  /** The health status name of a service ({@code ""}: the server) under a deadline ({@code null}: the timeout). */
  public String health(String service, Deadline deadline) {
    HealthCheckRequest req = HealthCheckRequest.newBuilder().setService(service).build();
    return call(health, deadline, s -> s.check(req)).getStatus().name();
  }

  /** The gRPC service config of this client's channel (see {@link #serviceConfig(int, Duration)}). */
  public Map<String, Object> serviceConfig() {
    return serviceConfig;
  }

  /** The underlying channel, for other services on the same connection. */
  public ManagedChannel channel() {
    return channel;
  }

  /** Closes the channel, waiting up to 5 s for calls in flight. */
  @Override
  public void close() {
    channel.shutdown();
    try {
      if (!channel.awaitTermination(5, TimeUnit.SECONDS)) {
        channel.shutdownNow();
      }
    } catch (InterruptedException e) {
      channel.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }

  /** A protobuf Timestamp of an instant. */
  public static Timestamp timestamp(Instant at) {
    return Timestamp.newBuilder().setSeconds(at.getEpochSecond()).setNanos(at.getNano()).build();
  }

  /** Runs fn under the deadline (the client's timeout when null); grpc-java retries within it. */
  private <S extends AbstractStub<S>, T> T call(S stub, Deadline deadline, Function<S, T> fn) {
    Deadline d = deadline != null ? deadline
        : timeout.isZero() || timeout.isNegative() ? null : Deadline.after(timeout.toNanos(), TimeUnit.NANOSECONDS);
    try {
      return fn.apply(d == null ? stub : stub.withDeadline(d));
    } catch (StatusRuntimeException err) {
      throw RankingException.from(err);
    }
  }

  /** Options of a {@link RankingClient}. */
  public static final class Builder {
    private final String target;
    private Duration timeout = DEFAULT_TIMEOUT;
    private int retries = -1; // the service config's
    private Duration backoff; // the service config's
    private ChannelCredentials credentials = InsecureChannelCredentials.create();
    private String token;
    private String authority;
    private int maxMessageBytes = DEFAULT_MAX_MESSAGE_BYTES;
    private final List<ClientInterceptor> interceptors = new ArrayList<>();

    private Builder(String target) {
      this.target = Objects.requireNonNull(target, "target");
    }

    /** Deadline of a call that sets none, for all its attempts together (default 5 s; zero: none). */
    public Builder timeout(Duration timeout) {
      this.timeout = Objects.requireNonNull(timeout, "timeout");
      return this;
    }

    /**
     * How often a call failing with UNAVAILABLE is retried (default 3, the service config's; 0: never).
     * gRPC makes at most 5 attempts, so more than 4 gives 4 retries and also makes calls wait for the
     * connection (waitForReady) up to their deadline, to ride out a server that is not up yet.
     */
    public Builder retries(int retries) {
      if (retries < 0) {
        throw new IllegalArgumentException("retries must be >= 0, got " + retries);
      }
      this.retries = retries;
      return this;
    }

    /**
     * The service config's initialBackoff (default 50 ms): the delay before retry k is random in
     * [0, min(backoff * 2^(k-1), maxBackoff)], maxBackoff raised to backoff when lower.
     */
    public Builder backoff(Duration backoff) {
      if (Objects.requireNonNull(backoff, "backoff").isZero() || backoff.isNegative()) {
        throw new IllegalArgumentException("backoff must be > 0, got " + backoff);
      }
      this.backoff = backoff;
      return this;
    }

    /** Sends {@code authorization: Bearer <token>} on every call (servers with security.auth_token_file). */
    public Builder token(String token) {
      this.token = token;
      return this;
    }

    /** TLS, trusting the server certificates signed by the CA in a PEM file ({@code null}: the system's CAs). */
    public Builder tls(File caPem) {
      try {
        TlsChannelCredentials.Builder tls = TlsChannelCredentials.newBuilder();
        if (caPem != null) {
          tls.trustManager(caPem);
        }
        return credentials(tls.build());
      } catch (IOException e) {
        throw new UncheckedIOException("memrank: cannot read " + caPem, e);
      }
    }

    /** Mutual TLS: trust the CA in {@code caPem} ({@code null}: the system's), present a certificate chain and its PKCS#8 key (PEM). */
    public Builder mtls(File caPem, File certChainPem, File privateKeyPem) {
      try {
        TlsChannelCredentials.Builder tls = TlsChannelCredentials.newBuilder().keyManager(certChainPem, privateKeyPem);
        if (caPem != null) {
          tls.trustManager(caPem);
        }
        return credentials(tls.build());
      } catch (IOException e) {
        throw new UncheckedIOException("memrank: cannot read the TLS files", e);
      }
    }

    /** Any channel credentials (default: insecure, for a local sidecar). */
    public Builder credentials(ChannelCredentials credentials) {
      this.credentials = Objects.requireNonNull(credentials, "credentials");
      return this;
    }

    /** The authority (TLS server name) to use instead of the target's host. */
    public Builder authority(String authority) {
      this.authority = authority;
      return this;
    }

    /**
     * Largest message sent or received (default 64 MiB). A larger request is refused before it is sent, and
     * a larger response, with RESOURCE_EXHAUSTED naming this setting; the server's own limit is
     * server.max_message_bytes (64 MiB by default), named when it refuses a request.
     */
    public Builder maxMessageBytes(int bytes) {
      if (bytes < 1) {
        throw new IllegalArgumentException("maxMessageBytes must be >= 1, got " + bytes);
      }
      this.maxMessageBytes = bytes;
      return this;
    }

    /** Client interceptors, run once per call (gRPC's retries happen below them, replaying their headers). */
    public Builder intercept(ClientInterceptor... interceptors) {
      this.interceptors.addAll(List.of(interceptors));
      return this;
    }

    /** The client; the connection is made lazily, on the first call. */
    public RankingClient build() {
      return new RankingClient(this);
    }
  }
}
