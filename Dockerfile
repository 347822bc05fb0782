# syntax=docker/dockerfile:1
# memrank: the gRPC ranking server, `memrank serve`.
#   docker build -t memrank:0.1.0 .
#   docker run --rm -p 50051:50051 -p 9464:9464 memrank:0.1.0
# No HEALTHCHECK: Kubernetes probes grpc.health.v1 directly (see helm/memrank).
# The root filesystem may be read-only; the server needs a writable TMPDIR
# (the chart mounts an emptyDir at /tmp) for multi-worker metrics files.
#
# BASE_IMAGE: any Debian-like image with python3 (3.11 to 3.13), its venv module,
# groupadd and useradd. Both stages use it, so the virtual environment built in
# the first runs on the same interpreter in the second. CI builds on a stand-in
# made from Debian packages (scripts/ci_image.sh):
#   buildah bud --build-arg BASE_IMAGE=localhost/memrank-base:bookworm -t memrank:0.1.0 .
ARG BASE_IMAGE=docker.io/library/python:3.12-slim

# Build stage: the memrank wheel, installed with its runtime dependencies only
# into a virtual environment, which then loses pip and setuptools.
FROM ${BASE_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY server ./server
# Extras to install with it, comma-separated (e.g. --build-arg EXTRAS=tracing for OpenTelemetry); none by default.
ARG EXTRAS=""
RUN python3 -m venv /opt/memrank \
 && /opt/memrank/bin/python -m pip wheel --no-deps --wheel-dir /wheels . \
 && wheel="$(echo /wheels/memrank_sidecar-*.whl)" \
 && /opt/memrank/bin/python -m pip install "${wheel}${EXTRAS:+[$EXTRAS]}" \
 && /opt/memrank/bin/python -m pip uninstall --yes pip setuptools \
 && /opt/memrank/bin/memrank --version

# Runtime stage: the virtual environment at the same path on the same base;
# no compilers, no build files, no pip, a non-root user.
FROM ${BASE_IMAGE}
ENV PATH=/opt/memrank/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
RUN groupadd --system --gid 10001 memrank \
 && useradd --system --uid 10001 --gid memrank --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin memrank \
 && env --block-signal=HUP,TERM,INT true
COPY --from=build /opt/memrank /opt/memrank
LABEL org.opencontainers.image.title=memrank \
      org.opencontainers.image.description="memrank, a stateless gRPC ranking sidecar for agent memory" \
      org.opencontainers.image.licenses=Apache-2.0
USER 10001:10001
# gRPC (RankingService, grpc.health.v1, reflection) and Prometheus /metrics.
EXPOSE 50051 9464
# coreutils' env (>= 8.31; checked above) blocks SIGHUP, SIGTERM and SIGINT, then execs memrank, which
# inherits the block and lifts it once its handlers are in: a signal while the interpreter starts (0.1-0.6 s
# before memrank's first line) then waits for them, a SIGHUP reloads and a SIGTERM drains. Without it such a
# signal is dropped (memrank is PID 1, and the kernel drops what PID 1 does not handle) or, outside a PID
# namespace, ends the process (docs/operations/reliability.md, Faults).
ENTRYPOINT ["env", "--block-signal=HUP,TERM,INT", "memrank", "serve"]
