"""One call through the wire API: validate, convert, rank in the pure core, encode (the servicer and the CLI).

No gRPC server here: the runtime (``memrank.grpc``) passes the parsed request, the ``Policy`` and the ``Call`` in,
and turns the core's errors and ``CallAbandoned`` into statuses.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api import convert, encode
from memrank.api.columnar_candidates import columns_of
from memrank.api.shadow import server_shadow
from memrank.api.validate import validate_admission_request, validate_rank_request
from memrank.config import Limits, Settings, ShadowSettings
from memrank.config.sections import DEFAULT_SHADOW
from memrank.core.admission import score_admission
from memrank.core.batch import Batch, LayerSpec, RankParams
from memrank.core.explain.outcome import RankOutcome
from memrank.core.features import FeatureStore
from memrank.core.pipeline import rank, resolve_profile
from memrank.core.profile import Profile
from memrank.core.signals.base import ScoringContext

log = logging.getLogger("memrank.rpc")
# Called with the finished call (request, outcome, batch, params, response, server time); True = logged.
Decide = Callable[[pb.RankRequest, RankOutcome, Batch, RankParams, pb.RankResponse, float], bool]
Stage = Callable[[str], contextlib.AbstractContextManager[None]]
_UNTRACED = contextlib.nullcontext()


def untraced(_name: str) -> contextlib.AbstractContextManager[None]:
    """The stage context manager when tracing is off: one shared no-op."""
    return _UNTRACED


class Tracer(Protocol):
    """What the handler asks of tracing (``memrank.grpc.tracing.Tracing``)."""

    def stages(self, candidates: int) -> Stage: ...

    def outcome(self, outcome: RankOutcome) -> None: ...


@dataclass(frozen=True, slots=True)
class Call:
    """One call's circumstances besides its request: its time, the server's keys, the runtime's hooks (None: off)."""

    now: float  # the server time (seconds) the call is ranked at
    provenance_key: bytes | None = None
    receipt_key: bytes | None = None
    observe: Callable[[RankOutcome], None] | None = None  # given the outcome once the answer is built (metrics)
    alive: Callable[[], bool] | None = None  # asked between stages; False stops the call with CallAbandoned
    decide: Decide | None = None  # the decision log's hook; its answer is ``decision_logged``
    trace: Tracer | None = None  # tracing on: each stage a child span of the call's server span
    features: FeatureStore | None = None  # the worker's store of memories' own features (``memrank.feature_memo``)


@dataclass(slots=True)
class RankInput:
    """A Rank request as parsed: the message, and its packed embeddings when the runtime split them off the wire
    before parsing (``memrank.api.wire.split_embeddings``: their own bytes; the message then carries none), else
    None. ``single_use``: the runtime parsed the message for this one call, so ``handle_rank`` may
    swap it for its header (``request_id``, ``query``, ``log_decision``, ``profile``, ``shadow_profile``) once the
    candidates are converted."""

    request: pb.RankRequest
    embeddings_f32: bytes | memoryview | None = None
    single_use: bool = False


@dataclass(frozen=True, slots=True)
class Policy:
    """What a call is validated and ranked under: the wire's limits, the profiles, the default layers and the
    version that names them (responses, receipts and decision records carry it), the server's shadow."""

    limits: Limits
    profiles: Mapping[str, Profile]
    layers: tuple[LayerSpec, ...]
    policy_version: str
    shadow: ShadowSettings = DEFAULT_SHADOW

    @classmethod
    def of(cls, settings: Settings) -> Policy:
        """The policy of a server's settings (read again at every reload)."""
        return cls(settings.limits, settings.profiles, settings.layers, settings.policy_version, settings.shadow)


class CallAbandoned(Exception):
    """The client cancelled the call or its deadline passed; the stage it got to is the message."""


def _still_wanted(alive: Callable[[], bool] | None, stage: str) -> None:
    if alive is not None and not alive():
        raise CallAbandoned(stage)


def handle_rank(parsed: RankInput, policy: Policy, call: Call) -> pb.RankResponse:
    """Validate, convert, rank and convert back; a cancelled call or one past its deadline stops at the next stage
    with ``CallAbandoned`` instead of running on."""
    request, packed = parsed.request, parsed.embeddings_f32
    trace = call.trace
    stage = untraced if trace is None else trace.stages(len(request.candidates) or len(request.columns.ids))
    with stage("validate"):
        columns = validate_rank_request(request, policy.limits, columns_of(request, packed),
                                        profiles=policy.profiles)
    _still_wanted(call.alive, "validated")
    with stage("convert"):
        batch, params = convert.request_to_domain(request, call.now, columns)  # the columns validation read
    # The columns hold a wrapper per candidate, and each wrapper the stubs of the map fields read on it (a upb
    # table per candidate): the batch has everything it needs, so they go before scoring, not after the call.
    del columns
    if parsed.single_use:  # and so does the message (the contents again, beside the batch's: 61 MiB at the largest),
        # but for what the call reads of it later (the shadow is drawn against the two profiles)
        parsed.request = request = pb.RankRequest(
            request_id=request.request_id, query=request.query, log_decision=request.log_decision,
            profile=request.profile, shadow_profile=request.shadow_profile)
    _still_wanted(call.alive, "converted")
    # The server's shadow, when the call's outcome goes anywhere (metrics, decision log): ranked beside the answer,
    # left out of the response (``answered``), which is the one without it.
    shadow = None if call.observe is None and call.decide is None else \
        server_shadow(request, batch, policy.shadow, policy.profiles)
    with stage("rank"):  # scoring and selection: one call into the pure core
        outcome = rank(batch, params if shadow is None else replace(params, shadow_profile=shadow), policy.profiles,
                       policy.layers, call.provenance_key, call.features)
    answered = outcome if shadow is None else replace(outcome, shadow=None)
    if trace is not None:
        trace.outcome(outcome)
    _still_wanted(call.alive, "ranked")
    if log.isEnabledFor(logging.DEBUG):
        # Content and queries are logged only at debug, on purpose.
        log.debug("rank detail", extra={"request_id": request.request_id, "query": request.query,
                                        "selected": [batch.ids[i] for i in outcome.ranked]})
    with stage("encode"):
        response = encode.outcome_to_proto(answered, batch, params, request.request_id, policy.policy_version,
                                            call.receipt_key)
    if call.decide is not None:  # before the answer leaves: a record of every answered call is queued
        response.decision_logged = call.decide(request, outcome, batch, params, response, call.now)
    if call.observe is not None:  # once the answer is built
        call.observe(outcome)
    return response


def handle_admission(request: pb.ScoreAdmissionRequest, policy: Policy, call: Call) -> pb.ScoreAdmissionResponse:
    """Validate, convert, score the candidate for admission under its profile (default lians-admission), convert
    back."""
    batch = validate_admission_request(request, policy.limits).to_batch()
    profile = resolve_profile(policy.profiles, request.profile or "lians-admission")
    ref = convert.ts_to_seconds(request.reference_time) if request.HasField("reference_time") else call.now
    result = score_admission(batch, ScoringContext("", ref, False, call.provenance_key), profile)
    return encode.admission_to_proto(request.request_id, result, batch, profile, ref)
