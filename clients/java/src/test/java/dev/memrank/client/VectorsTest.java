package dev.memrank.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import memrank.v1.Ranking.DroppedMemory;
import memrank.v1.Ranking.ImportanceSuggestion;
import memrank.v1.Ranking.RankRequest;
import memrank.v1.Ranking.RankResponse;
import memrank.v1.Ranking.RankedMemory;
import memrank.v1.Ranking.RankingStage;
import memrank.v1.Ranking.ShadowComparison;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Replays every tests/vectors/*.json conformance case against the live server at MEMRANK_ADDR,
 * and writes the SHA-256 of each request and response as encoded here to
 * $MEMRANK_DIGESTS_DIR/java.json, so clients/test.sh can check that every client sent and got
 * the same bytes.
 */
class VectorsTest {
  private static final Path DIR = Path.of("..", "..", "tests", "vectors");
  private static final Map<String, Map<String, String>> DIGESTS = new ConcurrentHashMap<>();
  private static RankingClient client;

  record Vector(String name, JsonObject json) {}

  static List<Vector> vectors() throws IOException {
    List<Path> paths;
    try (Stream<Path> s = Files.list(DIR)) {
      paths = s.filter(p -> p.getFileName().toString().endsWith(".json")).sorted().toList();
    }
    List<Vector> out = new ArrayList<>();
    for (Path p : paths) {
      JsonObject json = JsonParser.parseString(Files.readString(p, StandardCharsets.UTF_8)).getAsJsonObject();
      out.add(new Vector(json.get("name").getAsString(), json));
    }
    return out;
  }

  static RankRequest request(Vector v) throws IOException {
    RankRequest.Builder b = RankRequest.newBuilder();
    JsonFormat.parser().merge(v.json().get("request").toString(), b);
    return b.build();
  }

