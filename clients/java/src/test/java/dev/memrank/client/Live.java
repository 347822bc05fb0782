package dev.memrank.client;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Instant;
import memrank.v1.Ranking.Candidate;
import memrank.v1.Ranking.RankRequest;

/** The live server at MEMRANK_ADDR (clients/test.sh starts one), and small requests for it. */
final class Live {
  private Live() {}

  static final Instant AT = Instant.parse("2026-06-01T12:00:00Z");

  /** MEMRANK_ADDR, or the test is skipped. */
  static String addr() {
    String addr = System.getenv("MEMRANK_ADDR");
    assumeTrue(addr != null && !addr.isEmpty(), "MEMRANK_ADDR is not set: no live memrank server");
    return addr;
  }

  static Candidate candidate(String id, String content) {
    return Candidate.newBuilder().setId(id).setKind("fact").setContent(content)
        .setRetrievalScore(0.5).setImportance(0.5).build();
  }

  /** A request the server accepts: two candidates under agent-observer. */
  static RankRequest good() {
    return RankRequest.newBuilder().setRequestId("java-good").setQuery("postgres ledger")
        .setReferenceTime(RankingClient.timestamp(AT)).setProfile("agent-observer")
        .addCandidates(candidate("m1", "The ledger runs on Postgres 16"))
        .addCandidates(candidate("m2", "User prefers short answers"))
        .build();
  }

  /** A request the server refuses: the id of candidates[1] repeats candidates[0]'s. */
  static RankRequest duplicateId() {
    return good().toBuilder().setCandidates(1, candidate("m1", "again")).build();
  }
}
