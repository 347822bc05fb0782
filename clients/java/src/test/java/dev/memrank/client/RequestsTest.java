package dev.memrank.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import memrank.v1.Ranking.Candidate;
import memrank.v1.Ranking.CandidateColumns;
import memrank.v1.Ranking.MetadataRow;
import memrank.v1.Ranking.RankRequest;
import memrank.v1.Ranking.SafetyStatus;
import memrank.v1.Ranking.Source;
import memrank.v1.Ranking.TimeColumn;
import org.junit.jupiter.api.Test;

/** Memories into the columnar form and back, against columns written out by hand (no server needed). */
class RequestsTest {
  static final Instant NEW_YEAR = Instant.parse("2026-01-01T00:00:00Z"); // 1767225600 s

  static List<Memory> three() {
    return List.of(
        Memory.builder("a").content("x").retrievalScore(0.5).importance(0.25).createdAt(NEW_YEAR)
            .facetScores(Map.of("bm25", 1.0)).source(Source.SOURCE_CHAT).metadata(Map.of("k", "v")).build(),
        Memory.builder("b").kind("fact").importance(null).createdAt(NEW_YEAR.plusMillis(500))
            .facetScores(Map.of("dense", 0.5, "bm25", 2.0)).position(3L).rerankerScore(-1.5).build(),
        Memory.builder("c").build());
  }

  @Test
  void columnsAsWrittenByHand() {
    CandidateColumns want = CandidateColumns.newBuilder()
        .addAllIds(List.of("a", "b", "c"))
        .addAllKinds(List.of("", "fact", ""))
        .addAllContents(List.of("x", "", ""))
        .addAllRetrievalScores(List.of(0.5, 0.0, 0.0))
        .addAllSources(List.of(Source.SOURCE_CHAT, Source.SOURCE_UNSPECIFIED, Source.SOURCE_UNSPECIFIED))
        .addAllImportance(List.of(0.25, 0.0, 0.0)).addAllImportancePresent(List.of(true, false, false))
        .addAllPositions(List.of(0L, 3L, 0L)).addAllPositionsPresent(List.of(false, true, false))
        .setCreatedAt(TimeColumn.newBuilder().addAllSeconds(List.of(1767225600L, 1767225600L, 0L))
            .addAllNanos(List.of(0, 500_000_000, 0)).addAllPresent(List.of(true, true, false)))
        // Row-major 3 x 2 over (bm25, dense); NaN where a memory has no score for the facet.
        .addAllFacetNames(List.of("bm25", "dense"))
        .addAllFacetScores(List.of(1.0, Double.NaN, 2.0, 0.5, Double.NaN, Double.NaN))
        .addMetadata(MetadataRow.newBuilder().putEntries("k", "v")).addMetadata(MetadataRow.getDefaultInstance())
        .addMetadata(MetadataRow.getDefaultInstance())
        .addAllRerankerScores(List.of(Double.NaN, -1.5, Double.NaN)) // NaN: no reranker score in that row
        .build();
    assertEquals(want, Requests.columns(three()));
    assertEquals(three().stream().map(Memory::toCandidate).toList(),
        RequestCandidates.of(Requests.rankRequest(RankRequest.newBuilder(), three(), null)));
  }

  @Test
  void columnsEveryRowSetsSendNoPresence() {
    List<Memory> ms = List.of(Memory.builder("a").importance(1.0).createdAt(NEW_YEAR).safety(
        SafetyStatus.SAFETY_STATUS_SAFE).build(), Memory.builder("b").importance(0.0).createdAt(NEW_YEAR).build());
    CandidateColumns want = CandidateColumns.newBuilder().addAllIds(List.of("a", "b"))
        .addAllImportance(List.of(1.0, 0.0))
        .setCreatedAt(TimeColumn.newBuilder().addAllSeconds(List.of(1767225600L, 1767225600L)))
        .addAllSafety(List.of(SafetyStatus.SAFETY_STATUS_SAFE, SafetyStatus.SAFETY_STATUS_UNSPECIFIED))
        .build();
    assertEquals(want, Requests.columns(ms));
  }

  @Test
  void scoreNamesInCodePointOrder() {
    // UTF-16 order puts U+1F600 (a surrogate pair, 0xD83D...) before U+FFFD; code point (UTF-8) order after.
    List<Memory> ms = List.of(Memory.builder("a").stageScores(Map.of("\uD83D\uDE00", 1.0, "\uFFFD", 2.0, "z", 3.0))
        .build());
    assertEquals(List.of("z", "\uFFFD", "\uD83D\uDE00"), Requests.columns(ms).getStageNamesList());
    assertEquals(List.of(3.0, 2.0, 1.0), Requests.columns(ms).getStageScoresList());
  }

