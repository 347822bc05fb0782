// A first call from Java: ranks three memories with the agent-observer profile on a running sidecar
// (memrank serve). Compiled by `mvn verify` (test sources); clients/test.sh runs it against a live server:
//   java -cp target/classes:target/test-classes:$(cat target/classpath.txt) dev.memrank.example.FirstCall [host:port]
// (default: $MEMRANK_ADDR, else 127.0.0.1:50051; target/classpath.txt from
// `mvn dependency:build-classpath -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=runtime`).
package dev.memrank.example;

// --8<-- [start:call]
import dev.memrank.client.Memory;
import dev.memrank.client.RankingClient;
import dev.memrank.client.RankingException;
import dev.memrank.client.Requests;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import memrank.v1.Ranking.DroppedMemory;
import memrank.v1.Ranking.Placement;
import memrank.v1.Ranking.RankRequest;
import memrank.v1.Ranking.RankResponse;
import memrank.v1.Ranking.RankedMemory;

public final class FirstCall {
  public static void main(String[] args) {
    String target = args.length > 0 ? args[0]
        : System.getenv().getOrDefault("MEMRANK_ADDR", "127.0.0.1:50051");
    List<Memory> memories = List.of(
        Memory.builder("m1").kind("fact").content("The ledger runs on Postgres 16").retrievalScore(0.9).build(),
        Memory.builder("m2").kind("decision").content("We chose Postgres for the ledger").retrievalScore(0.4).build(),
        Memory.builder("m3").kind("preference").content("User prefers short answers").retrievalScore(0.2).build());
    try (RankingClient client = RankingClient.builder(target).timeout(Duration.ofSeconds(2)).build()) {
      RankRequest request = Requests.rankRequest(RankRequest.newBuilder()
          .setQuery("which database runs the ledger").setProfile("agent-observer")
          .setReferenceTime(RankingClient.timestamp(Instant.now()))
          .setPlacement(Placement.PLACEMENT_EDGES), memories, null); // null: no embeddings
      RankResponse resp = client.rank(request);
      for (RankedMemory m : resp.getSelectedList()) { // placement order
        System.out.printf("position %d rank %d %s final_score %.4f%n", m.getPosition(), m.getRank(), m.getId(),
            m.getBreakdown().getFinalScore());
      }
      for (DroppedMemory d : resp.getDroppedList()) {
        System.out.println("dropped " + d.getId() + ": " + d.getReason());
      }
    } catch (RankingException e) { // e.g. INVALID_ARGUMENT [columns.ids[1]] INVALID_REQUEST
      System.err.println("rank failed: code=" + e.codeName() + " fields=" + e.fields() + " reason=" + e.reason());
      System.exit(1);
    }
  }
}
// --8<-- [end:call]
