"""Prometheus metrics and signal drift, declared once against a registry passed in.

``declare`` names every metric; ``recorder`` turns a finished call's outcome into observations (``deferred``
publishes the drift gauges at the scrape); ``signal_values`` is the signal histogram's collector, its counts
kept in a ``table`` (in memory, or in a worker's file the supervisor sums); ``drift``, ``window`` and
``reference`` compare the live signal distributions with a reference; ``registry`` builds registries (one per
process, or the supervisor's multiprocess one); ``http`` serves /metrics. The only package that imports
``prometheus_client``.
"""
