package dev.memrank.client;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.BadRequest;
import com.google.rpc.ErrorInfo;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.protobuf.StatusProto;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A failed call: the gRPC code and message, the {@code google.rpc.BadRequest} field
 * violations and the {@code google.rpc.ErrorInfo} reason the server attached. The
 * original {@link io.grpc.StatusRuntimeException} is the cause, so
 * {@code Status.fromThrowable(e)} still gives the code.
 */
public final class RankingException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final Status.Code code;
  private final String serverMessage;
  private final List<FieldViolation> violations;
  private final String reason;
  private final String domain;
  private final Map<String, String> infoMetadata;
  private final transient Metadata trailers;

  RankingException(Status.Code code, String serverMessage, List<FieldViolation> violations, String reason,
      String domain, Map<String, String> infoMetadata, Metadata trailers, Throwable cause) {
    super(format(code, serverMessage, violations), cause);
    this.code = code;
    this.serverMessage = serverMessage;
    this.violations = List.copyOf(violations);
    this.reason = reason;
    this.domain = domain;
    this.infoMetadata = Map.copyOf(infoMetadata);
    this.trailers = trailers == null ? new Metadata() : trailers;
  }

  /** Decodes a gRPC failure, including the {@code grpc-status-details-bin} rich status. */
  public static RankingException from(Throwable err) {
    if (err instanceof RankingException e) {
      return e;
    }
    Status status = Status.fromThrowable(err);
    List<FieldViolation> violations = new ArrayList<>();
    String reason = "";
    String domain = "";
    Map<String, String> infoMetadata = Map.of();
    com.google.rpc.Status rich = StatusProto.fromThrowable(err);
    if (rich != null) {
      for (Any detail : rich.getDetailsList()) {
        try {
          if (detail.is(BadRequest.class)) {
            for (BadRequest.FieldViolation v : detail.unpack(BadRequest.class).getFieldViolationsList()) {
              violations.add(new FieldViolation(v.getField(), v.getDescription()));
            }
          } else if (detail.is(ErrorInfo.class)) {
            ErrorInfo info = detail.unpack(ErrorInfo.class);
            reason = info.getReason();
            domain = info.getDomain();
            infoMetadata = info.getMetadataMap();
          }
        } catch (InvalidProtocolBufferException ignored) {
          // A detail that does not parse is left out; the code and message still stand.
        }
      }
    }
    String message = status.getDescription() == null ? "" : status.getDescription();
    if (status.getCode() == Status.Code.RESOURCE_EXHAUSTED) {
      message = MessageSize.explain(message); // a size limit named with the setting that raises it
    }
    return new RankingException(status.getCode(), message, violations, reason, domain, infoMetadata,
        Status.trailersFromThrowable(err), err);
  }

  private static String format(Status.Code code, String message, List<FieldViolation> violations) {
    StringBuilder b = new StringBuilder(code.name()).append(": ").append(message);
    for (FieldViolation v : violations) {
      b.append(" [").append(v.field()).append(": ").append(v.description()).append(']');
    }
    return b.toString();
  }

  /** The gRPC status code, e.g. {@code INVALID_ARGUMENT}. */
  public Status.Code code() {
    return code;
  }

  /** The code's name, e.g. {@code "INVALID_ARGUMENT"}. */
  public String codeName() {
    return code.name();
  }

  /** The server's message (the status description); {@code ""} when it sent none. */
  public String serverMessage() {
    return serverMessage;
  }

  /** The {@code google.rpc.BadRequest} field violations, in the server's order. */
  public List<FieldViolation> violations() {
    return violations;
  }

  /** The violated field paths, e.g. {@code candidates[1].id}. */
  public List<String> fields() {
    return violations.stream().map(FieldViolation::field).toList();
  }

  /** Whether a violation names the field. */
  public boolean hasField(String field) {
    return violations.stream().anyMatch(v -> v.field().equals(field));
  }

  /** The {@code google.rpc.ErrorInfo} reason, e.g. {@code UNKNOWN_PROFILE}; {@code ""} when absent. */
  public String reason() {
    return reason;
  }

  /** The {@code google.rpc.ErrorInfo} domain ({@code memrank.v1}); {@code ""} when absent. */
  public String domain() {
    return domain;
  }

  /** The {@code google.rpc.ErrorInfo} metadata, e.g. {@code fields}. */
  public Map<String, String> errorInfoMetadata() {
    return infoMetadata;
  }

  /** The call's trailing metadata. */
  public Metadata trailers() {
    return trailers;
  }
}
