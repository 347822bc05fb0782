"""The RankingService servicer: a call's metrics, logs and status around ``memrank.api.call``."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

import grpc

from memrank._gen.v1 import ranking_pb2 as pb
from memrank._gen.v1 import ranking_service_pb2_grpc as pb_grpc
from memrank.api import encode
from memrank.api.call import Call, CallAbandoned, Policy, RankInput, handle_admission, handle_rank
from memrank.api.feedback import feedback_id, validate_feedback
from memrank.api.sample import sampled
from memrank.config import Settings
from memrank.core.batch import Batch, RankParams
from memrank.core.errors import MemrankError
from memrank.core.explain.outcome import RankOutcome
from memrank.decisions.capture import capture_decision, capture_feedback
from memrank.decisions.log import DecisionLog
from memrank.feature_memo import FeatureMemo
from memrank.grpc.errors import Abandoned, Internal, NotEnabled, Overloaded, Refusal, abort_with, code_of
from memrank.grpc.tracing import Tracing
from memrank.metrics.declare import Metrics
from memrank.metrics.deferred import AfterReply
from memrank.metrics.recorder import build_recorder

log = logging.getLogger("memrank.rpc")
T = TypeVar("T")


class RankingService(pb_grpc.RankingServiceServicer):
    """memrank.v1.RankingService over the pure core."""

    def __init__(self, settings: Settings, metrics: Metrics, clock: Callable[[], float] = time.time,
                 after_reply: bool = False, tracing: Tracing | None = None) -> None:
        self._settings = settings
        self._policy = Policy.of(settings)  # what calls are ranked under, made once per settings, not per call
        self._tracing = tracing  # None: tracing off
        self._metrics = metrics
        self._clock = clock
        self._provenance_key = settings.provenance_key()
        self._receipt_key = settings.receipt_key()
        recorder = self._recorder = build_recorder(metrics, settings)
        # after_reply: signal histograms and drift gauges published at the scrape (see AfterReply); else per call.
        self.deferred = AfterReply(recorder) if after_reply else None
        self._record = self.deferred.record if self.deferred is not None else recorder.record
        # One per worker, lent to every Rank call; it changes no response, only what is recomputed.
        self.features = FeatureMemo.of(settings.server.feature_memo_bytes, metrics.observe_feature_memo)
        d = settings.decision_log
        self.decisions = DecisionLog(d, metrics) if d.enabled else None
        self._decide = self._log_decision if self.decisions is not None else None

    def _log_decision(self, request: pb.RankRequest, outcome: RankOutcome, batch: Batch, params: RankParams,
                      response: pb.RankResponse, now: float) -> bool:
        """Queue the call's decision record when it is forced or sampled; True when queued."""
        assert self.decisions is not None
        d = self.decisions.settings
        if not request.log_decision and not sampled(request.request_id or response.receipt.digest, d.sample_rate):
            self.decisions.sampled_out()
            return False
        return self.decisions.submit(capture_decision(outcome, batch, params, response, now, d.content,
                                                      request.log_decision))

    def observe_call(self, method: str, code: str) -> None:
        """Count a call ended before it reached a method (refused by the token check, undecodable)."""
        self._metrics.observe_call(method, code)

    @property
    def metrics(self) -> Metrics:
        """The server's metrics."""
        return self._metrics

    @property
    def settings(self) -> Settings:
        """The settings calls start with now."""
        return self._settings

    def use(self, settings: Settings) -> None:
        """Serve with these settings from the next call on (a reload's new profiles); calls in flight keep
        the ones they started with (each reads ``self._policy`` once)."""
        self._recorder.profiles = frozenset(settings.profiles)
        self._policy = Policy.of(settings)
        self._settings = settings

    def close(self) -> None:
        """Write every queued decision record (after the last call is answered)."""
        if self.decisions is not None:
            self.decisions.close()

    def _call(self, method: str, request_id: str, context: grpc.ServicerContext, work: Callable[[], T]) -> T:
        """Time, count and log one call of ``work``; turn domain errors into statuses.

        A method, not a context manager: a generator and its manager per call cost more than the call's
        bookkeeping itself."""
        start = time.perf_counter()
        try:
            answer = work()
        except CallAbandoned as exc:
            refusal: Refusal = Abandoned("call cancelled or deadline exceeded")
            self._metrics.observe_call(method, code_of(refusal).name)
            log.info("rpc abandoned: client cancelled or deadline passed",
                     extra={"method": method, "request_id": request_id, "after": str(exc)})
            abort_with(context, refusal)
        except MemrankError as exc:
            code = code_of(exc)
            self._metrics.observe_call(method, code.name)
            log.info("rpc refused", extra={"method": method, "request_id": request_id, "code": code.name,
                                           "error": str(exc)[:300]})
            abort_with(context, exc)
        except Exception:
            refusal = Internal("internal error; see the server log")
            self._metrics.observe_call(method, code_of(refusal).name)
            log.exception("rpc failed", extra={"method": method, "request_id": request_id})
            abort_with(context, refusal)
        else:
            seconds = time.perf_counter() - start
            self._metrics.observe_call(method, grpc.StatusCode.OK.name, seconds)
            if log.isEnabledFor(logging.DEBUG):
                log.debug("rpc ok", extra={"method": method, "request_id": request_id, "ms": round(seconds * 1e3, 3)})
            return answer
        raise AssertionError("unreachable")  # abort raised

    def Rank(self, parsed: RankInput, context: grpc.ServicerContext) -> pb.RankResponse:
        """Rank candidate memories (``parsed``: the request as the server's parse step left it)."""
        return self._call("Rank", parsed.request.request_id, context, lambda: handle_rank(
            parsed, self._policy, Call(self._clock(), self._provenance_key, self._receipt_key, self._record,
                                       context.is_active, self._decide, self._tracing, self.features)))

    def ScoreAdmission(
        self, request: pb.ScoreAdmissionRequest, context: grpc.ServicerContext
    ) -> pb.ScoreAdmissionResponse:
        """Score one memory for admission."""
        return self._call("ScoreAdmission", request.request_id, context,
                          lambda: handle_admission(request, self._policy, Call(self._clock(), self._provenance_key)))

    def ListProfiles(
        self, request: pb.ListProfilesRequest, context: grpc.ServicerContext
    ) -> pb.ListProfilesResponse:
        """List the configured profiles."""
        return self._call("ListProfiles", "", context,
                          lambda: encode.profiles_to_proto(self._settings.profiles, self._settings.policy_version))

    def RecordFeedback(
        self, request: pb.RecordFeedbackRequest, context: grpc.ServicerContext
    ) -> pb.RecordFeedbackResponse:
        """Validate feedback on a logged decision and queue its memrank.feedback.v1 record."""
        return self._call("RecordFeedback", request.request_id, context, lambda: self._feedback(request))

    def _feedback(self, request: pb.RecordFeedbackRequest) -> pb.RecordFeedbackResponse:
        if self.decisions is None:
            raise NotEnabled("decision_log.enabled is false on this server: feedback would be recorded "
                             "nowhere (see the README's decision log section)")
        validate_feedback(request, self._settings.limits)
        fid = feedback_id(request)
        if not self.decisions.submit(capture_feedback(request, fid, self._clock())):
            raise Overloaded("the decision log cannot take the record now: its queue is full "
                             f"({self._settings.decision_log.queue_size} records, decision_log.queue_size), its "
                             "writer is restarting, or the server is shutting down; retry")
        for label in request.labels:
            self._metrics.feedback_labels.labels(relevance=str(label.relevance)).inc()
        return pb.RecordFeedbackResponse(feedback_id=fid, label_count=len(request.labels))
