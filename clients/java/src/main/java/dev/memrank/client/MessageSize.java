package dev.memrank.client;

import com.google.protobuf.MessageLite;
import io.grpc.Status;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A message over a size limit, said as which limit it is and the setting that raises it: this client's
 * {@code maxMessageBytes} or the server's {@code server.max_message_bytes}. grpc's own words ("SERVER: Received
 * message larger than max (100146 vs. 65536)") name neither.
 */
final class MessageSize {
  static final String SERVER_LIMIT = "the server's server.max_message_bytes (MEMRANK_MAX_MESSAGE_BYTES)";
  static final String CLIENT_SETTING = "RankingClient.builder(target).maxMessageBytes(bytes)";
  // The server's refusal of a request (grpc core), and grpc-java's of a response over maxInboundMessageSize.
  private static final Pattern SERVER = Pattern.compile("Received message larger than max \\((\\d+) vs\\. (\\d+)\\)");
  private static final Pattern INBOUND = Pattern.compile("exceeds maximum size (\\d+): (\\d+)");

  private MessageSize() {}

  /**
   * Refuses a request over this client's limit before it is sent, as RESOURCE_EXHAUSTED. (grpc-java would
   * refuse it too, but a blocking call then never returns: grpc/grpc-java#12109.) The size is memoised by
   * protobuf, so sending the request does not compute it again.
   */
  static void check(MessageLite request, int limit) {
    int size = request.getSerializedSize();
    if (size > limit) {
      String said = "the request is " + size + " bytes, over this client's maxMessageBytes, " + limit
          + " bytes: send fewer or smaller candidates, or raise maxMessageBytes (" + CLIENT_SETTING + ") and "
          + SERVER_LIMIT + " with it";
      throw RankingException.from(Status.RESOURCE_EXHAUSTED.withDescription(said).asRuntimeException());
    }
  }

  /** A RESOURCE_EXHAUSTED description with the limit named (grpc's words after it), others as they are. */
  static String explain(String description) {
    Matcher server = SERVER.matcher(description);
    if (server.find()) {
      return "the request is " + server.group(1) + " bytes, over " + SERVER_LIMIT + ", " + server.group(2)
          + " bytes: send fewer or smaller candidates, or raise that setting on the server [grpc: " + description
          + "]";
    }
    Matcher inbound = INBOUND.matcher(description);
    if (inbound.find()) {
      return "the response is " + inbound.group(2) + " bytes, over this client's maxMessageBytes, "
          + inbound.group(1) + " bytes: raise it (" + CLIENT_SETTING + ") [grpc: " + description + "]";
    }
    return description;
  }
}
