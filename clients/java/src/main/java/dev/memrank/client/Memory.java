package dev.memrank.client;

import com.google.protobuf.Timestamp;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import memrank.v1.Ranking.Candidate;
import memrank.v1.Ranking.SafetyStatus;
import memrank.v1.Ranking.Source;

/**
 * One memory to rank, as a caller holds it: the fields of {@code memrank.v1.Candidate} as Java values
 * ({@code null} for an unset importance, position or time; {@code ""}, 0 and empty maps for the rest, as
 * protobuf reads an unset field). {@link Requests#rankRequest} sends a list of them as the request's columns.
 * Immutable; its maps are copies and its embedding a copy.
 */
public final class Memory {
  private final String id;
  private final String layer;
  private final String kind;
  private final String content;
  private final double retrievalScore;
  private final Map<String, Double> facetScores;
  private final Double importance;
  private final int accessCount;
  private final int tokenCount;
  private final Instant createdAt;
  private final Instant lastAccessedAt;
  private final Instant eventTime;
  private final Instant ingestedAt;
  private final Instant validFrom;
  private final Instant validTo;
  private final Source source;
  private final String provenance;
  private final SafetyStatus safety;
  private final float[] embedding;
  private final Map<String, Double> stageScores;
  private final Map<String, String> metadata;
  private final String thread;
  private final Long position;
  private final String speaker;
  private final Double rerankerScore;

  private Memory(Builder b) {
    id = b.id;
    layer = b.layer;
    kind = b.kind;
    content = b.content;
    retrievalScore = b.retrievalScore;
    facetScores = Map.copyOf(b.facetScores);
    importance = b.importance;
    accessCount = b.accessCount;
    tokenCount = b.tokenCount;
    createdAt = b.createdAt;
    lastAccessedAt = b.lastAccessedAt;
    eventTime = b.eventTime;
    ingestedAt = b.ingestedAt;
    validFrom = b.validFrom;
    validTo = b.validTo;
    source = b.source;
    provenance = b.provenance;
    safety = b.safety;
    embedding = b.embedding; // the builder's own copy, never changed in place
    stageScores = Map.copyOf(b.stageScores);
    metadata = Map.copyOf(b.metadata);
    thread = b.thread;
    position = b.position;
    speaker = b.speaker;
    rerankerScore = b.rerankerScore;
  }

  /** A builder of the memory with this id (Candidate.id: non-empty, unique in a request). */
  public static Builder builder(String id) {
    return new Builder(id);
  }

  /** The memory a Candidate message describes (its embedding included). */
  public static Memory of(Candidate c) {
    return builder(c.getId()).layer(c.getLayer()).kind(c.getKind()).content(c.getContent())
        .retrievalScore(c.getRetrievalScore()).facetScores(c.getFacetScoresMap())
        .importance(c.hasImportance() ? c.getImportance() : null)
        .accessCount(c.getAccessCount()).tokenCount(c.getTokenCount())
        .createdAt(time(c.hasCreatedAt(), c.getCreatedAt()))
        .lastAccessedAt(time(c.hasLastAccessedAt(), c.getLastAccessedAt()))
        .eventTime(time(c.hasEventTime(), c.getEventTime()))
        .ingestedAt(time(c.hasIngestedAt(), c.getIngestedAt()))
        .validFrom(time(c.hasValidFrom(), c.getValidFrom()))
        .validTo(time(c.hasValidTo(), c.getValidTo()))
        .source(c.getSource()).provenance(c.getProvenance()).safety(c.getSafety())
        .embedding(floats(c))
        .stageScores(c.getStageScoresMap()).metadata(c.getMetadataMap()).thread(c.getThread())
        .position(c.hasPosition() ? c.getPosition() : null).speaker(c.getSpeaker())
        .rerankerScore(c.hasRerankerScore() ? c.getRerankerScore() : null)
        .build();
  }

  private static Instant time(boolean set, Timestamp t) {
    return set ? Instant.ofEpochSecond(t.getSeconds(), t.getNanos()) : null;
  }

