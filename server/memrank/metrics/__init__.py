"""Prometheus metrics and signal drift, declared once against a registry passed in.

``declare`` names every metric; ``recorder`` turns a finished call's outcome into observations (``deferred``
publishes them after the reply); ``drift``, ``window`` and ``reference`` compare the live signal distributions
with a reference; ``registry`` builds registries (one per process, or the supervisor's multiprocess one);
``http`` serves /metrics. The only package that imports ``prometheus_client``.
"""
