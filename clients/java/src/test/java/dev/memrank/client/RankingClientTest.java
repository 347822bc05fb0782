package dev.memrank.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.Gson;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientStreamTracer;
import io.grpc.Deadline;
import io.grpc.InsecureServerCredentials;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.TlsServerCredentials;
import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import memrank.v1.Ranking.AdmissionDecision;
import memrank.v1.Ranking.Profile;
import memrank.v1.Ranking.RankResponse;
import memrank.v1.Ranking.RecordFeedbackRequest;
import memrank.v1.Ranking.RecordFeedbackResponse;
import memrank.v1.Ranking.RankedMemory;
import memrank.v1.Ranking.ScoreAdmissionRequest;
import memrank.v1.Ranking.ScoreAdmissionResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client's surface against the live server at MEMRANK_ADDR: typed errors with the server's
 * own rich details, deadlines, the bearer token, retries only on UNAVAILABLE (grpc-java's, from the
 * shared service config), TLS and mutual TLS.
 * Where the real server cannot be asked to fail or stall, a {@link Proxy} in front of it does.
 */
class RankingClientTest {

  /**
   * Counts the attempts the client makes: interceptors run once per call, above grpc-java's
   * retries, but a stream tracer is made for every attempt (a refused one included).
   */
  static final class Attempts implements ClientInterceptor {
    final AtomicInteger n = new AtomicInteger();
    private final ClientStreamTracer.Factory tracers = new ClientStreamTracer.Factory() {
      @Override
      public ClientStreamTracer newClientStreamTracer(ClientStreamTracer.StreamInfo info, Metadata headers) {
        n.incrementAndGet();
        return new ClientStreamTracer() {};
      }
    };

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
      return next.newCall(method, options.withStreamTracerFactory(tracers));
    }
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> rankingMethod(Map<String, Object> config) {
    for (Object m : (List<Object>) config.get("methodConfig")) {
      Map<String, Object> method = (Map<String, Object>) m;
      for (Object n : (List<Object>) method.get("name")) {
        if ("memrank.v1.RankingService".equals(((Map<String, Object>) n).get("service"))) {
          return method;
        }
      }
    }
    throw new AssertionError("no method config for memrank.v1.RankingService in " + config);
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> policy(Map<String, Object> config) {
    return (Map<String, Object>) rankingMethod(config).get("retryPolicy");
  }

  @Test
  @SuppressWarnings("unchecked")
  void theServiceConfigIsTheSharedFileAndSaysWhatTheDefaultsAre() throws IOException {
    String shared = Files.readString(Path.of("..", "service_config.json"));
    Map<String, Object> shipped = RankingClient.serviceConfig(-1, null);
    assertEquals(new Gson().fromJson(shared, Map.class), shipped, "the jar's copy is clients/service_config.json");
    Map<String, Object> p = policy(shipped);
    assertEquals((double) (RankingClient.DEFAULT_RETRIES + 1), p.get("maxAttempts"));
    assertEquals("0.05s", p.get("initialBackoff"));
    assertEquals(Duration.ofMillis(50), RankingClient.DEFAULT_BACKOFF);
    assertEquals(List.of("UNAVAILABLE"), p.get("retryableStatusCodes"));
    try (RankingClient client = RankingClient.connect("127.0.0.1:1")) {
      assertEquals(shipped, client.serviceConfig());
    }
  }

  @Test
  void retriesAndBackoffMapOntoTheServiceConfig() {
    assertEquals(null, policy(RankingClient.serviceConfig(0, null)), "retries 0: no retry policy");
    Map<String, Object> longer = RankingClient.serviceConfig(10, Duration.ofSeconds(2));
    assertEquals(5.0, policy(longer).get("maxAttempts"));
    assertEquals(Boolean.TRUE, rankingMethod(longer).get("waitForReady"));
    assertEquals("2s", policy(longer).get("initialBackoff"));
    assertEquals("2s", policy(longer).get("maxBackoff"));
    Map<String, Object> shorter = RankingClient.serviceConfig(2, Duration.ofMillis(10));
    assertEquals(3.0, policy(shorter).get("maxAttempts"));
    assertEquals(null, rankingMethod(shorter).get("waitForReady"));
    assertEquals("0.01s", policy(shorter).get("initialBackoff"));
    assertEquals("1s", policy(shorter).get("maxBackoff"));
  }

  private static List<String> ids(RankResponse resp) {
    return resp.getSelectedList().stream().map(RankedMemory::getId).toList();
  }

  @Test
  void listProfilesScoreAdmissionAndHealth() {
    try (RankingClient client = RankingClient.connect(Live.addr())) {
      Map<String, Boolean> compat = client.listProfiles().getProfilesList().stream()
          .collect(Collectors.toMap(Profile::getName, Profile::getCompatibility));
      assertEquals(Boolean.TRUE, compat.get("agent-observer"), compat.toString());
      assertEquals(Boolean.TRUE, compat.get("generative-agents"), compat.toString());

      ScoreAdmissionResponse admission = client.scoreAdmission(ScoreAdmissionRequest.newBuilder()
          .setReferenceTime(RankingClient.timestamp(Live.AT))
          .setCandidate(Live.candidate("a1", "The user is allergic to peanuts.").toBuilder().setImportance(0.9)
              .setCreatedAt(RankingClient.timestamp(Live.AT.minusSeconds(3600))))
          .build());
      assertNotEquals(AdmissionDecision.ADMISSION_DECISION_UNSPECIFIED, admission.getDecision());
      assertTrue(admission.getScore() >= 0 && admission.getScore() <= 1, "score " + admission.getScore());

      RankingException e = assertThrows(RankingException.class,
          () -> client.scoreAdmission(ScoreAdmissionRequest.getDefaultInstance()));
      assertEquals(Status.Code.INVALID_ARGUMENT, e.code());

      assertEquals("SERVING", client.health());
      assertEquals("SERVING", client.health("memrank.v1.RankingService", null));
    }
  }

  /**
   * Labels a decision the server logged: with the decision log on (clients/test.sh turns it on)
   * the feedback, labeler "java", is accepted; with it off, FAILED_PRECONDITION.
   */
  @Test
  void recordFeedbackOnALoggedDecision() {
    try (RankingClient client = RankingClient.connect(Live.addr())) {
      RankResponse resp = client.rank(Live.good().toBuilder().setRequestId("java-feedback").setLogDecision(true)
          .build());
      RecordFeedbackRequest req = RankingClient.feedbackFor(resp, Map.of("m2", 0, "m1", 3)).setLabeler("java").build();
      assertEquals(resp.getReceipt().getDigest(), req.getDecisionId());
      assertEquals(List.of("m1", "m2"), req.getLabelsList().stream().map(l -> l.getCandidateId()).toList(), "id order");
      if (!resp.getDecisionLogged()) {
        RankingException e = assertThrows(RankingException.class, () -> client.recordFeedback(req));
        assertEquals(Status.Code.FAILED_PRECONDITION, e.code(), "decision log off: " + e.getMessage());
        return;
      }
      RecordFeedbackResponse fb = client.recordFeedback(req);
      assertEquals(64, fb.getFeedbackId().length(), fb.toString());
      assertEquals(2, fb.getLabelCount());
      RankingException e = assertThrows(RankingException.class,
          () -> client.recordFeedback(RankingClient.feedbackFor(resp, Map.of("m1", 9)).build()));
      assertEquals(Status.Code.INVALID_ARGUMENT, e.code());
      assertTrue(e.hasField("labels[0].relevance"), e.fields().toString());
    }
  }

  @Test
  void badRequestIsTypedWithTheServersDetailsAndNotRetried() {
    Attempts attempts = new Attempts();
    try (RankingClient client = RankingClient.builder(Live.addr()).backoff(Duration.ofMillis(1))
        .intercept(attempts).build()) {
      RankingException e = assertThrows(RankingException.class, () -> client.rank(Live.duplicateId()));
      assertEquals(Status.Code.INVALID_ARGUMENT, e.code());
      assertEquals("INVALID_ARGUMENT", e.codeName());
      assertEquals(List.of("candidates[1].id"), e.fields());
      assertTrue(e.hasField("candidates[1].id"));
      assertFalse(e.violations().get(0).description().isEmpty());
      assertEquals("INVALID_REQUEST", e.reason());
      assertEquals("memrank.v1", e.domain());
      assertEquals("candidates[1].id", e.errorInfoMetadata().get("fields"));
      assertTrue(e.getMessage().startsWith("INVALID_ARGUMENT: "), e.getMessage());
      assertTrue(e.getMessage().contains("[candidates[1].id: "), e.getMessage());
      assertEquals(Status.Code.INVALID_ARGUMENT, Status.fromThrowable(e).getCode(), "the cause keeps the status");
      assertEquals(1, attempts.n.get(), "INVALID_ARGUMENT is not retried");
    }
  }

  @Test
  void unknownProfileHasItsReason() {
    try (RankingClient client = RankingClient.connect(Live.addr())) {
      RankingException e = assertThrows(RankingException.class,
          () -> client.rank(Live.good().toBuilder().setProfile("no-such-profile").build()));
      assertEquals(Status.Code.INVALID_ARGUMENT, e.code());
      assertEquals("UNKNOWN_PROFILE", e.reason());
    }
  }

  @Test
  void retriesUnavailableThenGetsTheServersAnswer() throws Exception {
    try (Proxy proxy = new Proxy(Live.addr(), InsecureServerCredentials.create());
        RankingClient client = RankingClient.builder(proxy.address()).backoff(Duration.ofMillis(1)).build()) {
      proxy.failFirst = 2;
      RankResponse resp = client.rank(Live.good());
      assertEquals("java-good", resp.getRequestId());
      assertEquals(List.of("m1", "m2"), ids(resp));
      assertEquals(3, proxy.calls.get());
    }
  }

  @Test
  void givesUpAfterTheConfiguredRetries() throws Exception {
    try (Proxy proxy = new Proxy(Live.addr(), InsecureServerCredentials.create());
        RankingClient client = RankingClient.builder(proxy.address()).backoff(Duration.ofMillis(1)).retries(1)
            .build()) {
      proxy.failFirst = 100;
      RankingException e = assertThrows(RankingException.class, () -> client.rank(Live.good()));
      assertEquals(Status.Code.UNAVAILABLE, e.code());
      assertEquals("proxy: failing call 2", e.serverMessage());
      assertEquals(2, proxy.calls.get());
    }
  }

  @Test
  void aRefusedConnectionIsRetriedAndEndsWithinTheDeadline() throws IOException {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    Attempts attempts = new Attempts();
    try (RankingClient client = RankingClient.builder("127.0.0.1:" + port).retries(2)
        .backoff(Duration.ofMillis(1)).intercept(attempts).build()) {
      RankingException e = assertThrows(RankingException.class, () -> client.rank(Live.good()));
      assertEquals(Status.Code.UNAVAILABLE, e.code());
      assertEquals(3, attempts.n.get(), "nothing listens: every attempt UNAVAILABLE, retried twice");
    }
    // 10 retries: waitForReady, so the call waits for the server until its deadline ends it.
    try (RankingClient client = RankingClient.builder("127.0.0.1:" + port).retries(10)
        .timeout(Duration.ofMillis(500)).build()) {
      long start = System.nanoTime();
      RankingException e = assertThrows(RankingException.class, () -> client.rank(Live.good()));
      long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertEquals(Status.Code.DEADLINE_EXCEEDED, e.code(), e.getMessage());
      assertTrue(elapsedMs < 1500, "the call outlived its 500 ms deadline: " + elapsedMs + " ms");
    }
  }

  /**
   * Every attempt answers UNAVAILABLE after 300 ms: five attempts would take at least 1.5 s, so a
   * call ending before that was cut by its 1 s deadline, with a retry in it (margins wide enough for a
   * loaded machine, where the first attempt also pays for the connection).
   */
  @Test
  void theDeadlineBoundsEveryAttempt() throws Exception {
    try (Proxy proxy = new Proxy(Live.addr(), InsecureServerCredentials.create());
        RankingClient client = RankingClient.builder(proxy.address()).timeout(Duration.ofMillis(1000))
            .retries(4).backoff(Duration.ofMillis(1)).build()) {
      proxy.failFirst = 100;
      proxy.failAfterMs = 300;
      long start = System.nanoTime();
      RankingException e = assertThrows(RankingException.class, () -> client.rank(Live.good()));
      long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertTrue(e.code() == Status.Code.DEADLINE_EXCEEDED || e.code() == Status.Code.UNAVAILABLE, e.getMessage());
      assertTrue(elapsedMs < 1500, "the call outlived its 1 s deadline: " + elapsedMs + " ms");
      int calls = proxy.calls.get();
      assertTrue(calls >= 2 && calls <= 4, "want 2 to 4 attempts within the deadline, the server saw " + calls);
    }
  }

  @Test
  void theDefaultDeadlineEndsAStalledCallWithoutRetry() throws Exception {
    try (Proxy proxy = new Proxy(Live.addr(), InsecureServerCredentials.create());
        RankingClient client = RankingClient.builder(proxy.address()).timeout(Duration.ofMillis(200)).build()) {
      proxy.hang = true;
      long start = System.nanoTime();
      RankingException e = assertThrows(RankingException.class, () -> client.rank(Live.good()));
      long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertEquals(Status.Code.DEADLINE_EXCEEDED, e.code());
      assertTrue(elapsedMs >= 150 && elapsedMs < 3000, "ended after " + elapsedMs + " ms");
      assertEquals(1, proxy.calls.get(), "DEADLINE_EXCEEDED is not retried");
      long left = proxy.deadlines.get(0);
      assertTrue(left > 0 && left <= TimeUnit.MILLISECONDS.toNanos(200), "the server saw " + left + " ns left");
    }
  }

  @Test
  void everyCallCarriesADeadlineAndAnExplicitOneWins() throws Exception {
    try (Proxy proxy = new Proxy(Live.addr(), InsecureServerCredentials.create());
        RankingClient client = RankingClient.connect(proxy.address())) {
      assertEquals(List.of("m1", "m2"), ids(client.rank(Live.good())));
      client.rank(Live.good(), Deadline.after(30, TimeUnit.SECONDS));
      long five = TimeUnit.SECONDS.toNanos(5);
      assertTrue(proxy.deadlines.get(0) > 0 && proxy.deadlines.get(0) <= five, "default: " + proxy.deadlines);
      assertTrue(proxy.deadlines.get(1) > five, "explicit 30 s: " + proxy.deadlines);
    }
    try (RankingClient client = RankingClient.connect(Live.addr())) {
      RankingException e = assertThrows(RankingException.class,
          () -> client.rank(Live.good(), Deadline.after(-1, TimeUnit.SECONDS)));
      assertEquals(Status.Code.DEADLINE_EXCEEDED, e.code(), "a passed deadline");
    }
  }

  @Test
  void theBearerTokenGoesOnEveryAttempt() throws Exception {
    try (Proxy proxy = new Proxy(Live.addr(), InsecureServerCredentials.create())) {
      proxy.failFirst = 1;
      try (RankingClient client = RankingClient.builder(proxy.address()).backoff(Duration.ofMillis(1))
          .token("s3cret").build()) {
        assertEquals(List.of("m1", "m2"), ids(client.rank(Live.good())));
      }
      try (RankingClient client = RankingClient.connect(proxy.address())) {
        client.rank(Live.good());
      }
      assertEquals(List.of("Bearer s3cret", "Bearer s3cret", ""), proxy.authorizations);
    }
  }

  @Test
  void tlsAndMutualTls(@TempDir Path dir) throws Exception {
    String addr = Live.addr();
    List<Certs> pairs = Certs.make(dir, "server", "client");
    Certs server = pairs.get(0);
    Certs client = pairs.get(1);
    File serverCa = server.cert().toFile();

    TlsServerCredentials tls = (TlsServerCredentials) TlsServerCredentials.newBuilder()
        .keyManager(server.cert().toFile(), server.key().toFile()).build();
    try (Proxy proxy = new Proxy(addr, tls);
        RankingClient c = RankingClient.builder(proxy.address()).tls(serverCa).build()) {
      assertEquals(List.of("m1", "m2"), ids(c.rank(Live.good())));
      RankingException e = assertThrows(RankingException.class, () -> c.rank(Live.duplicateId()));
      assertTrue(e.hasField("candidates[1].id"), "details survive TLS: " + e.fields());
    }

    TlsServerCredentials mtls = (TlsServerCredentials) TlsServerCredentials.newBuilder()
        .keyManager(server.cert().toFile(), server.key().toFile())
        .trustManager(client.cert().toFile())
        .clientAuth(TlsServerCredentials.ClientAuth.REQUIRE).build();
    try (Proxy proxy = new Proxy(addr, mtls)) {
      try (RankingClient c = RankingClient.builder(proxy.address())
          .mtls(serverCa, client.cert().toFile(), client.key().toFile()).build()) {
        assertEquals(List.of("m1", "m2"), ids(c.rank(Live.good())));
      }
      try (RankingClient c = RankingClient.builder(proxy.address()).tls(serverCa).retries(0).build()) {
        RankingException e = assertThrows(RankingException.class, () -> c.rank(Live.good()));
        assertEquals(Status.Code.UNAVAILABLE, e.code(), "no client certificate: " + e.getMessage());
      }
      assertEquals(1, proxy.calls.get(), "only the call with a client certificate got through");
    }
  }
}
