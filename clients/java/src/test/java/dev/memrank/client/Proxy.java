package dev.memrank.client;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Deadline;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerCredentials;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import memrank.v1.Ranking.RankRequest;
import memrank.v1.Ranking.RankResponse;
import memrank.v1.RankingServiceGrpc;

/**
 * A gRPC server on a loopback port that forwards Rank to the live memrank server, so the
 * answers (and errors, with their rich details) are the real server's. It records what
 * arrived (headers, deadlines) and can fail the first calls with UNAVAILABLE or hang, which
 * the real server cannot be asked to do.
 */
final class Proxy implements AutoCloseable {
  static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
  private static final Context.Key<Metadata> HEADERS = Context.key("headers");

  final AtomicInteger calls = new AtomicInteger();
  /** The authorization header of each call ("" when absent). */
  final List<String> authorizations = new CopyOnWriteArrayList<>();
  /** The nanoseconds left of each call's deadline on arrival (Long.MAX_VALUE when it had none). */
  final List<Long> deadlines = new CopyOnWriteArrayList<>();
  volatile int failFirst;
  /** How long a failing call waits before it answers UNAVAILABLE. */
  volatile long failAfterMs;
  volatile boolean hang;

  private final ManagedChannel upstream;
  private final Server server;
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();

  Proxy(String upstreamAddr, ServerCredentials credentials) throws IOException {
    upstream = Grpc.newChannelBuilder(upstreamAddr, InsecureChannelCredentials.create()).build();
    RankingServiceGrpc.RankingServiceBlockingStub stub = RankingServiceGrpc.newBlockingStub(upstream);
    RankingServiceGrpc.RankingServiceImplBase service = new RankingServiceGrpc.RankingServiceImplBase() {
      @Override
      public void rank(RankRequest request, StreamObserver<RankResponse> out) {
        int n = calls.incrementAndGet();
        String auth = HEADERS.get().get(AUTHORIZATION);
        authorizations.add(auth == null ? "" : auth);
        Deadline d = Context.current().getDeadline();
        deadlines.add(d == null ? Long.MAX_VALUE : d.timeRemaining(TimeUnit.NANOSECONDS));
        if (hang) {
          return; // never answers: the caller's deadline ends the call
        }
        if (n <= failFirst) {
          Runnable fail = () -> out.onError(
              Status.UNAVAILABLE.withDescription("proxy: failing call " + n).asRuntimeException());
          if (failAfterMs > 0) {
            timer.schedule(fail, failAfterMs, TimeUnit.MILLISECONDS);
          } else {
            fail.run();
          }
          return;
        }
        try {
          out.onNext(stub.rank(request)); // the caller's deadline goes along (grpc Context)
          out.onCompleted();
        } catch (StatusRuntimeException e) {
          out.onError(e.getStatus().asRuntimeException(e.getTrailers()));
        }
      }
    };
    ServerInterceptor keepHeaders = new ServerInterceptor() {
      @Override
      public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
          ServerCallHandler<Q, R> next) {
        return Contexts.interceptCall(Context.current().withValue(HEADERS, headers), call, headers, next);
      }
    };
    server = Grpc.newServerBuilderForPort(0, credentials)
        .addService(ServerInterceptors.intercept(service, keepHeaders))
        .build()
        .start();
  }

  String address() {
    return "127.0.0.1:" + server.getPort();
  }

  @Override
  public void close() {
    server.shutdownNow();
    upstream.shutdownNow();
    timer.shutdownNow();
    try {
      server.awaitTermination(5, TimeUnit.SECONDS);
      upstream.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
