package dev.memrank.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.protobuf.util.JsonFormat;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import memrank.v1.Ranking.RankRequest;
import memrank.v1.Ranking.RankResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Every conformance vector sent through the client's own types (Memory objects, Requests.rankRequest: the
 * columnar form) against the live server at MEMRANK_ADDR gives the same response, byte for byte, as the vector's
 * own per-candidate request; a refusal has the same code and names the same row's field in the columns' words.
 * The columnar requests' receipts verify (v3 from the server, v2 and v3 from the fixtures), and tampered copies
 * do not.
 */
class ColumnarVectorsTest {
  private static RankingClient client;
  // candidates[i].field -> columns.<column>[i]: the server's column names (proto CandidateColumns).
  private static final Map<String, String> COLUMN = Map.of("id", "ids", "retrieval_score", "retrieval_scores",
      "importance", "importance", "content", "contents", "reranker_score", "reranker_scores");
  private static final Pattern ROW = Pattern.compile("candidates\\[(\\d+)\\]\\.(\\w+)");

  /** The vector's request with its candidates as Memory objects, sent as a user of the client sends them. */
  static RankRequest columnar(RankRequest perCandidate) {
    List<Memory> memories = perCandidate.getCandidatesList().stream().map(Memory::of).toList();
    return Requests.rankRequest(perCandidate.toBuilder().clearCandidates(), memories, null);
  }

  static String inColumns(String field) {
    Matcher m = ROW.matcher(field);
    return m.matches() ? "columns." + COLUMN.get(m.group(2)) + "[" + m.group(1) + "]" : field;
  }

  @TestFactory
  Stream<DynamicTest> sameResponseEitherForm() throws IOException {
    client = RankingClient.builder(Live.addr()).timeout(Duration.ofSeconds(10)).build();
    return VectorsTest.vectors().stream().map(v -> DynamicTest.dynamicTest(v.name(), () -> compare(v)));
  }

  @AfterAll
  static void close() {
    if (client != null) {
      client.close();
    }
  }

  private static void compare(VectorsTest.Vector v) throws IOException {
    RankRequest rows = VectorsTest.request(v);
    RankRequest cols = columnar(rows);
    assertTrue(cols.hasColumns() && cols.getCandidatesCount() == 0, "sent as columns");
    assertEquals(rows.getCandidatesCount(), cols.getColumns().getIdsCount());
    JsonObject wantError = v.json().getAsJsonObject("expect_error");
    if (wantError != null) {
      RankingException a = assertThrows(RankingException.class, () -> client.rank(rows));
      RankingException b = assertThrows(RankingException.class, () -> client.rank(cols));
      assertEquals(a.code(), b.code(), "code");
      String field = inColumns(wantError.get("field").getAsString());
      assertTrue(b.hasField(field), field + " not among " + b.fields());
      return;
    }
    RankResponse a = client.rank(rows);
    RankResponse b = client.rank(cols);
    assertEquals(VectorsTest.digest(a), VectorsTest.digest(b), "response bytes differ: " + a + " vs " + b);
    Receipts.Check check = Receipts.verify(cols, b, null);
    assertTrue(check.ok(), "receipt of the columnar request: " + check);
    RankResponse.Builder bad = b.toBuilder();
    if (bad.getSelectedCount() > 0) {
      bad.getSelectedBuilder(0).setScore(Math.nextUp(bad.getSelected(0).getScore()));
    } else {
      bad.getDroppedBuilder(0).setScore(Math.nextUp(bad.getDropped(0).getScore()));
    }
    assertFalse(Receipts.verify(cols, bad.build(), null).ok(), "a tampered score verified");
    RankRequest.Builder other = cols.toBuilder();
    other.getColumnsBuilder().setIds(0, cols.getColumns().getIds(0) + "-x");
    assertFalse(Receipts.verify(other.build(), b, null).ok(), "another request verified");
  }

  /** The receipt fixtures (v2 and v3, derived offline) with their requests sent as columns: the same lines. */
  @Test
  void receiptFixturesInColumns() throws IOException, Receipts.UnverifiableException {
    List<Path> paths;
    try (Stream<Path> s = Files.list(Path.of("..", "..", "tests", "vectors", "receipts"))) {
      paths = s.filter(p -> p.toString().endsWith(".json")).sorted().toList();
    }
    assertTrue(paths.size() >= 2, "no receipt fixtures");
    for (Path p : paths) {
      JsonObject fx = JsonParser.parseString(Files.readString(p, StandardCharsets.UTF_8)).getAsJsonObject();
      RankRequest.Builder req = RankRequest.newBuilder();
      JsonFormat.parser().merge(fx.get("request").toString(), req);
      RankResponse.Builder resp = RankResponse.newBuilder();
      JsonFormat.parser().merge(fx.get("response").toString(), resp);
      RankRequest cols = columnar(req.build());
      assertTrue(cols.hasColumns(), p.toString());
      StringBuilder lines = new StringBuilder();
      fx.getAsJsonArray("lines").forEach(l -> lines.append(l.getAsString()).append('\n'));
      assertEquals(lines.toString(), Receipts.canonical(cols, resp.build()), p.toString());
      assertTrue(Receipts.verify(cols, resp.build(), null).ok(), p.toString());
      resp.getSelectedBuilder(0).setScore(Math.nextDown(resp.getSelected(0).getScore()));
      assertFalse(Receipts.verify(cols, resp.build(), null).ok(), p + ": a changed score verified");
    }
  }
}
