package dev.memrank.client;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import memrank.v1.Ranking.Candidate;
import memrank.v1.Ranking.RankRequest;
import org.junit.jupiter.api.Test;

/**
 * Four times the default concurrency on one client (one connection) against the live server at
 * MEMRANK_ADDR: every call succeeds (issue #32, item 6). Retries are off, so a refused stream
 * would show as UNAVAILABLE instead of hiding behind a retry.
 */
class ConcurrencyTest {
  private static final int CALLERS = 4 * RankingClient.DEFAULT_CONCURRENCY;
  private static final int CALLS_EACH = 3;

  /** 40 candidates of some text: enough work that calls overlap. */
  private static RankRequest request() {
    RankRequest.Builder b = RankRequest.newBuilder().setQuery("green tea");
    for (int i = 0; i < 40; i++) {
      b.addCandidates(Candidate.newBuilder().setId("m" + i)
          .setContent("the user prefers green tea ".repeat(20)).setRetrievalScore(0.2 + i / 100.0));
    }
    return b.build();
  }

  @Test
  void fourTimesTheDefaultConcurrencyOnOneConnectionLosesNoCall() throws InterruptedException {
    String addr = Live.addr();
    RankRequest request = request();
    Map<String, Integer> codes = new TreeMap<>();
    CountDownLatch start = new CountDownLatch(1);
    // A generous deadline: the machine may be loaded; a lost call is a failure, a slow one is not.
    try (RankingClient client = RankingClient.builder(addr).retries(0).timeout(Duration.ofMinutes(2)).build()) {
      List<Thread> threads = new ArrayList<>();
      for (int t = 0; t < CALLERS; t++) {
        Thread thread = new Thread(() -> {
          try {
            start.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
          }
          for (int i = 0; i < CALLS_EACH; i++) {
            String code = "OK";
            try {
              client.rank(request);
            } catch (RankingException e) {
              code = (e.code() + " " + e.getMessage());
              code = code.substring(0, Math.min(120, code.length()));
            }
            synchronized (codes) {
              codes.merge(code, 1, Integer::sum);
            }
          }
        });
        thread.start();
        threads.add(thread);
      }
      start.countDown();
      for (Thread thread : threads) {
        thread.join();
      }
    }
    assertEquals(Map.of("OK", CALLERS * CALLS_EACH), codes);
  }
}
