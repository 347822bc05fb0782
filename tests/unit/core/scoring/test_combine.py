import numpy as np
import pytest

from memrank.core.errors import ConfigError
from memrank.core.profile import SignalSpec
from memrank.core.scoring.combine import score
from memrank.core.selection.order import tie_order
from memrank.core.signals import get_signal
from tests.support.build import HOUR, REF, batch, ctx, profile, run

LIANS_RECALL = {"relevance": 0.35, "confidence": 0.15, "importance": 0.15, "trust": 0.10, "freshness": 0.10,
                "stability": 0.10, "safety": 0.05}


def _rows():
    return batch(
        {"content": "We decided to ship the parser on 2024-03-01", "retrieval_score": 0.7, "importance": 0.6,
         "created_at": REF - 48 * HOUR, "source": 3},
        {"content": "the parser failed in staging", "retrieval_score": 0.4, "created_at": REF - 2 * HOUR},
    )


def test_lians_recall_is_point_eight_retrieval_plus_point_two_quality():
    s = score(_rows(), ctx("parser"), profile("lians-recall"))
    weights = {c.name: c.weight for c in s.signals}
    assert weights == pytest.approx({k: 0.2 * w for k, w in LIANS_RECALL.items()}, abs=1e-15)
    assert weights["relevance"] == 0.07  # recorded cleanly, not 0.06999999999999998
    quality = sum(LIANS_RECALL[c.name] * c.normalized for c in s.signals)
    assert s.quality == pytest.approx(quality, abs=1e-12)
    assert s.blend_term.tolist() == [0.8 * 0.7, 0.8 * 0.4]
    assert s.combined == pytest.approx(0.8 * np.array([0.7, 0.4]) + 0.2 * quality, abs=1e-12)
    relevance = next(c for c in s.signals if c.name == "relevance")
    lexical = [1.0, 1.0]  # "parser" is in both
    assert relevance.raw.tolist() == [0.5 * 0.7 + 0.5 * lexical[0], 0.5 * 0.4 + 0.5 * lexical[1]]


def test_lians_admission_weights():
    p = profile("lians-admission")
    assert {s.name: s.weight for s in p.signals} == {"importance": 0.25, "stability": 0.20, "confidence": 0.20,
                                                     "trust": 0.15, "safety": 0.15, "freshness": 0.05}
    rows, context = _rows(), ctx()
    # Each signal run alone (not read back from score's output), then the seed's weighted sum of raw values:
    # the admission formula normalises nothing.
    alone = {name: run(get_signal(name), rows, context, p).values for name in
             ("importance", "stability", "confidence", "trust", "safety", "freshness")}
    expected = (0.25 * alone["importance"] + 0.20 * alone["stability"] + 0.20 * alone["confidence"]
                + 0.15 * alone["trust"] + 0.15 * alone["safety"] + 0.05 * alone["freshness"])
    assert score(rows, context, p).combined == pytest.approx(expected, abs=1e-12)


def test_weight_overrides_change_the_effective_weight():
    p = profile("support").with_overrides({"recency": 0.9})
    s = score(_rows(), ctx("parser"), p)
    recency = next(c for c in s.signals if c.name == "recency")
    assert recency.weight == 0.9
    assert recency.contribution.tolist() == (0.9 * recency.normalized).tolist()


def test_unknown_signal_in_a_profile_is_named():
    with pytest.raises(ConfigError, match="'mood'"):
        score(_rows(), ctx(), profile(signals=(SignalSpec("mood", 1.0),)))


def test_empty_batch():
    s = score(batch(), ctx("anything"), profile())
    assert s.n == 0 and s.gate.shape == (0,) and all(c.raw.shape == (0,) for c in s.signals)


def test_tie_order_breaks_ties_by_event_time_ingestion_then_id():
    b = batch({"id": "b", "event_time": REF - 10}, {"id": "a", "event_time": REF - 10},
              {"id": "c", "event_time": REF - 5}, {"id": "d"}, {"id": "e", "event_time": REF - 10, "ingested_at": REF},
              {"id": "z"})
    final = np.array([0.5, 0.5, 0.5, 0.5, 0.5, 0.9])
    assert [b.ids[i] for i in tie_order(final, b.event_time, b.ingested_at, b.ids)] == ["z", "c", "e", "a", "b", "d"]
