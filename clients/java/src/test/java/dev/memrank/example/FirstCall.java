// A first call from Java: ranks three memories with the agent-observer profile on a running sidecar
// (memrank serve). Compiled by `mvn verify` (test sources); clients/test.sh runs it against a live server:
//   java -cp target/classes:target/test-classes:$(cat target/classpath.txt) dev.memrank.example.FirstCall [host:port]
// (default: $MEMRANK_ADDR, else 127.0.0.1:50051; target/classpath.txt from
// `mvn dependency:build-classpath -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=runtime`).
package dev.memrank.example;

// --8<-- [start:call]
import dev.memrank.client.RankingClient;
import dev.memrank.client.RankingException;
import java.time.Duration;
import java.time.Instant;
import memrank.v1.Ranking.Candidate;
import memrank.v1.Ranking.DroppedMemory;
import memrank.v1.Ranking.Placement;
import memrank.v1.Ranking.RankRequest;
import memrank.v1.Ranking.RankResponse;
import memrank.v1.Ranking.RankedMemory;

public final class FirstCall {
  public static void main(String[] args) {
    String target = args.length > 0 ? args[0]
        : System.getenv().getOrDefault("MEMRANK_ADDR", "127.0.0.1:50051");
    try (RankingClient client = RankingClient.builder(target).timeout(Duration.ofSeconds(2)).build()) {
      RankResponse resp = client.rank(RankRequest.newBuilder()
          .setQuery("which database runs the ledger").setProfile("agent-observer")
          .setReferenceTime(RankingClient.timestamp(Instant.now()))
          .setPlacement(Placement.PLACEMENT_EDGES)
          .addCandidates(Candidate.newBuilder().setId("m1").setKind("fact")
              .setContent("The ledger runs on Postgres 16").setRetrievalScore(0.9))
          .addCandidates(Candidate.newBuilder().setId("m2").setKind("decision")
              .setContent("We chose Postgres for the ledger").setRetrievalScore(0.4))
          .addCandidates(Candidate.newBuilder().setId("m3").setKind("preference")
              .setContent("User prefers short answers").setRetrievalScore(0.2))
          .build());
      for (RankedMemory m : resp.getSelectedList()) { // placement order
        System.out.printf("position %d rank %d %s final_score %.4f%n", m.getPosition(), m.getRank(), m.getId(),
            m.getBreakdown().getFinalScore());
      }
      for (DroppedMemory d : resp.getDroppedList()) {
        System.out.println("dropped " + d.getId() + ": " + d.getReason());
      }
    } catch (RankingException e) { // e.g. INVALID_ARGUMENT [candidates[1].id] INVALID_REQUEST
      System.err.println("rank failed: code=" + e.codeName() + " fields=" + e.fields() + " reason=" + e.reason());
      System.exit(1);
    }
  }
}
// --8<-- [end:call]