  private static float[] floats(Candidate c) {
    float[] out = new float[c.getEmbeddingCount()];
    for (int i = 0; i < out.length; i++) {
      out[i] = c.getEmbedding(i);
    }
    return out;
  }

  /** This memory as a Candidate message (the per-candidate form). */
  public Candidate toCandidate() {
    Candidate.Builder c = Candidate.newBuilder().setId(id).setLayer(layer).setKind(kind).setContent(content)
        .setRetrievalScore(retrievalScore).putAllFacetScores(facetScores)
        .setAccessCount(accessCount).setTokenCount(tokenCount).setSource(source).setProvenance(provenance)
        .setSafety(safety).putAllStageScores(stageScores).putAllMetadata(metadata).setThread(thread)
        .setSpeaker(speaker);
    if (importance != null) {
      c.setImportance(importance);
    }
    if (position != null) {
      c.setPosition(position);
    }
    if (rerankerScore != null) {
      c.setRerankerScore(rerankerScore);
    }
    for (float v : embedding) {
      c.addEmbedding(v);
    }
    if (createdAt != null) {
      c.setCreatedAt(RankingClient.timestamp(createdAt));
    }
    if (lastAccessedAt != null) {
      c.setLastAccessedAt(RankingClient.timestamp(lastAccessedAt));
    }
    if (eventTime != null) {
      c.setEventTime(RankingClient.timestamp(eventTime));
    }
    if (ingestedAt != null) {
      c.setIngestedAt(RankingClient.timestamp(ingestedAt));
    }
    if (validFrom != null) {
      c.setValidFrom(RankingClient.timestamp(validFrom));
    }
    if (validTo != null) {
      c.setValidTo(RankingClient.timestamp(validTo));
    }
    return c.build();
  }

  public String id() { return id; }
  public String layer() { return layer; }
  public String kind() { return kind; }
  public String content() { return content; }
  public double retrievalScore() { return retrievalScore; }
  public Map<String, Double> facetScores() { return facetScores; }
  /** {@code null}: unset (the server derives it from the content). */
  public Double importance() { return importance; }
  public int accessCount() { return accessCount; }
  public int tokenCount() { return tokenCount; }
  public Instant createdAt() { return createdAt; }
  public Instant lastAccessedAt() { return lastAccessedAt; }
  public Instant eventTime() { return eventTime; }
  public Instant ingestedAt() { return ingestedAt; }
  public Instant validFrom() { return validFrom; }
  public Instant validTo() { return validTo; }
  public Source source() { return source; }
  public String provenance() { return provenance; }
  public SafetyStatus safety() { return safety; }
  /** A copy of the embedding (empty: none). */
  public float[] embedding() { return embedding.clone(); }
  int embeddingLength() { return embedding.length; }
  float[] embeddingShared() { return embedding; }
  public Map<String, Double> stageScores() { return stageScores; }
  public Map<String, String> metadata() { return metadata; }
  public String thread() { return thread; }
  /** {@code null}: unset (no position). */
  public Long position() { return position; }
  public String speaker() { return speaker; }
  /** {@code null}: unset (scored as the batch's lowest reranker score). */
  public Double rerankerScore() { return rerankerScore; }

  @Override
  public String toString() {
    return "Memory{" + id + "}";
  }

  /** Fields of a {@link Memory}; each setter names the Candidate field it fills. A {@code null} string is "". */
  public static final class Builder {
    private final String id;
    private String layer = "";
    private String kind = "";
    private String content = "";
    private double retrievalScore;
    private Map<String, Double> facetScores = Map.of();
    private Double importance;
    private int accessCount;
    private int tokenCount;
    private Instant createdAt;
    private Instant lastAccessedAt;
    private Instant eventTime;
    private Instant ingestedAt;
    private Instant validFrom;
    private Instant validTo;
    private Source source = Source.SOURCE_UNSPECIFIED;
    private String provenance = "";
    private SafetyStatus safety = SafetyStatus.SAFETY_STATUS_UNSPECIFIED;
    private float[] embedding = new float[0];
    private Map<String, Double> stageScores = Map.of();
    private Map<String, String> metadata = Map.of();
    private String thread = "";
    private Long position;
    private String speaker = "";
    private Double rerankerScore;

