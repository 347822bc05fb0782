package dev.memrank.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import memrank.v1.Ranking.Budget;
import memrank.v1.Ranking.RankRequest;
import org.junit.jupiter.api.Test;

/**
 * A request of 400 memories with 384-dim embeddings (about 0.6 MiB) leaves in one HTTP/2 DATA frame, not in
 * slices of Netty's default 64 KiB write-buffer mark: read from grpc-java's own frame log (Netty's
 * Http2FrameLogger on the NettyClientHandler logger), against the live server, which allows 4 MiB frames.
 */
class WriteBufferTest {
  private static final Pattern DATA = Pattern.compile("OUTBOUND DATA: streamId=\\d+ .*length=(\\d+)");

  @Test
  void aLargeRequestLeavesInOneDataFrame() {
    List<Memory> memories = new ArrayList<>();
    float[][] embeddings = new float[400][384];
    for (int i = 0; i < 400; i++) {
      memories.add(Memory.builder("m" + i).kind("fact").content("the ledger runs on postgres " + i)
          .retrievalScore(0.5).build());
      embeddings[i][i % 384] = 1;
    }
    RankRequest req = Requests.rankRequest(RankRequest.newBuilder().setQuery("postgres ledger")
        .setReferenceTime(RankingClient.timestamp(Live.AT)).setBudget(Budget.newBuilder().setMaxItems(20)),
        memories, embeddings);
    assertTrue(req.getSerializedSize() > 400 * 384 * 4, "size " + req.getSerializedSize());

    Logger frames = Logger.getLogger("io.grpc.netty.shaded.io.grpc.netty.NettyClientHandler");
    List<Integer> lengths = new ArrayList<>();
    Handler capture = new Handler() {
      @Override
      public void publish(LogRecord r) {
        Matcher m = DATA.matcher(String.valueOf(r.getMessage()));
        if (m.find()) {
          synchronized (lengths) {
            lengths.add(Integer.parseInt(m.group(1)));
          }
        }
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    Level was = frames.getLevel();
    frames.setLevel(Level.ALL);
    frames.addHandler(capture);
    try (RankingClient c = RankingClient.builder(Live.addr()).timeout(Duration.ofSeconds(30)).build()) {
      assertTrue(c.rank(req).getSelectedCount() > 0);
    } finally {
      frames.removeHandler(capture);
      frames.setLevel(was);
    }
    synchronized (lengths) {
      List<Integer> carrying = lengths.stream().filter(n -> n > 0).toList();
      // The gRPC message (a 5-byte prefix and the request) in one frame; an empty END_STREAM frame may follow.
      assertEquals(List.of(5 + req.getSerializedSize()), carrying, "DATA frame lengths " + lengths);
    }
  }
}
