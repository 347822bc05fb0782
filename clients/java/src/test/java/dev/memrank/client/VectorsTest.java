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
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import memrank.v1.Ranking.DroppedMemory;
import memrank.v1.Ranking.RankRequest;
import memrank.v1.Ranking.RankResponse;
import memrank.v1.Ranking.RankedMemory;
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
  }
}
