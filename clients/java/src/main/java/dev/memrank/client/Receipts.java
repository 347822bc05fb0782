package dev.memrank.client;

import com.google.protobuf.Timestamp;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import memrank.v1.Ranking.Candidate;
import memrank.v1.Ranking.DropReason;
import memrank.v1.Ranking.DroppedMemory;
import memrank.v1.Ranking.LayerPolicy;
import memrank.v1.Ranking.RankRequest;
import memrank.v1.Ranking.RankResponse;
import memrank.v1.Ranking.RankedMemory;
import memrank.v1.Ranking.ScoreBreakdown;
import memrank.v1.Ranking.SignalScore;
import memrank.v1.Ranking.SignalWeight;

/**
 * Receipt verification: the canonical bytes ({@code memrank.receipt.v3}, or v2 when the receipt names it;
 * docs/concepts/receipts.md) rebuilt from the {@code RankRequest} (its candidates in either form:
 * {@link RequestCandidates}) and the {@code RankResponse} alone, their
 * SHA-256 compared with {@code receipt.digest}, and the HMAC-SHA256 signature checked under the receipt key when one is given.
 */
public final class Receipts {
  /** The receipt form the server writes; {@link #verify} rebuilds it and {@link #SCHEMA_V2}. */
  public static final String SCHEMA = "memrank.receipt.v3";

  /** The form before v3 (one text line per candidate and per drop), still verified. */
  public static final String SCHEMA_V2 = "memrank.receipt.v2";

  private static final String AGAIN =
      "the receipt is the same at every explain level, so the same request asked at EXPLAIN_LEVEL_FULL (with the"
          + " response's reference_time) gives a response that verifies against the same digest";

  private Receipts() {}

  /**
   * What {@link #verify} found: {@code ok} only when the digest was recomputed and matches (and, with a key,
   * so does the signature); {@code problems} say what differs, {@code unchecked} what could not be checked.
   */
  public record Check(boolean ok, String digest, List<String> problems, List<String> unchecked) {}

  /** The response lacks a part the receipt binds (breakdowns at EXPLAIN_LEVEL_NONE, covered_by below FULL). */
  public static final class UnverifiableException extends Exception {
    private static final long serialVersionUID = 1L;

    UnverifiableException(String message) {
      super(message);
    }
  }

