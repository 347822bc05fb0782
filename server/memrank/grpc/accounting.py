"""Calls that end before a RankingService method runs are counted too: the ``method`` label of a full method
name, and the handler of methods no service has (grpc would answer UNIMPLEMENTED without a trace)."""

from __future__ import annotations

from collections.abc import Callable

import grpc

from memrank._gen.v1 import ranking_service_pb2 as svc_pb
from memrank.grpc.errors import NoMethod, code_of, refuse

_SERVICE = svc_pb.DESCRIPTOR.services_by_name["RankingService"]
_METHODS = frozenset(m.name for m in _SERVICE.methods)


def method_label(path: str) -> str:
    """The ``method`` label of a full method name: a RankingService method's name, else "other" (a caller
    choosing names must not choose label values)."""
    service, _, name = path.strip("/").partition("/")
    return name if service == _SERVICE.full_name and name in _METHODS else "other"


class Unknown(grpc.GenericRpcHandler):  # type: ignore[misc]  # grpc ships no types
    """Any method no service has: UNIMPLEMENTED, as grpc would answer, but counted (method "other")."""

    def __init__(self, observe: Callable[[str, str], None]) -> None:
        async def unknown(_requests: object, context: grpc.aio.ServicerContext) -> None:
            refusal = NoMethod("unknown method")
            observe("other", code_of(refusal).name)
            await refuse(context, refusal)

        self._handler = grpc.stream_unary_rpc_method_handler(unknown)

    def service(self, _details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        """The refusing handler, whatever the method."""
        return self._handler