  /** Deterministic encoding (map entries sorted by key), as the other clients digest. */
  static String digest(Message m) {
    try {
      byte[] raw = new byte[m.getSerializedSize()];
      CodedOutputStream out = CodedOutputStream.newInstance(raw);
      out.useDeterministicSerialization();
      m.writeTo(out);
      out.checkNoSpaceLeft();
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(raw));
    } catch (IOException | NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void vectorsArePresent() throws IOException {
    assertTrue(vectors().size() >= 20, "only " + vectors().size() + " vectors in " + DIR.toAbsolutePath());
  }

  @Test
  void packingHelperGivesThePackedVectorsBytes() throws IOException {
    int packed = 0;
    for (Vector v : vectors()) {
      if (!v.json().has("embeddings")) {
        continue;
      }
      packed++;
      RankRequest want = request(v);
      JsonArray rows = v.json().getAsJsonArray("embeddings");
      float[][] matrix = new float[rows.size()][];
      for (int i = 0; i < matrix.length; i++) {
        JsonArray row = rows.get(i).getAsJsonArray();
        matrix[i] = new float[row.size()];
        for (int j = 0; j < row.size(); j++) {
          // Decimal -> double -> float32, as Go, TypeScript and numpy do (not decimal -> float).
          matrix[i][j] = (float) row.get(j).getAsDouble();
        }
      }
      RankRequest.Builder bare = want.toBuilder().clearEmbeddingsF32().clearEmbeddingDim();
      assertEquals(want, Embeddings.pack(bare, matrix).build(), v.name());
      float[] flat = new float[matrix.length * matrix[0].length];
      for (int i = 0; i < matrix.length; i++) {
        System.arraycopy(matrix[i], 0, flat, i * matrix[0].length, matrix[0].length);
      }
      assertEquals(want, Embeddings.pack(want.toBuilder().clearEmbeddingsF32().clearEmbeddingDim(),
          flat, matrix[0].length).build(), v.name() + " (flat)");
    }
    assertTrue(packed > 0, "no vector carries packed embeddings");
  }

  @Test
  void packingHelperChecksShapes() {
    RankRequest.Builder two = Live.good().toBuilder();
    assertThrows(IllegalArgumentException.class, () -> Embeddings.pack(two, new float[][] {{1, 2}, {3}}));
    assertThrows(IllegalArgumentException.class, () -> Embeddings.pack(two, new float[][] {{1, 2}}));
    assertThrows(IllegalArgumentException.class, () -> Embeddings.pack(two, new float[5], 2));
    assertThrows(IllegalArgumentException.class, () -> Embeddings.pack(RankRequest.newBuilder(), new float[0][]));
    RankRequest got = Embeddings.pack(two, new float[][] {{1, -2}, {0.5f, 0}}).build();
    assertEquals("0000803f000000c00000003f00000000", HexFormat.of().formatHex(got.getEmbeddingsF32().toByteArray()));
    assertEquals(2, got.getEmbeddingDim());
  }

  @TestFactory
  Stream<DynamicTest> conformanceVectors() throws IOException {
    String addr = Live.addr();
    client = RankingClient.builder(addr).timeout(Duration.ofSeconds(10)).build();
    return vectors().stream().map(v -> DynamicTest.dynamicTest(v.name(), () -> replay(v)));
  }

  @AfterAll
  static void writeDigests() throws IOException {
    if (client != null) {
      client.close();
    }
    String dir = System.getenv("MEMRANK_DIGESTS_DIR");
    if (dir == null || dir.isEmpty() || DIGESTS.isEmpty()) {
      return;
    }
    Gson gson = new GsonBuilder().setPrettyPrinting().create();
    Files.writeString(Path.of(dir, "java.json"), gson.toJson(new TreeMap<>(DIGESTS)), StandardCharsets.UTF_8);
  }

  private static void replay(Vector v) throws IOException {
    RankRequest req = request(v);
    Map<String, String> sums = new LinkedHashMap<>();
    sums.put("request", digest(req));
    DIGESTS.put(v.name(), sums);
    JsonObject wantError = v.json().getAsJsonObject("expect_error");
    if (wantError != null) {
      RankingException e = assertThrows(RankingException.class, () -> client.rank(req));
      assertEquals(wantError.get("code").getAsString(), e.codeName(), "code");
      String field = wantError.get("field").getAsString();
      assertTrue(e.hasField(field), "field " + field + " not among " + e.fields());
      return;
    }
    RankResponse resp = client.rank(req);
    sums.put("response", digest(resp));
    JsonObject want = v.json().getAsJsonObject("expect");
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < resp.getSelectedCount(); i++) {
      RankedMemory m = resp.getSelected(i);
      ids.add(m.getId());
      assertEquals(i, m.getPosition(), m.getId() + ": position");
      JsonElement rank = want.getAsJsonObject("ranks").get(m.getId());
      JsonElement score = want.getAsJsonObject("final_scores").get(m.getId());
      if (rank == null || score == null) {
        fail(m.getId() + " selected, but the vector gives it no rank or final score");
      }
      assertEquals(rank.getAsInt(), m.getRank(), m.getId() + ": rank");
      assertEquals(score.getAsDouble(), m.getBreakdown().getFinalScore(), 1e-9, m.getId() + ": final_score");
    }
    List<String> wantIds = new ArrayList<>();
    want.getAsJsonArray("selected_ids").forEach(e -> wantIds.add(e.getAsString()));
    assertEquals(wantIds, ids, "selected");
    Map<String, String> dropped = new TreeMap<>();
    for (DroppedMemory d : resp.getDroppedList()) {
      dropped.put(d.getId(), d.getReason().name());
    }
    Map<String, String> wantDropped = new TreeMap<>();
    want.getAsJsonObject("dropped").entrySet().forEach(e -> wantDropped.put(e.getKey(), e.getValue().getAsString()));
    assertEquals(wantDropped, dropped, "dropped");
    assertEquals(req.getCandidatesCount(), resp.getSelectedCount() + resp.getDroppedCount(), "accounted for");
    checkExtras(want, resp);
    checkReceipt(req, resp);
  }

