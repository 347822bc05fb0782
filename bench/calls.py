"""A Rank call from request bytes as the server makes it, in whichever tree is on the path.

The bench compares trees from before and after the handler's signature changed (``handle_rank(request,
settings, call)`` with the embeddings on ``Call``, then ``handle_rank(RankInput, Policy, call)``), so its
children call through this one adapter instead of naming either signature.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any


def _api() -> ModuleType:
    """The tree's module holding ``handle_rank`` and ``Call``: ``memrank.api.call``, or ``memrank.api.handle`` in
    trees before the module moves of issue #43 (looked up by name: only one of the two exists in a tree)."""
    try:
        return importlib.import_module("memrank.api.call")
    except ImportError:
        return importlib.import_module("memrank.api.handle")


def rank_handler(settings: Any) -> Callable[[bytes, Any], Any]:
    """``(request bytes, Call) -> RankResponse``, parsed as the tree's server parses (packed embeddings split
    off the wire where the tree does so)."""
    api = _api()
    if hasattr(api, "Policy"):
        from memrank.api.wire import parse_rank

        policy = api.Policy.of(settings)
        return lambda data, call: api.handle_rank(parse_rank(data), policy, call)
    from memrank._gen.v1 import ranking_pb2 as pb

    split_embeddings: Callable[[bytes], tuple[bytes, bytes] | None] | None
    try:
        from memrank.api.wire import split_embeddings
    except ImportError:  # trees before the packed embeddings were split off the wire
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
    return _api().Call(**fields)
