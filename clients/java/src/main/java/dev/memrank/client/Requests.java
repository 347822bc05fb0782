package dev.memrank.client;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.Function;
import memrank.v1.Ranking.CandidateColumns;
import memrank.v1.Ranking.MetadataRow;
import memrank.v1.Ranking.RankRequest;
import memrank.v1.Ranking.TimeColumn;

/**
 * Rank requests from a caller's own values: {@link Memory} objects become the request's columnar form
 * ({@code RankRequest.columns}, one repeated field per Candidate field) and a {@code float[][]} its packed
 * embeddings ({@code embeddings_f32}, little-endian float32, and {@code embedding_dim}). The server answers
 * this form exactly as it answers the same candidates sent one message each, and reads it with no
 * per-candidate work. A column every memory leaves unset is not sent.
 */
public final class Requests {
  /** Candidate.facet_scores and stage_scores names: at most this many UTF-8 bytes (the server's limit). */
  static final int MAX_NAME_BYTES = 128;

  private Requests() {}

  /**
   * {@code params} (query, profile, reference time, budget, ...: every RankRequest field but the candidates)
   * with {@code memories} as its candidates, in the columnar form, and {@code embeddings} (one row per memory,
   * in order, all of one dimension; {@code null}: the memories' own embeddings, if any) packed.
   *
   * <p>Sent one Candidate message each instead, where the columns cannot say it as given: a NaN facet, stage
   * or reranker score (a NaN in those columns means "no score") or an empty or overlong facet or stage name, or the
   * memories' own embeddings of several dimensions; the server then names the memory at fault as
   * {@code candidates[i]}. In the columnar form a refusal names the column and the row, e.g.
   * {@code columns.retrieval_scores[3]} for {@code memories.get(3)}.
   *
   * @throws IllegalArgumentException when {@code params} already carries candidates, or the embeddings do not
   *     fit (a row count other than the number of memories, rows of different or zero length, or both a
   *     matrix and memories with embeddings of their own)
   */
  public static RankRequest rankRequest(RankRequest.Builder params, List<Memory> memories, float[][] embeddings) {
    if (params.getCandidatesCount() > 0 || params.hasColumns()) {
      throw new IllegalArgumentException("params already carries candidates: give them as memories, or send "
          + "the RankRequest as it is");
    }
    RankRequest.Builder out = params.clone();
    boolean own = memories.stream().anyMatch(m -> m.embeddingLength() > 0);
    if (embeddings != null && own) {
      throw new IllegalArgumentException("both an embeddings matrix and memories with embeddings of their own: "
          + "give one");
    }
    float[][] matrix = embeddings != null ? embeddings : own ? ownRows(memories) : null;
    if (!columnar(memories) || (own && matrix == null)) {
      memories.forEach(m -> out.addCandidates(m.toCandidate()));
      return embeddings == null ? out.build() : Embeddings.pack(out, embeddings).build();
    }
    out.setColumns(columns(memories));
    return matrix == null ? out.build() : Embeddings.pack(out, matrix).build();
  }

  /** The memories' own embeddings as one matrix (zero rows where one has none), null for several dimensions. */
  private static float[][] ownRows(List<Memory> memories) {
    int dim = 0;
    for (Memory m : memories) {
      int len = m.embeddingLength();
      if (len > 0 && dim > 0 && len != dim) {
        return null;
      }
      dim = Math.max(dim, len);
    }
    float[][] rows = new float[memories.size()][];
    for (int i = 0; i < rows.length; i++) {
      float[] e = memories.get(i).embeddingShared();
      rows[i] = e.length == dim ? e : new float[dim];
    }
    return rows;
  }

  /** Whether the columns can carry every score as given (no NaN score, no empty or overlong name). */
  static boolean columnar(List<Memory> memories) {
    for (Memory m : memories) {
      if (m.rerankerScore() != null && m.rerankerScore().isNaN()) {
        return false;
      }
      for (Map<String, Double> scores : List.of(m.facetScores(), m.stageScores())) {
        for (Map.Entry<String, Double> e : scores.entrySet()) {
          String k = e.getKey();
          if (e.getValue().isNaN() || k.isEmpty() || k.getBytes(StandardCharsets.UTF_8).length > MAX_NAME_BYTES) {
            return false;
          }
        }
      }
    }
    return true;
  }

