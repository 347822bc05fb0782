package dev.memrank.client;

import com.google.protobuf.ByteString;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import memrank.v1.Ranking.RankRequest;

/**
 * Packs embeddings into {@code RankRequest.embeddings_f32} and {@code embedding_dim}:
 * one row per candidate, in candidate order, row-major, each value a little-endian
 * IEEE-754 float32. The server then reads the whole matrix at once instead of one
 * repeated field per candidate. The candidates must leave {@code embedding} empty
 * (the server refuses both at once).
 */
public final class Embeddings {
  private Embeddings() {}

  /** Sets the request's packed embeddings from one row per candidate; returns the builder. */
  public static RankRequest.Builder pack(RankRequest.Builder request, float[][] rows) {
    if (rows.length != request.getCandidatesCount()) {
      throw new IllegalArgumentException(
          rows.length + " embedding rows for " + request.getCandidatesCount() + " candidates");
    }
    if (rows.length == 0) {
      throw new IllegalArgumentException("no candidates, nothing to pack");
    }
    int dim = rows[0].length;
    if (dim == 0) {
      throw new IllegalArgumentException("embedding rows are empty");
    }
    ByteBuffer buf = ByteBuffer.allocate(rows.length * dim * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < rows.length; i++) {
      if (rows[i].length != dim) {
        throw new IllegalArgumentException(
            "embedding row " + i + " has " + rows[i].length + " values, row 0 has " + dim);
      }
      for (float v : rows[i]) {
        buf.putFloat(v);
      }
    }
    return request.setEmbeddingsF32(ByteString.copyFrom(buf.array())).setEmbeddingDim(dim);
  }

  /** Sets the request's packed embeddings from one flat row-major matrix of {@code dim} values per row. */
  public static RankRequest.Builder pack(RankRequest.Builder request, float[] flat, int dim) {
    if (dim < 1 || flat.length % dim != 0) {
      throw new IllegalArgumentException(
          "a flat matrix of " + flat.length + " values needs dim >= 1 dividing it, got " + dim);
    }
    float[][] rows = new float[flat.length / dim][];
    for (int i = 0; i < rows.length; i++) {
      rows[i] = java.util.Arrays.copyOfRange(flat, i * dim, (i + 1) * dim);
    }
    return pack(request, rows);
  }
}
