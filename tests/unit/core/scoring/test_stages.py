"""Caller stage scores: blended by the profile's weight, or recorded as ignored, never silently lost."""

from __future__ import annotations

import numpy as np
import pytest

from memrank.core.scoring.stages import blend_stage_scores
from tests.support.build import batch, profile


def test_a_weighed_stage_blends_and_an_unweighed_one_is_recorded_as_ignored():
    # Stage "ce" weight 0.5: out = 0.5 x in + 0.5 x minmax(ce); ce 0.2, 0.9 -> minmax 0, 1.
    # Stage "other" has no weight: its record's output is its input (after the weighed stage).
    b = batch({"stage_scores": {"ce": 0.2, "other": 5.0}}, {"stage_scores": {"ce": 0.9, "other": 1.0}})
    p = profile("default", stage_weights={"ce": 0.5})
    current = np.array([0.6, 0.2])
    logs = list(blend_stage_scores(b, p, current, np.array([True, True])))
    assert [log.stage for log in logs] == ["rerank:ce", "rerank:other"]
    assert logs[0].output.tolist() == pytest.approx([0.5 * 0.6 + 0.5 * 0.0, 0.5 * 0.2 + 0.5 * 1.0])
    assert logs[1].objective == "ignored: profile 'default' gives caller scores 'other' no weight (stage_weights)"
    assert logs[1].input.tolist() == logs[1].output.tolist() == logs[0].output.tolist()


def test_no_stage_scores_no_records():
    assert list(blend_stage_scores(batch({}), profile("default"), np.array([0.5]), np.array([True]))) == []