  /** The memories as CandidateColumns (their embeddings aside: those go packed). */
  public static CandidateColumns columns(List<Memory> memories) {
    CandidateColumns.Builder c = CandidateColumns.newBuilder();
    memories.forEach(m -> c.addIds(m.id()));
    texts(memories, Memory::layer, c::addLayers);
    texts(memories, Memory::kind, c::addKinds);
    texts(memories, Memory::content, c::addContents);
    texts(memories, Memory::provenance, c::addProvenance);
    texts(memories, Memory::thread, c::addThreads);
    texts(memories, Memory::speaker, c::addSpeakers);
    if (memories.stream().anyMatch(m -> Double.doubleToRawLongBits(m.retrievalScore()) != 0)) {
      memories.forEach(m -> c.addRetrievalScores(m.retrievalScore()));
    }
    if (memories.stream().anyMatch(m -> m.accessCount() != 0)) {
      memories.forEach(m -> c.addAccessCounts(m.accessCount()));
    }
    if (memories.stream().anyMatch(m -> m.tokenCount() != 0)) {
      memories.forEach(m -> c.addTokenCounts(m.tokenCount()));
    }
    if (memories.stream().anyMatch(m -> m.source().getNumber() != 0)) {
      memories.forEach(m -> c.addSourcesValue(m.source().getNumber()));
    }
    if (memories.stream().anyMatch(m -> m.safety().getNumber() != 0)) {
      memories.forEach(m -> c.addSafetyValue(m.safety().getNumber()));
    }
    if (memories.stream().anyMatch(m -> m.importance() != null)) {
      memories.forEach(m -> c.addImportance(m.importance() == null ? 0 : m.importance()));
      if (memories.stream().anyMatch(m -> m.importance() == null)) {
        memories.forEach(m -> c.addImportancePresent(m.importance() != null));
      }
    }
    if (memories.stream().anyMatch(m -> m.position() != null)) {
      memories.forEach(m -> c.addPositions(m.position() == null ? 0 : m.position()));
      if (memories.stream().anyMatch(m -> m.position() == null)) {
        memories.forEach(m -> c.addPositionsPresent(m.position() != null));
      }
    }
    time(memories, Memory::createdAt, c::setCreatedAt);
    time(memories, Memory::lastAccessedAt, c::setLastAccessedAt);
    time(memories, Memory::eventTime, c::setEventTime);
    time(memories, Memory::ingestedAt, c::setIngestedAt);
    time(memories, Memory::validFrom, c::setValidFrom);
    time(memories, Memory::validTo, c::setValidTo);
    List<String> facets = names(memories, Memory::facetScores);
    c.addAllFacetNames(facets);
    matrix(memories, Memory::facetScores, facets, c::addFacetScores);
    List<String> stages = names(memories, Memory::stageScores);
    c.addAllStageNames(stages);
    matrix(memories, Memory::stageScores, stages, c::addStageScores);
    if (memories.stream().anyMatch(m -> m.rerankerScore() != null)) { // NaN: this row has no score
      memories.forEach(m -> c.addRerankerScores(m.rerankerScore() == null ? Double.NaN : m.rerankerScore()));
    }
    if (memories.stream().anyMatch(m -> !m.metadata().isEmpty())) {
      memories.forEach(m -> c.addMetadata(MetadataRow.newBuilder().putAllEntries(m.metadata())));
    }
    return c.build();
  }

  private interface Add<T> {
    void add(T value);
  }

  private interface AddDouble {
    void add(double value);
  }

  private static void texts(List<Memory> ms, Function<Memory, String> get, Add<String> add) {
    if (ms.stream().anyMatch(m -> !get.apply(m).isEmpty())) {
      ms.forEach(m -> add.add(get.apply(m)));
    }
  }

  private static void time(List<Memory> ms, Function<Memory, Instant> get, Add<TimeColumn> set) {
    if (ms.stream().allMatch(m -> get.apply(m) == null)) {
      return;
    }
    TimeColumn.Builder t = TimeColumn.newBuilder();
    boolean nanos = false;
    boolean missing = false;
    for (Memory m : ms) {
      Instant at = get.apply(m);
      t.addSeconds(at == null ? 0 : at.getEpochSecond());
      nanos |= at != null && at.getNano() != 0;
      missing |= at == null;
    }
    for (Memory m : nanos ? ms : List.<Memory>of()) {
      Instant at = get.apply(m);
      t.addNanos(at == null ? 0 : at.getNano());
    }
    for (Memory m : missing ? ms : List.<Memory>of()) {
      t.addPresent(get.apply(m) != null);
    }
    set.add(t.build());
  }

  /** Every name any memory's map carries, in UTF-8 byte order (code point order, as the other clients). */
  private static List<String> names(List<Memory> ms, Function<Memory, Map<String, Double>> get) {
    TreeSet<String> names = new TreeSet<>(Comparator.comparing(
        (String s) -> s.getBytes(StandardCharsets.UTF_8), Arrays::compareUnsigned));
    ms.forEach(m -> names.addAll(get.apply(m).keySet()));
    return new ArrayList<>(names);
  }

  /** The maps as a dense row-major matrix over {@code names}, NaN where a memory has no score for a name. */
  private static void matrix(List<Memory> ms, Function<Memory, Map<String, Double>> get, List<String> names,
      AddDouble add) {
    for (int i = 0; i < (names.isEmpty() ? 0 : ms.size()); i++) {
      Map<String, Double> scores = get.apply(ms.get(i));
      for (String name : names) {
        Double v = scores.get(name);
        add.add(v == null ? Double.NaN : v);
      }
    }
  }
}
