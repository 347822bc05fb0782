"""Gates: candidates that must not be returned, with the reason for each.

Gates are applied in this precedence, and a candidate's ``gate`` code is the
first that applies (its reasons list every one that applies, in order):

1. ``SAFETY_GATED``   status UNSAFE, QUARANTINED or PENDING, or injection-like content
2. ``FUTURE_EVENT``   event_time > reference_time
3. ``NOT_YET_VALID``  reference_time < valid_from
4. ``EXPIRED``        reference_time >= valid_to
5. ``BELOW_THRESHOLD`` retrieval_score < the request's relevance threshold (the caller's absolute
   floor, before any normalisation), or, when the request sets none, every candidate of a batch whose
   best retrieval_score is below the profile's relevance floor ("nothing relevant": the floor judges
   the batch, never one candidate, since a caller's per-batch scaling puts its weakest at 0)
6. ``ZERO_IMPORTANCE`` effective importance == 0, unless the query is an explicit
   lookup or the profile sets ``gate_zero_importance`` False
7. ``BELOW_MIN_SCORE`` the score after the order-producing stages is below the minimum (the request's,
   else the profile's, raised by the layer's own): applied by the pipeline after the stages
   (``min_score_gate``), to candidates no earlier gate removed

Safety first because it is never negotiable; temporal next because an
as-of query must not see what did not exist yet; then the profile's choices.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from memrank.core.batch import Batch
from memrank.core.reasons import Lazy, Reasons
from memrank.core.types import DropReason

SECONDS_PER_HOUR = 3600.0
_KEPT = int(DropReason.KEPT)  # plain ints: numpy takes an IntEnum operand through a slow conversion


class GateSet:
    """Gate codes and reasons being built for one batch (first gate added wins).

    Codes are set a column at a time; a candidate's reasons are formatted only when read
    (``frozen_reasons``): most gated candidates are dropped without their reasons ever being shown.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.codes = np.zeros(n, dtype=np.int8)
        self._gates: list[tuple[np.ndarray, Callable[[int], str]]] = []  # (mask, text) of each gate, in order

    def add(self, reason: DropReason, mask: np.ndarray, texts: Sequence[str] | Callable[[int], str]) -> None:
        """Gate the candidates of ``mask`` (a bool array); texts holds one explanation per candidate, or makes
        candidate i's."""
        if not np.count_nonzero(mask):
            return
        self.codes[mask & (self.codes == _KEPT)] = int(reason)
        self._gates.append((mask, texts if callable(texts) else texts.__getitem__))

    @property
    def kept(self) -> np.ndarray:
        """Mask of candidates no gate removed so far."""
        kept: np.ndarray = self.codes == _KEPT
        return kept

    def frozen_reasons(self) -> Reasons:
        """The reasons per candidate, as immutable tuples (empty for a candidate no gate removed)."""
        gates = tuple(self._gates)

        def row(i: int) -> tuple[str, ...]:
            return tuple(text(i) for mask, text in gates if mask[i])

        return Lazy(self.n, row)


def _hours(delta: float) -> str:
    return f"{abs(delta) / SECONDS_PER_HOUR:.2f} h"


# Explanations are formatted only for the candidates a gate removes: most pass every gate.


def _formatter(template: str, delta: Callable[[int], float]) -> Callable[[int], str]:
    def text(i: int) -> str:
        return template.format(_hours(delta(i)))

    return text


def safety_gate(gates: GateSet, safety_values: np.ndarray, safety_reasons: Sequence[tuple[str, ...]]) -> None:
    """Gate what the safety signal scored 0."""
    gates.add(DropReason.SAFETY_GATED, safety_values == 0.0, lambda i: f"safety gated: {safety_reasons[i][0]}")


def temporal_gates(gates: GateSet, batch: Batch, reference_time: float, skip: frozenset[DropReason]) -> None:
    """Gate future events and memories outside their validity window at the reference time."""
    # The time differences are taken per gated candidate, when its reason is read (the same float64 subtraction).
    event, start, end = batch.event_time, batch.valid_from, batch.valid_to
    if DropReason.FUTURE_EVENT not in skip:
        gates.add(DropReason.FUTURE_EVENT, event > reference_time, _formatter(
            "future event: event_time is {} after the reference time", lambda i: float(event[i] - reference_time)))
    if DropReason.NOT_YET_VALID not in skip:
        gates.add(DropReason.NOT_YET_VALID, reference_time < start, _formatter(
            "not yet valid: valid_from is {} after the reference time", lambda i: float(start[i] - reference_time)))
    if DropReason.EXPIRED not in skip:
        gates.add(DropReason.EXPIRED, reference_time >= end, _formatter(
            "expired: valid_to is {} before or at the reference time", lambda i: float(reference_time - end[i])))


def threshold_gate(gates: GateSet, retrieval: np.ndarray, threshold: float | None) -> None:
    """Gate the candidates whose retrieval_score is below the relevance threshold."""
    if threshold is None:
        return
    gates.add(DropReason.BELOW_THRESHOLD, retrieval < threshold,
              lambda i: f"below threshold: retrieval_score {float(retrieval[i]):.6g} < {threshold:g}")


def floor_gate(gates: GateSet, retrieval: np.ndarray, floor: float | None) -> None:
    """Gate every candidate when none still kept reaches the relevance floor; otherwise gate none."""
    kept = gates.kept
    if floor is None or not np.count_nonzero(kept):
        return
    best = float(retrieval[kept].max())
    if best >= floor:
        return
    gates.add(DropReason.BELOW_THRESHOLD, kept,
              lambda i: f"nothing relevant: the best retrieval_score {best:.6g} is below the floor {floor:g}")


def zero_importance_gate(gates: GateSet, importance: np.ndarray, reasons: Sequence[tuple[str, ...]]) -> None:
    """Gate importance-0 memories (the caller decides whether this gate runs)."""
    def text(i: int) -> str:
        return f"zero importance on general recall ({reasons[i][0]})"

    gates.add(DropReason.ZERO_IMPORTANCE, importance == 0.0, text)


def min_score_gate(min_score: float, layer_min: Mapping[str, float], layer_of: Sequence[str], current: np.ndarray,
                   eligible: np.ndarray) -> dict[int, str]:
    """The eligible candidates whose score is below their bar, with the note for each.

    A candidate's bar is max(min_score, its layer's minimum); a bar of 0 is no minimum (the proto's
    "0 = none"), so agent-observer's negative scores (a negative retrieval_score, as Go's scoreMemory takes
    it) are ranked, not dropped.
    """
    # Column at a time: the bar of each candidate, then one comparison (same values as max() per candidate).
    bar_of = {name: max(min_score, layer_min.get(name, 0.0) or 0.0) for name in set(layer_of)}
    if not any(bar > 0.0 for bar in bar_of.values()):  # no minimum anywhere (the usual case): nothing to check
        return {}
    bars = np.fromiter(map(bar_of.__getitem__, layer_of), dtype=np.float64, count=len(layer_of))
    return {i: f"score {current[i]:.6g} below the minimum {bars[i]:.6g}"
            for i in (eligible & (bars > 0.0) & (current < bars)).nonzero()[0].tolist()}
