package dev.memrank.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import memrank.v1.Ranking.ExplainLevel;
import memrank.v1.Ranking.RankRequest;
import memrank.v1.Ranking.RankResponse;
import org.junit.jupiter.api.Test;

/**
 * A message over a size limit fails with RESOURCE_EXHAUSTED naming the limit that refused it and the setting
 * that raises it (issue #41), not grpc's "larger than max": this client's maxMessageBytes (request or response)
 * or the server's server.max_message_bytes (a server of our own, started with a 64 KiB limit).
 */
class MessageSizeTest {
  private static final Pattern PORT = Pattern.compile("\"msg\": \"serving\".*\"port\": (\\d+)");

  /** Live.good() with its first memory's content about {@code bytes} long. */
  static RankRequest large(int bytes) {
    return Live.good().toBuilder().setCandidates(0, Live.candidate("m1", "ledger ".repeat(bytes / 7))).build();
  }

  @Test
  void requestOverTheClientsLimit() {
    RankRequest req = large(100_000);
    try (RankingClient c = RankingClient.builder(Live.addr()).retries(0).maxMessageBytes(50_000)
        .timeout(Duration.ofSeconds(20)).build()) {
      long start = System.nanoTime();
      RankingException e = assertThrows(RankingException.class, () -> c.rank(req));
      // Refused at once: grpc-java's own refusal would leave the call blocked past its deadline (grpc-java#12109).
      assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5), "took " + (System.nanoTime() - start));
      assertEquals(Status.Code.RESOURCE_EXHAUSTED, e.code());
      String msg = e.getMessage();
      assertTrue(msg.contains("the request is " + req.getSerializedSize() + " bytes, over this client's "
          + "maxMessageBytes, 50000 bytes"), msg);
      assertTrue(msg.contains("maxMessageBytes(bytes)") && msg.contains("server.max_message_bytes"), msg);
      assertTrue(!msg.contains("larger than max"), msg);
    }
  }

  @Test
  void responseOverTheClientsLimit() {
    // 40 memories at EXPLAIN_LEVEL_FULL: every one answered with its breakdown, far larger than the request.
    RankRequest.Builder b = Live.good().toBuilder().clearCandidates().setExplain(ExplainLevel.EXPLAIN_LEVEL_FULL);
    for (int i = 0; i < 40; i++) {
      b.addCandidates(Live.candidate("m" + i, "the ledger runs on postgres " + i));
    }
    RankRequest req = b.build();
    int size;
    try (RankingClient c = RankingClient.builder(Live.addr()).build()) {
      size = c.rank(req).getSerializedSize();
    }
    int limit = req.getSerializedSize() + 100;
    assertTrue(size > limit, "response " + size + " not over " + limit);
    try (RankingClient c = RankingClient.builder(Live.addr()).retries(0).maxMessageBytes(limit).build()) {
      RankingException e = assertThrows(RankingException.class, () -> c.rank(req));
      assertEquals(Status.Code.RESOURCE_EXHAUSTED, e.code());
      assertTrue(e.getMessage().contains("the response is " + size + " bytes, over this client's maxMessageBytes, "
          + limit + " bytes: raise it (RankingClient.builder(target).maxMessageBytes(bytes))"), e.getMessage());
    }
  }

  @Test
  void requestOverTheServersLimit() throws Exception {
    Live.addr(); // a live server's environment: python3 with memrank
    List<String> cmd = List.of(System.getenv().getOrDefault("MEMRANK_PYTHON", "python3"), "-m", "memrank.cli",
        "serve", "--address", "127.0.0.1:0", "--metrics-port", "0");
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD);
    pb.environment().put("MEMRANK_MAX_MESSAGE_BYTES", "65536");
    Process server = pb.start();
    try {
      String port = servingPort(server);
      RankRequest req = large(100_000);
      try (RankingClient c = RankingClient.builder("127.0.0.1:" + port).retries(0).build()) {
        RankingException e = assertThrows(RankingException.class, () -> c.rank(req));
        assertEquals(Status.Code.RESOURCE_EXHAUSTED, e.code());
        assertTrue(e.getMessage().contains("the request is " + req.getSerializedSize() + " bytes, over the "
            + "server's server.max_message_bytes (MEMRANK_MAX_MESSAGE_BYTES), 65536 bytes"), e.getMessage());
        RankResponse ok = c.rank(Live.good()); // the server still serves requests within its limit
        assertEquals(2, ok.getSelectedCount() + ok.getDroppedCount());
      }
    } finally {
      server.destroy(); // SIGTERM: the server drains and exits
      if (!server.waitFor(20, TimeUnit.SECONDS)) {
        server.destroyForcibly();
      }
    }
  }

  /** The port of the server's "serving" log line (stderr), read as it starts. */
  private static String servingPort(Process server) throws IOException {
    BufferedReader err = new BufferedReader(new InputStreamReader(server.getErrorStream(), StandardCharsets.UTF_8));
    List<String> seen = new ArrayList<>();
    for (String line; (line = err.readLine()) != null; ) {
      Matcher m = PORT.matcher(line);
      if (m.find()) {
        Thread drain = new Thread(() -> err.lines().forEach(l -> { }));
        drain.setDaemon(true);
        drain.start();
        return m.group(1);
      }
      seen.add(line);
    }
    throw new IllegalStateException("memrank serve exited before serving: " + String.join("\n", seen));
  }
}