    private Builder(String id) {
      this.id = Objects.requireNonNull(id, "id");
    }

    private static String text(String s) {
      return s == null ? "" : s;
    }

    private static int count(String field, int n) {
      if (n < 0) {
        throw new IllegalArgumentException("Memory." + field + " must be >= 0, got " + n);
      }
      return n;
    }

    /** Candidate.layer: the budget layer ("" : the catch-all). */
    public Builder layer(String v) { layer = text(v); return this; }
    /** Candidate.kind ("fact", "decision", ...). */
    public Builder kind(String v) { kind = text(v); return this; }
    /** Candidate.content: the memory's text. */
    public Builder content(String v) { content = text(v); return this; }
    /** Candidate.retrieval_score: the caller's retriever score. */
    public Builder retrievalScore(double v) { retrievalScore = v; return this; }
    /** Candidate.facet_scores: named scores of the caller's own retrievers. */
    public Builder facetScores(Map<String, Double> v) { facetScores = Objects.requireNonNull(v); return this; }
    /** Candidate.importance in [0, 1]; {@code null}: unset. */
    public Builder importance(Double v) { importance = v; return this; }
    /** Candidate.access_count (>= 0). */
    public Builder accessCount(int v) { accessCount = count("accessCount", v); return this; }
    /** Candidate.token_count (>= 0; 0: estimated from the content). */
    public Builder tokenCount(int v) { tokenCount = count("tokenCount", v); return this; }
    /** Candidate.created_at; {@code null}: unset. */
    public Builder createdAt(Instant v) { createdAt = v; return this; }
    /** Candidate.last_accessed_at; {@code null}: unset. */
    public Builder lastAccessedAt(Instant v) { lastAccessedAt = v; return this; }
    /** Candidate.event_time; {@code null}: unset. */
    public Builder eventTime(Instant v) { eventTime = v; return this; }
    /** Candidate.ingested_at; {@code null}: unset. */
    public Builder ingestedAt(Instant v) { ingestedAt = v; return this; }
    /** Candidate.valid_from; {@code null}: unset. */
    public Builder validFrom(Instant v) { validFrom = v; return this; }
    /** Candidate.valid_to; {@code null}: unset. */
    public Builder validTo(Instant v) { validTo = v; return this; }
    /** Candidate.source. */
    public Builder source(Source v) { source = Objects.requireNonNull(v); return this; }
    /** Candidate.provenance. */
    public Builder provenance(String v) { provenance = text(v); return this; }
    /** Candidate.safety. */
    public Builder safety(SafetyStatus v) { safety = Objects.requireNonNull(v); return this; }
    /** Candidate.embedding (copied; sent packed, see {@link Requests#rankRequest}). */
    public Builder embedding(float[] v) { embedding = v == null ? new float[0] : v.clone(); return this; }
    /** Candidate.stage_scores. */
    public Builder stageScores(Map<String, Double> v) { stageScores = Objects.requireNonNull(v); return this; }
    /** Candidate.metadata. */
    public Builder metadata(Map<String, String> v) { metadata = Objects.requireNonNull(v); return this; }
    /** Candidate.thread. */
    public Builder thread(String v) { thread = text(v); return this; }
    /** Candidate.position; {@code null}: unset. */
    public Builder position(Long v) { position = v; return this; }
    /** Candidate.speaker. */
    public Builder speaker(String v) { speaker = text(v); return this; }
    /**
     * Candidate.reranker_score: your own reranker's score for the query (a cross-encoder's logit, a rerank
     * API's relevance), any finite value on any scale; {@code null}: unset.
     */
    public Builder rerankerScore(Double v) { rerankerScore = v; return this; }

    /** The memory. */
    public Memory build() {
      return new Memory(this);
    }
  }
}
