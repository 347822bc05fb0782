package dev.memrank.client;

import com.google.protobuf.UnsafeByteOperations;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
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

  /**
   * Sets the request's packed embeddings from one row per candidate (in either form: {@code candidates} or
   * {@code columns.ids}); returns the builder.
   */
  public static RankRequest.Builder pack(RankRequest.Builder request, float[][] rows) {
    int n = request.hasColumns() ? request.getColumns().getIdsCount() : request.getCandidatesCount();
    if (rows.length != n) {
      throw new IllegalArgumentException(rows.length + " embedding rows for " + n + " candidates");
    }
    if (rows.length == 0) {
      throw new IllegalArgumentException("no candidates, nothing to pack");
    }
    int dim = rows[0].length;
    if (dim == 0) {
      throw new IllegalArgumentException("embedding rows are empty");
    }
    byte[] bytes = new byte[rows.length * dim * Float.BYTES];
    FloatBuffer floats = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
    for (int i = 0; i < rows.length; i++) {
      if (rows[i].length != dim) {
        throw new IllegalArgumentException(
            "embedding row " + i + " has " + rows[i].length + " values, row 0 has " + dim);
      }
      floats.put(rows[i]); // one bulk copy per row, in little-endian order
    }
    // The array is this method's own and never written again: the ByteString may share it.
    return request.setEmbeddingsF32(UnsafeByteOperations.unsafeWrap(bytes)).setEmbeddingDim(dim);
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
