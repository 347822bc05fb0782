"""A Rank call from request bytes as the server makes it, in whichever tree is on the path.

The bench compares trees from before and after the handler's signature changed (``handle_rank(request,
settings, call)`` with the embeddings on ``Call``, then ``handle_rank(RankInput, Policy, call)``), so its
children call through this one adapter instead of naming either signature.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def rank_handler(settings: Any) -> Callable[[bytes, Any], Any]:
    """``(request bytes, Call) -> RankResponse``, parsed as the tree's server parses (packed embeddings split
    off the wire where the tree does so)."""
    try:
        from memrank.api import call as api
    except ImportError:  # trees before the module moves of issue #43
        from memrank.api import handle as api  # type: ignore[no-redef]
    if hasattr(api, "Policy"):
        from memrank.api.wire import parse_rank

        policy = api.Policy.of(settings)
        return lambda data, call: api.handle_rank(parse_rank(data), policy, call)
    from memrank._gen.v1 import ranking_pb2 as pb

    try:
        from memrank.api.wire import split_embeddings
    except ImportError:
        split_embeddings = None

    def old(data: bytes, call: Any) -> Any:
        parts = split_embeddings(data) if split_embeddings is not None else None
        if parts is None:
            return api.handle_rank(pb.RankRequest.FromString(data), settings, call)
        call = type(call)(**{**{f: getattr(call, f) for f in call.__slots__}, "embeddings_f32": parts[1]})
        return api.handle_rank(pb.RankRequest.FromString(parts[0]), settings, call)

    return old


def call_of(**fields: Any) -> Any:
    """The tree's ``Call`` with these fields."""
    try:
        from memrank.api.call import Call
    except ImportError:
        from memrank.api.handle import Call  # type: ignore[no-redef]
    return Call(**fields)