  /**
   * Receipts.verify rebuilds the receipt from the request and the response and it verifies; copies with one
   * score changed (one ulp up), one id swapped (or renamed) and one dropped candidate removed fail.
   */
  private static void checkReceipt(RankRequest req, RankResponse resp) {
    Receipts.Check check = Receipts.verify(req, resp, null);
    assertTrue(check.ok(), "receipt: " + check);
    assertEquals(resp.getReceipt().getDigest(), check.digest());
    Map<String, RankResponse> tampered = new LinkedHashMap<>();
    RankResponse.Builder bad = resp.toBuilder();
    if (bad.getSelectedCount() > 0) {
      bad.getSelectedBuilder(0).setScore(Math.nextUp(bad.getSelected(0).getScore()));
    } else {
      bad.getDroppedBuilder(0).setScore(Math.nextUp(bad.getDropped(0).getScore()));
    }
    tampered.put("score", bad.build());
    bad = resp.toBuilder();
    if (bad.getSelectedCount() > 0 && bad.getDroppedCount() > 0) {
      String s = bad.getSelected(0).getId();
      bad.getSelectedBuilder(0).setId(bad.getDropped(0).getId());
      bad.getDroppedBuilder(0).setId(s);
    } else if (bad.getSelectedCount() > 0) {
      bad.getSelectedBuilder(0).setId(bad.getSelected(0).getId() + "-x");
    } else {
      bad.getDroppedBuilder(0).setId(bad.getDropped(0).getId() + "-x");
    }
    tampered.put("id", bad.build());
    if (resp.getDroppedCount() > 0) {
      tampered.put("dropped", resp.toBuilder().removeDropped(0).build());
    }
    tampered.forEach((what, copy) -> {
      Receipts.Check got = Receipts.verify(req, copy, null);
      assertTrue(!got.ok() && !got.problems().isEmpty(), "tampered " + what + " verified: " + got);
    });
  }

  @Test
  void receiptQuotingAndFloats() {
    String s = "a\"b\\c\n\t\b\f\r\u0001\u001f\u007f é😀\u2028/<&>";
    assertEquals("\"a\\\"b\\\\c\\n\\t\\b\\f\\r\\u0001\\u001f\\u007f \\u00e9\\ud83d\\ude00\\u2028/<&>\"",
        Receipts.q(s));
    assertEquals("3fb999999999999a", Receipts.f(0.1));
    assertEquals("8000000000000000", Receipts.f(-0.0));
    Receipts.Check alone = Receipts.verify(null, RankResponse.newBuilder()
        .setReceipt(memrank.v1.Ranking.Receipt.newBuilder().setSchema(Receipts.SCHEMA)).build(), null);
    assertTrue(!alone.ok() && alone.problems().isEmpty() && alone.unchecked().get(1).startsWith("the digest"));
  }

  /**
   * The receipt fixtures (tests/vectors/receipts: v2 and v3, derived offline by derive.py) verify with the lines
   * they list, and a copy with the first selected score one ulp lower does not.
   */
  @Test
  void receiptFixtures() throws IOException, Receipts.UnverifiableException {
    List<Path> paths;
    try (Stream<Path> s = Files.list(DIR.resolve("receipts"))) {
      paths = s.filter(p -> p.toString().endsWith(".json")).sorted().toList();
    }
    TreeSet<String> schemas = new TreeSet<>();
    for (Path p : paths) {
      JsonObject fx = JsonParser.parseString(Files.readString(p, StandardCharsets.UTF_8)).getAsJsonObject();
      RankRequest.Builder req = RankRequest.newBuilder();
      JsonFormat.parser().merge(fx.get("request").toString(), req);
      RankResponse.Builder resp = RankResponse.newBuilder();
      JsonFormat.parser().merge(fx.get("response").toString(), resp);
      schemas.add(resp.getReceipt().getSchema());
      StringBuilder lines = new StringBuilder();
      fx.getAsJsonArray("lines").forEach(l -> lines.append(l.getAsString()).append('\n'));
      assertEquals(lines.toString(), Receipts.canonical(req.build(), resp.build()), p.toString());
      Receipts.Check check = Receipts.verify(req.build(), resp.build(), null);
      assertTrue(check.ok(), p + ": " + check);
      resp.getSelectedBuilder(0).setScore(Math.nextDown(resp.getSelected(0).getScore()));
      assertTrue(!Receipts.verify(req.build(), resp.build(), null).ok(), p + ": a changed score verified");
    }
    assertEquals(new TreeSet<>(List.of(Receipts.SCHEMA_V2, Receipts.SCHEMA)), schemas);
  }

