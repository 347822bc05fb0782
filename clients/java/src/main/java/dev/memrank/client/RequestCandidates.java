package dev.memrank.client;

import com.google.protobuf.Timestamp;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;
import memrank.v1.Ranking.Candidate;
import memrank.v1.Ranking.CandidateColumns;
import memrank.v1.Ranking.RankRequest;
import memrank.v1.Ranking.TimeColumn;

/**
 * A request's candidates as Candidate messages, whichever form it sent them in: {@code candidates} as they
 * are, {@code columns} read back row by row (an empty column: the field unset in every row; a false presence
 * value: unset in that row; a NaN facet, stage or reranker score: no score). Receipts and accounting read this.
 */
public final class RequestCandidates {
  private RequestCandidates() {}

  /** The candidates of {@code req} in order; the packed embeddings stay in the request. */
  public static List<Candidate> of(RankRequest req) {
    if (!req.hasColumns()) {
      return req.getCandidatesList();
    }
    CandidateColumns c = req.getColumns();
    int n = c.getIdsCount();
    List<Candidate.Builder> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(Candidate.newBuilder().setId(c.getIds(i)));
    }
    column(out, c.getLayersList(), Candidate.Builder::setLayer);
    column(out, c.getKindsList(), Candidate.Builder::setKind);
    column(out, c.getContentsList(), Candidate.Builder::setContent);
    column(out, c.getRetrievalScoresList(), Candidate.Builder::setRetrievalScore);
    column(out, c.getAccessCountsList(), Candidate.Builder::setAccessCount);
    column(out, c.getTokenCountsList(), Candidate.Builder::setTokenCount);
    column(out, c.getSourcesValueList(), Candidate.Builder::setSourceValue);
    column(out, c.getProvenanceList(), Candidate.Builder::setProvenance);
    column(out, c.getSafetyValueList(), Candidate.Builder::setSafetyValue);
    column(out, c.getThreadsList(), Candidate.Builder::setThread);
    column(out, c.getSpeakersList(), Candidate.Builder::setSpeaker);
    optional(out, c.getImportanceList(), c.getImportancePresentList(), Candidate.Builder::setImportance);
    optional(out, c.getPositionsList(), c.getPositionsPresentList(), Candidate.Builder::setPosition);
    time(out, c.getCreatedAt(), Candidate.Builder::setCreatedAt);
    time(out, c.getLastAccessedAt(), Candidate.Builder::setLastAccessedAt);
    time(out, c.getEventTime(), Candidate.Builder::setEventTime);
    time(out, c.getIngestedAt(), Candidate.Builder::setIngestedAt);
    time(out, c.getValidFrom(), Candidate.Builder::setValidFrom);
    time(out, c.getValidTo(), Candidate.Builder::setValidTo);
    scores(out, c.getFacetNamesList(), c.getFacetScoresList(), Candidate.Builder::putFacetScores);
    scores(out, c.getStageNamesList(), c.getStageScoresList(), Candidate.Builder::putStageScores);
    column(out, c.getRerankerScoresList(), (b, v) -> {
      if (!v.isNaN()) {
        b.setRerankerScore(v);
      }
    });
    column(out, c.getMetadataList(), (b, row) -> b.putAllMetadata(row.getEntriesMap()));
    return out.stream().map(Candidate.Builder::build).toList();
  }

  private interface Put {
    void put(Candidate.Builder b, String name, double value);
  }

  /** Row i's value set on candidate i, for the rows the column has (empty: none). */
  private static <T> void column(List<Candidate.Builder> out, List<T> values, BiConsumer<Candidate.Builder, T> set) {
    for (int i = 0; i < Math.min(out.size(), values.size()); i++) {
      set.accept(out.get(i), values.get(i));
    }
  }

  private static <T> void optional(List<Candidate.Builder> out, List<T> values, List<Boolean> present,
      BiConsumer<Candidate.Builder, T> set) {
    for (int i = 0; i < Math.min(out.size(), values.size()); i++) {
      if (present.isEmpty() || (i < present.size() && present.get(i))) {
        set.accept(out.get(i), values.get(i));
      }
    }
  }

  private static void time(List<Candidate.Builder> out, TimeColumn t, BiConsumer<Candidate.Builder, Timestamp> set) {
    for (int i = 0; i < Math.min(out.size(), t.getSecondsCount()); i++) {
      if (t.getPresentCount() == 0 || (i < t.getPresentCount() && t.getPresent(i))) {
        int nanos = i < t.getNanosCount() ? t.getNanos(i) : 0;
        set.accept(out.get(i), Timestamp.newBuilder().setSeconds(t.getSeconds(i)).setNanos(nanos).build());
      }
    }
  }

  /** A dense row-major matrix over {@code names} back into each row's map, NaN cells left out. */
  private static void scores(List<Candidate.Builder> out, List<String> names, List<Double> values, Put put) {
    int k = names.size();
    for (int i = 0; i < (k == 0 ? 0 : out.size()); i++) {
      for (int j = 0; j < k && i * k + j < values.size(); j++) {
        double v = values.get(i * k + j);
        if (!Double.isNaN(v)) {
          put.put(out.get(i), names.get(j), v);
        }
      }
    }
  }
}
