"""The request path's entry point takes a context object, not a list of arguments (#34: a call's clock, keys,
observers, liveness, decision hook and tracing travel on ``api.handle.Call``)."""

from __future__ import annotations

import inspect

from memrank.api.call import Call, handle_rank


def test_handle_rank_takes_the_request_the_settings_and_one_call() -> None:
    params = inspect.signature(handle_rank).parameters
    assert list(params) == ["request", "settings", "call"] and params["call"].annotation in (Call, "Call")
