# syntax=docker/dockerfile:1
# memrank: the gRPC ranking server, `memrank serve`.
#   docker build -t memrank:0.1.0 .
#   docker run --rm -p 50051:50051 -p 9464:9464 memrank:0.1.0
# No HEALTHCHECK: Kubernetes probes grpc.health.v1 directly (see helm/memrank).
# The root filesystem may be read-only; the server needs a writable TMPDIR
# (the chart mounts an emptyDir at /tmp) for multi-worker metrics files.

ARG PYTHON_VERSION=3.12

# Build stage: wheels for memrank and its runtime dependencies only.
FROM python:${PYTHON_VERSION}-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY server ./server
RUN pip wheel --wheel-dir /wheels .

# Runtime stage: no compilers, no build files, a non-root user.
FROM python:${PYTHON_VERSION}-slim
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-index --find-links /wheels memrank \
 && groupadd --system --gid 10001 memrank \
 && useradd --system --uid 10001 --gid memrank --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin memrank
USER 10001:10001
# gRPC (RankingService, grpc.health.v1, reflection) and Prometheus /metrics.
EXPOSE 50051 9464
ENTRYPOINT ["memrank", "serve"]
