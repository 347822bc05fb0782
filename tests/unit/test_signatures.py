"""The request path's two entry points take a context object, not a list of arguments (#34: a call's clock,
keys, observers, liveness, decision hook and tracing travel on ``api.handle.Call``; selection's knobs on
``SelectParams``)."""

from __future__ import annotations

import inspect

from memrank.api.call import Call, handle_rank
from memrank.core.selection.select import SelectParams, select


def test_handle_rank_takes_the_request_the_settings_and_one_call() -> None:
    params = inspect.signature(handle_rank).parameters
    assert list(params) == ["request", "settings", "call"] and params["call"].annotation in (Call, "Call")


def test_select_takes_at_most_four_parameters() -> None:
    params = inspect.signature(select).parameters
    assert len(params) <= 4 and params["params"].annotation in (SelectParams, "SelectParams")
