"""Process control: a server process from start to drain (``server_process``), the supervisor of workers,
the start-up checks (``preflight``), the ready line (``announce``) and profile reloads (``reload``).

Call handling (intake, service, errors, auth, TLS, tracing) is ``memrank.grpc``'s; this package sits above it.
"""
