"""Property tests: hostile but structurally valid requests get OK or INVALID_ARGUMENT, never a crash."""

from __future__ import annotations

import time

import grpc
import pytest
from hypothesis import HealthCheck, given, settings

from memrank._gen.v1 import ranking_pb2 as pb
from memrank._gen.v1 import ranking_service_pb2_grpc as pb_grpc
from memrank.api.call import Call, Policy, RankInput, handle_rank
from memrank.client import RankingClient
from memrank.config import load_settings
from memrank.core.errors import InvalidRequest
from memrank.grpc.running import Running
from tests.reliability.conftest import SOAK, accounted, rank_request
from tests.support.hostile import admission_requests, rank_requests

SETTINGS = load_settings(env={})
NOW = 1_767_225_600.0
ALLOWED = {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED}
# Example counts (the README's "inputs tried" table reads them from here); ten times more in a soak.
SCALE = 10 if SOAK else 1
IN_PROCESS_EXAMPLES = 300 * SCALE
OVER_THE_WIRE_EXAMPLES = 150 * SCALE
ADMISSION_EXAMPLES = 150 * SCALE
COMMON = {"deadline": None, "suppress_health_check": list(HealthCheck), "derandomize": True}


@settings(max_examples=IN_PROCESS_EXAMPLES, **COMMON)  # type: ignore[arg-type]
@given(rank_requests())
def test_hostile_requests_are_ranked_or_refused_in_process(request: pb.RankRequest) -> None:
    try:
        response = handle_rank(RankInput(request), Policy.of(SETTINGS), Call(NOW, b"key"))
    except InvalidRequest as exc:  # INVALID_ARGUMENT (LimitExceeded and UnknownProfile included)
        assert exc.violations and all(v.field for v in exc.violations)
        return
    assert accounted(request, response)
    again = handle_rank(RankInput(request), Policy.of(SETTINGS), Call(NOW, b"key"))
    assert again.SerializeToString(deterministic=True) == response.SerializeToString(deterministic=True)


@settings(max_examples=OVER_THE_WIRE_EXAMPLES, **COMMON)  # type: ignore[arg-type]
@given(rank_requests())
def test_hostile_requests_over_the_wire_get_only_ok_or_refusals(server: Running, request: pb.RankRequest) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = pb_grpc.RankingServiceStub(channel)
        try:
            response = stub.Rank(request, timeout=30)
        except grpc.RpcError as err:
            assert err.code() in ALLOWED, (err.code(), err.details())
        else:
            assert accounted(request, response)


@settings(max_examples=ADMISSION_EXAMPLES, **COMMON)  # type: ignore[arg-type]
@given(admission_requests())
def test_hostile_admission_requests_get_only_ok_or_refusals(server: Running,
                                                            request: pb.ScoreAdmissionRequest) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        try:
            response = pb_grpc.RankingServiceStub(channel).ScoreAdmission(request, timeout=30)
        except grpc.RpcError as err:
            assert err.code() in ALLOWED, (err.code(), err.details())
        else:
            assert response.decision != pb.ADMISSION_DECISION_UNSPECIFIED


@pytest.mark.parametrize("field", ["explain", "placement", "reference_time", "min_score", "weight_overrides",
                                   "layers", "request_id"])
def test_request_fields_are_checked_even_when_every_candidate_is_valid(field: str) -> None:
    # Regression: the candidate fast path once returned early and skipped these, and
    # explain = -1 reached the core as ValueError (INTERNAL).
    request = rank_request(3)
    if field == "explain":
        request.explain = -1
    elif field == "placement":
        request.placement = 4
    elif field == "reference_time":
        request.reference_time.seconds = 2**62
    elif field == "min_score":
        request.min_score = float("nan")
    elif field == "weight_overrides":
        request.weight_overrides["trust"] = 2.0
    elif field == "layers":
        request.layers.add(name="a")
        request.layers.add(name="a")
    else:
        request.request_id = "r" * 200
    with pytest.raises(InvalidRequest) as err:
        handle_rank(RankInput(request), Policy.of(SETTINGS), Call(NOW))
    assert any(v.field.startswith(field) for v in err.value.violations)


def test_huge_layer_shares_are_relative_not_an_overflow() -> None:
    # Regression (found by atheris): two shares near DBL_MAX overflowed math.fsum -> INTERNAL.
    request = rank_request(12)
    request.layers.add(name="session", share=1.7e308)
    request.layers.add(name="durable", share=1.7e308, floor_tokens=10)
    request.layers.add(name="knowledge", share=5e-324)
    response = handle_rank(RankInput(request), Policy.of(SETTINGS), Call(NOW))
    assert accounted(request, response)
    assert sum(a.used_tokens for a in response.allocations) <= request.budget.max_tokens
    assert all(a.budget_tokens <= request.budget.max_tokens for a in response.allocations)


def test_the_server_is_still_serving_after_the_hostile_inputs(server: Running) -> None:
    time.sleep(0.1)
    with RankingClient(f"127.0.0.1:{server.port}") as client:
        assert client.health() == "SERVING"
