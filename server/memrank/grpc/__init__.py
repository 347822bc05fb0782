"""Call handling: how a gRPC call reaches the core and how it ends.

``server`` builds a server (RankingService, health, reflection on grpc.aio listeners); a call goes
``intake`` (read timeout, concurrency slots, the ``inflight`` byte budget) then ``service`` (the wire API of
``memrank.api`` around the pure core), and every status it can end with is decided in ``errors``' one table.
``auth``, ``tls`` and ``tracing`` sit beside; ``running`` is a started server and its drain. Running servers
as processes is ``memrank.lifecycle``'s.
"""