  /** q(s): the JSON string literal of s in ASCII (README; a code point above U+FFFF as its surrogate pair). */
  static String q(String s) {
    StringBuilder b = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\b' -> b.append("\\b");
        case '\f' -> b.append("\\f");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20 || c >= 0x7f) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.append('"').toString();
  }

  /** f(x): the 16 hex digits of the big-endian float64 bits of x. */
  static String f(double x) {
    return String.format("%016x", Double.doubleToRawLongBits(x));
  }

  /** h(b): the SHA-256 hex of b. */
  static String h(byte[] data) {
    try {
      return java.util.HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String h(String s) {
    return h(s.getBytes(StandardCharsets.UTF_8));
  }

  private static String u(int unsigned) {
    return Integer.toUnsignedString(unsigned);
  }

  private static String time(boolean set, Timestamp t) {
    return set ? f(t.getSeconds() + t.getNanos() / 1e9) : "-";
  }

  private static List<String> sorted(String tag, Map<String, Double> m) {
    List<String> out = new ArrayList<>();
    m.forEach((k, v) -> out.add(tag + " " + q(k) + " " + f(v)));
    out.sort(Comparator.naturalOrder()); // keys are distinct and q(key) is ASCII: q(key) byte order
    return out;
  }

  /** The embeddings line: the packed matrix, else the candidates' own as one (zero rows where missing). */
  private static String embeddings(RankRequest req, List<Candidate> cands) {
    if (!req.getEmbeddingsF32().isEmpty()) {
      return "embeddings " + u(req.getEmbeddingDim()) + " " + h(req.getEmbeddingsF32().toByteArray());
    }
    int dim = 0;
    for (Candidate c : cands) {
      dim = Math.max(dim, c.getEmbeddingCount());
    }
    if (dim == 0) {
      return "embeddings 0 -";
    }
    ByteBuffer matrix = ByteBuffer.allocate(4 * dim * cands.size()).order(ByteOrder.LITTLE_ENDIAN);
    for (Candidate c : cands) {
      if (c.getEmbeddingCount() == dim) {
        c.getEmbeddingList().forEach(matrix::putFloat);
      } else {
        matrix.position(matrix.position() + 4 * dim); // a candidate without an embedding is a row of zeros
      }
    }
    return "embeddings " + dim + " " + h(matrix.array());
  }

  /** UTF-8 byte order (code point order; String.compareTo compares UTF-16 code units). */
  private static int byUtf8(String a, String b) {
    return Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));
  }

  /** S: the strings' UTF-8 byte lengths as 4-byte big-endian integers, then their bytes. */
  static byte[] colS(List<String> values) {
    List<byte[]> encoded = new ArrayList<>();
    int size = 4 * values.size();
    for (String v : values) {
      byte[] e = v.getBytes(StandardCharsets.UTF_8);
      encoded.add(e);
      size += e.length;
    }
    ByteBuffer out = ByteBuffer.allocate(size); // big-endian
    encoded.forEach(e -> out.putInt(e.length));
    encoded.forEach(out::put);
    return out.array();
  }

  /** F: each number's big-endian IEEE-754 float64 bits. */
  static byte[] colF(List<Double> values) {
    ByteBuffer out = ByteBuffer.allocate(8 * values.size());
    values.forEach(out::putDouble);
    return out.array();
  }

  /** O: a presence byte per value (1 set, 0 unset: null), then F with 0.0 for an unset value. */
  static byte[] colO(List<Double> values) {
    ByteBuffer out = ByteBuffer.allocate(9 * values.size());
    values.forEach(v -> out.put((byte) (v == null ? 0 : 1)));
    values.forEach(v -> out.putDouble(v == null ? 0.0 : v));
    return out.array();
  }

  private static byte[] concat(List<byte[]> parts) {
    ByteBuffer out = ByteBuffer.allocate(parts.stream().mapToInt(p -> p.length).sum());
    parts.forEach(out::put);
    return out.array();
  }

  /** M: per name any map carries, in UTF-8 byte order: S of the name, then O of every map's value for it. */
  static byte[] colM(List<Map<String, Double>> maps) {
    List<String> names =
        maps.stream().flatMap(m -> m.keySet().stream()).distinct().sorted(Receipts::byUtf8).toList();
    List<byte[]> parts = new ArrayList<>();
    for (String name : names) {
      parts.add(colS(List.of(name)));
      parts.add(colO(maps.stream().map(m -> m.get(name)).toList()));
    }
    return concat(parts);
  }

  /** K: the key counts as 4-byte big-endian integers, then S of every map's keys, each in UTF-8 byte order. */
  static byte[] colK(List<Map<String, String>> maps) {
    ByteBuffer counts = ByteBuffer.allocate(4 * maps.size());
    List<String> keys = new ArrayList<>();
    for (Map<String, String> m : maps) {
      counts.putInt(m.size());
      keys.addAll(m.keySet().stream().sorted(Receipts::byUtf8).toList());
    }
    return concat(List.of(counts.array(), colS(keys)));
  }

  private static Double seconds(boolean set, Timestamp t) {
    return set ? t.getSeconds() + t.getNanos() / 1e9 : null;
  }

  /** v3's candidate section: one line per column, the SHA-256 of its bytes. */
  private static List<String> candidateColumns(List<Candidate> cs) {
    Map<String, byte[]> columns = new LinkedHashMap<>();
    Function<Function<Candidate, String>, byte[]> str = get -> colS(cs.stream().map(get).toList());
    Function<Function<Candidate, Double>, byte[]> num = get -> colF(cs.stream().map(get).toList());
    Function<Function<Candidate, Double>, byte[]> opt =
        get -> colO(cs.stream().map(get).toList()); // Stream.toList keeps nulls
    columns.put("id", str.apply(Candidate::getId));
    columns.put("layer", str.apply(Candidate::getLayer));
    columns.put("kind", str.apply(Candidate::getKind));
    columns.put("content", str.apply(Candidate::getContent));
    columns.put("retrieval_score", num.apply(Candidate::getRetrievalScore));
    columns.put("importance", opt.apply(c -> c.hasImportance() ? c.getImportance() : null));
    columns.put("access_count", num.apply(c -> (double) Integer.toUnsignedLong(c.getAccessCount())));
    columns.put("token_count", num.apply(c -> (double) Integer.toUnsignedLong(c.getTokenCount())));
    columns.put("source", num.apply(c -> (double) c.getSourceValue()));
    columns.put("safety", num.apply(c -> (double) c.getSafetyValue()));
    columns.put("provenance", str.apply(Candidate::getProvenance));
    columns.put("thread", str.apply(Candidate::getThread));
    columns.put("position", opt.apply(c -> c.hasPosition() ? (double) c.getPosition() : null));
    columns.put("speaker", str.apply(Candidate::getSpeaker));
    columns.put("created_at", opt.apply(c -> seconds(c.hasCreatedAt(), c.getCreatedAt())));
    columns.put("last_accessed_at", opt.apply(c -> seconds(c.hasLastAccessedAt(), c.getLastAccessedAt())));
    columns.put("event_time", opt.apply(c -> seconds(c.hasEventTime(), c.getEventTime())));
    columns.put("ingested_at", opt.apply(c -> seconds(c.hasIngestedAt(), c.getIngestedAt())));
    columns.put("valid_from", opt.apply(c -> seconds(c.hasValidFrom(), c.getValidFrom())));
    columns.put("valid_to", opt.apply(c -> seconds(c.hasValidTo(), c.getValidTo())));
    columns.put("facet_scores", colM(cs.stream().map(Candidate::getFacetScoresMap).toList()));
    columns.put("stage_scores", colM(cs.stream().map(Candidate::getStageScoresMap).toList()));
    columns.put("metadata", colK(cs.stream().map(Candidate::getMetadataMap).toList()));
    List<String> out = new ArrayList<>();
    columns.forEach((name, data) -> out.add("candidate " + name + " " + h(data)));
    return out;
  }

  /** v2's text line of a candidate, then its facet, stage and metadata lines. */
  private static List<String> candidateLinesV2(Candidate c) {
    List<String> lines = new ArrayList<>();
    lines.add(String.join(" ", "candidate", q(c.getId()), q(c.getLayer()), q(c.getKind()), h(c.getContent()),
        f(c.getRetrievalScore()), c.hasImportance() ? f(c.getImportance()) : "-", u(c.getAccessCount()),
        u(c.getTokenCount()), Integer.toString(c.getSourceValue()), Integer.toString(c.getSafetyValue()),
        q(c.getProvenance()), q(c.getThread()), c.hasPosition() ? Long.toString(c.getPosition()) : "-",
        q(c.getSpeaker()), time(c.hasCreatedAt(), c.getCreatedAt()),
        time(c.hasLastAccessedAt(), c.getLastAccessedAt()), time(c.hasEventTime(), c.getEventTime()),
        time(c.hasIngestedAt(), c.getIngestedAt()), time(c.hasValidFrom(), c.getValidFrom()),
        time(c.hasValidTo(), c.getValidTo())));
    lines.addAll(sorted("facet", c.getFacetScoresMap()));
    lines.addAll(sorted("stage", c.getStageScoresMap()));
    List<String> keys = new ArrayList<>();
    c.getMetadataMap().keySet().forEach(k -> keys.add("metadata " + q(k)));
    keys.sort(Comparator.naturalOrder());
    lines.addAll(keys);
    return lines;
  }

  /** v3's dropped section: the count, then one line per column (response order). */
  private static List<String> droppedColumns(List<DroppedMemory> ds) {
    return List.of("dropped " + ds.size(),
        "drop id " + h(colS(ds.stream().map(DroppedMemory::getId).toList())),
        "drop layer " + h(colS(ds.stream().map(DroppedMemory::getLayer).toList())),
        "drop reason " + h(colF(ds.stream().map(d -> (double) d.getReasonValue()).toList())),
        "drop score " + h(colF(ds.stream().map(DroppedMemory::getScore).toList())),
        "drop covered_by " + h(colS(ds.stream().map(d -> d.getBreakdown().getCoveredBy()).toList())));
  }

  /**
   * The receipt's canonical bytes (ASCII), each line ending in a newline, in the form the receipt names (v3 when
   * it names none).
   */
  public static String canonical(RankRequest req, RankResponse resp) throws UnverifiableException {
    String schema = resp.getReceipt().getSchema().isEmpty() ? SCHEMA : resp.getReceipt().getSchema();
    boolean v2 = SCHEMA_V2.equals(schema);
    List<String> lines = new ArrayList<>();
    lines.add("schema " + schema);
    lines.add("query " + h(req.getQuery()));
    lines.add("reference_time " + resp.getReferenceTime().getSeconds() + " " + resp.getReferenceTime().getNanos());
    lines.add("profile " + q(resp.getProfile()));
    lines.add("policy_version " + q(resp.getPolicyVersion()));
    lines.add("weights " + resp.getWeightsCount());
    for (SignalWeight w : resp.getWeightsList()) {
      lines.add("weight " + q(w.getSignal()) + " " + f(w.getWeight()) + " " + q(w.getNormalization()));
    }
    lines.add("explicit_lookup " + (req.getExplicitLookup() ? 1 : 0));
    lines.add("placement " + req.getPlacementValue());
    lines.add("budget " + u(req.getBudget().getMaxTokens()) + " " + u(req.getBudget().getMaxItems()));
    lines.add("min_score " + (req.hasMinScore() ? f(req.getMinScore()) : "-"));
    lines.add("relevance_threshold " + (req.hasRelevanceThreshold() ? f(req.getRelevanceThreshold()) : "-"));
    lines.add("layers " + req.getLayersCount());
    for (LayerPolicy l : req.getLayersList()) {
      lines.add("layer " + q(l.getName()) + " " + f(l.getShare()) + " " + u(l.getFloorTokens()) + " "
          + u(l.getMaxItems()) + " " + (l.hasMinScore() ? f(l.getMinScore()) : "-"));
    }
    List<Candidate> cands = RequestCandidates.of(req); // either request form
    lines.add(embeddings(req, cands));
    lines.add("candidates " + cands.size());
    if (v2) {
      cands.forEach(c -> lines.addAll(candidateLinesV2(c)));
    } else {
      lines.addAll(candidateColumns(cands));
    }
    List<RankedMemory> selected = new ArrayList<>(resp.getSelectedList());
    selected.sort(Comparator.comparingLong(m -> Integer.toUnsignedLong(m.getRank())));
    lines.add("selected " + selected.size());
    for (RankedMemory m : selected) {
      if (!m.hasBreakdown()) {
        throw new UnverifiableException("the digest: selected \"" + m.getId() + "\" carries no breakdown "
            + "(EXPLAIN_LEVEL_NONE), and the receipt binds its combined, final and signal scores; " + AGAIN);
      }
      ScoreBreakdown b = m.getBreakdown();
      lines.add("memory " + u(m.getRank()) + " " + q(m.getId()) + " " + q(m.getLayer()) + " " + u(m.getPosition())
          + " " + f(m.getScore()) + " " + f(b.getCombinedScore()) + " " + f(b.getFinalScore()) + " "
          + f(b.getBlendTerm()));
      for (SignalScore s : b.getSignalsList()) {
        lines.add("signal " + q(s.getName()) + " " + f(s.getRaw()) + " " + f(s.getNormalized()) + " "
            + f(s.getWeight()) + " " + f(s.getContribution()));
      }
    }
    for (DroppedMemory d : resp.getDroppedList()) {
      if (d.getReason() == DropReason.DROP_REASON_REDUNDANT && !d.hasBreakdown()) {
        throw new UnverifiableException("the digest: dropped \"" + d.getId() + "\" is REDUNDANT but carries no "
            + "breakdown (below EXPLAIN_LEVEL_FULL), so its covered_by is unknown; " + AGAIN);
      }
    }
    if (v2) {
      lines.add("dropped " + resp.getDroppedCount());
      for (DroppedMemory d : resp.getDroppedList()) {
        lines.add("drop " + q(d.getId()) + " " + q(d.getLayer()) + " " + d.getReasonValue() + " " + f(d.getScore())
            + " " + q(d.getBreakdown().getCoveredBy()));
      }
    } else {
      lines.addAll(droppedColumns(resp.getDroppedList()));
    }
    StringBuilder out = new StringBuilder();
    lines.forEach(l -> out.append(l).append('\n'));
    return out.toString();
  }

  /** Candidates missing, unknown or twice in the response. */
  private static List<String> accounting(RankRequest req, RankResponse resp) {
    List<String> out = new ArrayList<>();
    List<Candidate> cands = RequestCandidates.of(req);
    Set<String> asked = new HashSet<>();
    cands.forEach(c -> asked.add(c.getId()));
    Map<String, Integer> told = new LinkedHashMap<>();
    resp.getSelectedList().forEach(m -> told.merge(m.getId(), 1, Integer::sum));
    resp.getDroppedList().forEach(d -> told.merge(d.getId(), 1, Integer::sum));
    for (Candidate c : cands) {
      if (!told.containsKey(c.getId())) {
        out.add("candidate \"" + c.getId() + "\" is neither selected nor dropped");
      }
    }
    told.forEach((id, n) -> {
      if (!asked.contains(id)) {
        out.add("\"" + id + "\" is in the response but is no candidate of the request");
      } else if (n > 1) {
        out.add("\"" + id + "\" is in the response " + n + " times");
      }
    });
    return out;
  }

  /**
   * Checks a response's receipt: rebuilds the canonical bytes from the request and the response, compares their
   * SHA-256 with {@code receipt.digest} and, with {@code key} (the receipt key file's bytes, surrounding
   * whitespace removed; null for none), checks {@code receipt.signature}. A null request checks the signature
   * only: the digest binds the candidates' fields, which only the request holds.
   */
  public static Check verify(RankRequest request, RankResponse response, byte[] key) {
    List<String> problems = new ArrayList<>();
    List<String> unchecked = new ArrayList<>();
    var r = response.getReceipt();
    if (!SCHEMA.equals(r.getSchema()) && !SCHEMA_V2.equals(r.getSchema())) {
      problems.add(
          "receipt schema is \"" + r.getSchema() + "\"; this verifier knows " + SCHEMA_V2 + " and " + SCHEMA);
      return new Check(false, "", problems, unchecked);
    }
    if (key != null && key.length > 0) {
      if (r.getSignature().isEmpty()) {
        problems.add("the receipt is not signed, but a key was given");
      } else if (!MessageDigest.isEqual(hmac(key, r.getDigest()), r.getSignature().getBytes(StandardCharsets.UTF_8))) {
        problems.add("signature: not the HMAC-SHA256 of the digest under this key");
      }
    } else if (!r.getSignature().isEmpty()) {
      unchecked.add("the signature (no key given)");
    } else {
      unchecked.add("the signature: the receipt is unsigned (the server has no security.receipt_key_file)");
    }
    if (request == null) {
      unchecked.add("the digest: it binds every candidate's fields, which only the request holds (give the request)");
      return new Check(false, "", problems, unchecked);
    }
    problems.addAll(accounting(request, response));
    String digest;
    try {
      digest = h(canonical(request, response));
    } catch (UnverifiableException e) {
      unchecked.add(e.getMessage());
      return new Check(false, "", problems, unchecked);
    }
    if (!digest.equals(r.getDigest())) {
      problems.add("digest: recomputed " + digest + ", the receipt says " + r.getDigest()
          + ": the request and response are not the pair the receipt was made for");
    }
    return new Check(problems.isEmpty(), digest, problems, unchecked);
  }

  private static byte[] hmac(byte[] key, String digest) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      return java.util.HexFormat.of().formatHex(mac.doFinal(digest.getBytes(StandardCharsets.UTF_8)))
          .getBytes(StandardCharsets.UTF_8);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }
}