  /** The optional expectations (tests/vectors/README.md): covered_by, stages, importance_suggestions, shadow, receipt. */
  private static void checkExtras(JsonObject want, RankResponse resp) {
    if (want.has("covered_by")) {
      Map<String, String> got = new TreeMap<>();
      Map<String, String> exp = new TreeMap<>();
      want.getAsJsonObject("covered_by").entrySet().forEach(e -> exp.put(e.getKey(), e.getValue().getAsString()));
      for (DroppedMemory d : resp.getDroppedList()) {
        if (exp.containsKey(d.getId())) {
          got.put(d.getId(), d.getBreakdown().getCoveredBy());
        }
      }
      assertEquals(exp, got, "covered_by");
    }
    if (want.has("stages")) {
      JsonObject stages = want.getAsJsonObject("stages");
      for (RankedMemory m : resp.getSelectedList()) {
        JsonArray recs = stages.getAsJsonArray(m.getId());
        assertEquals(recs.size(), m.getStagesCount(), m.getId() + ": stages " + m.getStagesList());
        for (int i = 0; i < recs.size(); i++) {
          JsonObject r = recs.get(i).getAsJsonObject();
          RankingStage st = m.getStages(i);
          String where = m.getId() + ": stage " + i + " " + r;
          if (r.has("stage")) {
            assertEquals(r.get("stage").getAsString(), st.getStage(), where);
          }
          if (r.has("provenance")) {
            assertEquals(r.get("provenance").getAsString(), st.getProvenance(), where);
          }
          if (r.has("objective_contains")) {
            assertTrue(st.getObjective().contains(r.get("objective_contains").getAsString()), where + ": " + st.getObjective());
          }
          assertEquals(r.get("position").getAsInt(), st.getPosition(), where);
          assertEquals(r.get("input_score").getAsDouble(), st.getInputScore(), 1e-9, where);
          if (r.has("output_score")) {
            assertEquals(r.get("output_score").getAsDouble(), st.getOutputScore(), 1e-9, where);
          }
        }
      }
    }
    if (want.has("importance_suggestions")) {
      JsonObject exp = want.getAsJsonObject("importance_suggestions");
      Map<String, Double> got = new TreeMap<>();
      for (ImportanceSuggestion s : resp.getImportanceSuggestionsList()) {
        got.put(s.getId(), s.getSuggestedImportance());
      }
      assertEquals(resp.getImportanceSuggestionsCount(), got.size(), "importance_suggestions: an id twice");
      assertEquals(new TreeSet<>(exp.keySet()), got.keySet(), "importance_suggestions");
      exp.entrySet().forEach(e -> assertEquals(e.getValue().getAsDouble(), got.get(e.getKey()), 1e-9,
          "importance_suggestions " + e.getKey()));
    }
    if (want.has("shadow")) {
      JsonObject exp = want.getAsJsonObject("shadow");
      assertTrue(resp.hasShadow(), "no shadow comparison");
      ShadowComparison sh = resp.getShadow();
      assertEquals(exp.get("profile").getAsString(), sh.getProfile(), "shadow profile");
      assertEquals(exp.get("k").getAsInt(), sh.getK(), "shadow k");
      List<String> ids = new ArrayList<>();
      exp.getAsJsonArray("selected_ids").forEach(e -> ids.add(e.getAsString()));
      assertEquals(ids, sh.getSelectedIdsList(), "shadow selected_ids");
      assertEquals(exp.get("overlap_at_k").getAsDouble(), sh.getOverlapAtK(), 1e-9, "overlap_at_k");
      assertEquals(exp.get("kendall_tau").getAsDouble(), sh.getKendallTau(), 1e-9, "kendall_tau");
    }
    if (want.has("receipt")) {
      JsonObject exp = want.getAsJsonObject("receipt");
      assertEquals(exp.get("schema").getAsString(), resp.getReceipt().getSchema(), "receipt schema");
      List<String> lines = new ArrayList<>();
      exp.getAsJsonArray("lines").forEach(e -> lines.add(e.getAsString()));
      assertEquals(receiptDigest(lines, resp.getPolicyVersion()), resp.getReceipt().getDigest(), "receipt digest");
    }
  }

  /**
   * SHA-256 hex of the vector's canonical receipt lines, ${policy_version} filled with the JSON string of
   * the response's policy_version, each line ending in a newline.
   */
  static String receiptDigest(List<String> lines, String policyVersion) {
    assertTrue(policyVersion.matches("[ !#-\\[\\]-~]*"), "policy_version " + policyVersion + " needs JSON escapes");
    StringBuilder text = new StringBuilder();
    for (String line : lines) {
      text.append(line.replace("${policy_version}", "\"" + policyVersion + "\"")).append('\n');
    }
    try {
      byte[] sum = MessageDigest.getInstance("SHA-256").digest(text.toString().getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(sum);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