  @Test
  void rankRequestPacksTheMatrixAndKeepsTheParams() {
    RankRequest.Builder params = RankRequest.newBuilder().setQuery("q").setProfile("default");
    RankRequest got = Requests.rankRequest(params, three(), new float[][] {{1, -2}, {0.5f, 0}, {0, 0}});
    assertEquals("q", got.getQuery());
    assertEquals(0, got.getCandidatesCount());
    assertEquals(Requests.columns(three()), got.getColumns());
    assertEquals(2, got.getEmbeddingDim());
    assertEquals("0000803f000000c00000003f00000000" + "0000000000000000",
        HexFormat.of().formatHex(got.getEmbeddingsF32().toByteArray()));
    assertFalse(params.hasColumns(), "params is left as it was");
  }

  @Test
  void ownEmbeddingsGoPackedWithZeroRowsWhereMissing() {
    List<Memory> ms = List.of(Memory.builder("a").embedding(new float[] {1, 2}).build(), Memory.builder("b").build());
    RankRequest got = Requests.rankRequest(RankRequest.newBuilder(), ms, null);
    assertTrue(got.hasColumns());
    assertEquals("0000803f00000040" + "0000000000000000", HexFormat.of().formatHex(got.getEmbeddingsF32().toByteArray()));
  }

  @Test
  void whatColumnsCannotSayGoesPerCandidate() {
    List<List<Memory>> cases = List.of(
        List.of(Memory.builder("a").facetScores(Map.of("bm25", Double.NaN)).build()),
        List.of(Memory.builder("a").stageScores(Map.of("", 1.0)).build()),
        List.of(Memory.builder("a").rerankerScore(Double.NaN).build()),
        List.of(Memory.builder("a").facetScores(Map.of("n".repeat(129), 1.0)).build()),
        List.of(Memory.builder("a").embedding(new float[] {1}).build(),
            Memory.builder("b").embedding(new float[] {1, 2}).build()));
    for (List<Memory> ms : cases) {
      RankRequest got = Requests.rankRequest(RankRequest.newBuilder(), ms, null);
      assertFalse(got.hasColumns(), ms.toString());
      assertEquals(ms.stream().map(Memory::toCandidate).toList(), got.getCandidatesList());
    }
    // 128 bytes (64 two-byte characters) is within the limit: columns.
    assertTrue(Requests.rankRequest(RankRequest.newBuilder(),
        List.of(Memory.builder("a").facetScores(Map.of("é".repeat(64), 1.0)).build()), null).hasColumns());
  }

  @Test
  void shapesAreChecked() {
    RankRequest.Builder params = RankRequest.newBuilder();
    List<Memory> two = three().subList(0, 2);
    assertThrows(IllegalArgumentException.class, () -> Requests.rankRequest(params, two, new float[][] {{1}}));
    assertThrows(IllegalArgumentException.class, () -> Requests.rankRequest(params, two, new float[][] {{1}, {}}));
    assertThrows(IllegalArgumentException.class, () -> Requests.rankRequest(params,
        List.of(Memory.builder("a").embedding(new float[] {1}).build()), new float[][] {{1}}));
    assertThrows(IllegalArgumentException.class, () -> Requests.rankRequest(
        RankRequest.newBuilder().addCandidates(Candidate.newBuilder().setId("x")), two, null));
    assertThrows(IllegalArgumentException.class, () -> Memory.builder("a").accessCount(-1));
  }

  /** Every vector's candidates: Memory.of and toCandidate round trip, and the columns read back to the same. */
  @Test
  void vectorsRoundTripThroughMemoriesAndColumns() throws IOException {
    for (VectorsTest.Vector v : VectorsTest.vectors()) {
      List<Candidate> cands = VectorsTest.request(v).getCandidatesList();
      List<Memory> ms = cands.stream().map(Memory::of).toList();
      assertEquals(cands, ms.stream().map(Memory::toCandidate).toList(), v.name());
      List<Candidate> bare = cands.stream().map(c -> c.toBuilder().clearEmbedding().build()).toList();
      RankRequest columnar = RankRequest.newBuilder().setColumns(Requests.columns(ms)).build();
      assertEquals(bare, RequestCandidates.of(columnar), v.name());
    }
  }

  @Test
  void memoryKeepsItsOwnCopies() {
    float[] e = {1, 2};
    Memory m = Memory.builder("a").embedding(e).build();
    e[0] = 9;
    m.embedding()[1] = 9;
    assertArrayEquals(new float[] {1, 2}, m.embedding());
  }
}
