"""memrank: a stateless gRPC ranking sidecar for agent memory."""

__version__ = "0.1.0"
__all__ = ["__version__"]
