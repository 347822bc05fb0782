package dev.memrank.client.bench;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import dev.memrank.client.Memory;
import dev.memrank.client.RankingClient;
import dev.memrank.client.Requests;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import memrank.v1.Ranking.Budget;
import memrank.v1.Ranking.RankRequest;
import memrank.v1.Ranking.RankResponse;
import memrank.v1.Ranking.SafetyStatus;
import memrank.v1.Ranking.Source;

/**
 * The bench's end-to-end driver of the Java client: a call timed as a Java user makes it, from the values the
 * user holds (Memory objects, a float[][] of embeddings) to the response. A test class, so not in the jar.
 *
 * <p>Line protocol on stdin/stdout, one reply line per command:
 * <ul>
 *   <li>{@code load PATH}: reads a workload file ({@code {"query", "profile", "referenceTime", "budget":
 *       {"maxTokens", "maxItems"}, "candidates": [{"id", "layer", "kind", "content", "retrievalScore",
 *       "accessCount", "source", "safety", "importance"?, "createdAt"?, "lastAccessedAt"?}], "embeddings":
 *       [[float, ...], ...]}}, enums by name, times RFC 3339) into Memory objects and a float[][]; replies
 *       {@code ok}.
 *   <li>{@code rank}: builds the request with Requests.rankRequest, calls Rank, checks that something was
 *       selected; replies the elapsed nanoseconds (System.nanoTime) of the whole.
 *   <li>{@code build}: builds the request only (and its size, as sending computes it); replies the elapsed
 *       nanoseconds and the request's size in bytes: the client's own share of a call.
 *   <li>{@code quit}: exits.
 * </ul>
 * A failure replies {@code error <message>} and the driver keeps reading.
 *
 * <p>Run (from clients/java, after {@code mvn -o -q test-compile} and {@code mvn -o -q dependency:build-classpath
 * -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=runtime}):
 * {@code java -cp "target/classes:target/test-classes:$(cat target/classpath.txt)" dev.memrank.client.bench.E2e
 * 127.0.0.1:50051}
 */
public final class E2e {
  private final RankingClient client;
  private String query;
  private String profile;
  private Instant referenceTime;
  private int maxTokens;
  private int maxItems;
  private List<Memory> memories = List.of();
  private float[][] embeddings;

  private E2e(RankingClient client) {
    this.client = client;
  }

  public static void main(String[] args) throws IOException {
    if (args.length != 1) {
      System.err.println("usage: E2e HOST:PORT");
      System.exit(2);
    }
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    try (RankingClient client = RankingClient.builder(args[0]).timeout(Duration.ofSeconds(60)).build()) {
      E2e driver = new E2e(client);
      for (String line; (line = in.readLine()) != null; ) {
        String cmd = line.strip();
        if (cmd.equals("quit")) {
          break;
        }
        try {
          out.println(driver.run(cmd));
        } catch (RuntimeException | IOException e) {
          out.println("error " + String.valueOf(e.getMessage()).replace('\n', ' '));
        }
      }
    }
  }

  private String run(String cmd) throws IOException {
    if (cmd.startsWith("load ")) {
      load(Path.of(cmd.substring(5).strip()));
      return "ok";
    }
    if (cmd.equals("rank")) {
      return Long.toString(rank());
    }
    if (cmd.equals("build")) {
      long start = System.nanoTime();
      int size = request().getSerializedSize();
      return (System.nanoTime() - start) + " " + size;
    }
    throw new IllegalArgumentException("unknown command: " + cmd);
  }

  /** The request from the held values, as a user builds it. */
  private RankRequest request() {
    RankRequest.Builder params = RankRequest.newBuilder().setQuery(query).setProfile(profile)
        .setReferenceTime(RankingClient.timestamp(referenceTime))
        .setBudget(Budget.newBuilder().setMaxTokens(maxTokens).setMaxItems(maxItems));
    return Requests.rankRequest(params, memories, embeddings);
  }

  /** One call as a user makes it: the request from the held values, Rank, a look at the answer. */
  private long rank() {
    long start = System.nanoTime();
    RankResponse resp = client.rank(request());
    if (resp.getSelectedCount() == 0) {
      throw new IllegalStateException("nothing selected");
    }
    return System.nanoTime() - start;
  }

  private void load(Path path) throws IOException {
    JsonObject w = JsonParser.parseString(Files.readString(path, StandardCharsets.UTF_8)).getAsJsonObject();
    query = w.get("query").getAsString();
    profile = w.get("profile").getAsString();
    referenceTime = time(w.get("referenceTime"));
    JsonObject budget = w.getAsJsonObject("budget");
    maxTokens = budget.get("maxTokens").getAsInt();
    maxItems = budget.get("maxItems").getAsInt();
    List<Memory> ms = new ArrayList<>();
    for (JsonElement e : w.getAsJsonArray("candidates")) {
      JsonObject c = e.getAsJsonObject();
      Memory.Builder m = Memory.builder(c.get("id").getAsString()).layer(c.get("layer").getAsString())
          .kind(c.get("kind").getAsString()).content(c.get("content").getAsString())
          .retrievalScore(c.get("retrievalScore").getAsDouble()).accessCount(c.get("accessCount").getAsInt())
          .source(Source.valueOf(c.get("source").getAsString()))
          .safety(SafetyStatus.valueOf(c.get("safety").getAsString()));
      if (c.has("importance") && !c.get("importance").isJsonNull()) {
        m.importance(c.get("importance").getAsDouble());
      }
      m.createdAt(time(c.get("createdAt"))).lastAccessedAt(time(c.get("lastAccessedAt")));
      ms.add(m.build());
    }
    memories = List.copyOf(ms);
    JsonArray rows = w.has("embeddings") && !w.get("embeddings").isJsonNull() ? w.getAsJsonArray("embeddings") : null;
    embeddings = rows == null || rows.isEmpty() ? null : new float[rows.size()][];
    for (int i = 0; embeddings != null && i < embeddings.length; i++) {
      JsonArray row = rows.get(i).getAsJsonArray();
      embeddings[i] = new float[row.size()];
      for (int j = 0; j < row.size(); j++) {
        embeddings[i][j] = (float) row.get(j).getAsDouble(); // decimal -> double -> float32, as numpy
      }
    }
  }

  private static Instant time(JsonElement e) {
    return e == null || e.isJsonNull() ? null : OffsetDateTime.parse(e.getAsString()).toInstant();
  }
}
