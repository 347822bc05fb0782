"""A signal constant over a request's eligible candidates gives its weight to the others (share_constant_weight)."""

import numpy as np
import pytest

from memrank.core.profile import SignalSpec
from memrank.core.scoring.combine import score
from memrank.core.scoring.constant import constant_columns, shared_weights
from tests.support.build import batch, ctx, profile

# relevance (min-max of retrieval_score) varies; speaker is 0 for all (nobody named); context is 0 for all
# (no positions); lexical varies ("parser" is only in the first). Lookups: no zero-importance gate.
SIGNALS = (SignalSpec("relevance", 0.2, "min_max"), SignalSpec("lexical", 0.3), SignalSpec("context", 0.3),
           SignalSpec("speaker", 0.2))


LOOKUP = ctx("parser", explicit_lookup=True)


def _rows():
    return batch({"content": "the parser broke", "retrieval_score": 0.9, "speaker": "user"},
                 {"content": "lunch was fine", "retrieval_score": 0.5, "speaker": "user"},
                 {"content": "weather report", "retrieval_score": 0.1, "speaker": "user"})


def test_constant_columns_over_the_eligible_only():
    cols = [np.array([1.0, 1.0, 0.0]), np.array([0.2, 0.4, 0.2]), np.zeros(3)]
    assert constant_columns(cols, np.array([True, True, False])) == [True, False, True]
    assert constant_columns(cols, np.array([True, True, True])) == [False, False, True]
    assert constant_columns(cols, np.array([True, False, False])) == [False, False, False]  # one candidate


def test_shared_weights_keep_the_total():
    assert shared_weights([0.2, 0.3, 0.3, 0.2], [False, False, True, True]) == [0.2 * 1.0 / 0.5, 0.3 * 1.0 / 0.5, 0.0,
                                                                                0.0]
    assert shared_weights([0.2, 0.3], [True, True]) == [0.2, 0.3]  # nothing informative to share with
    assert shared_weights([0.2, 0.3], [False, False]) == [0.2, 0.3]
    assert shared_weights([0.0, 0.5], [False, True]) == [0.0, 0.5]  # no informative weight to scale


def test_off_the_weights_as_written():
    s = score(_rows(), LOOKUP, profile(signals=SIGNALS, share_constant_weight=False))
    assert [c.weight for c in s.signals] == [0.2, 0.3, 0.3, 0.2]


def test_constant_signals_weigh_nothing_and_the_others_share_their_weight():
    s = score(_rows(), LOOKUP, profile(signals=SIGNALS, share_constant_weight=True))
    cols = {c.name: c for c in s.signals}
    assert [cols[n].weight for n in ("relevance", "lexical", "context", "speaker")] == [0.4, 0.6, 0.0, 0.0]
    rel = np.array([(0.9 - 0.1) / 0.8, (0.5 - 0.1) / 0.8, (0.1 - 0.1) / 0.8])
    lex = np.array([1.0, 0.0, 0.0])
    assert s.combined == pytest.approx(0.4 * rel + 0.6 * lex, abs=1e-12)
    assert s.combined.tolist() == sum((c.contribution for c in s.signals), np.zeros(3)).tolist()
    assert "no information in this request, weight 0 (profile 0.3)" in cols["context"].reasons[1][-1]
    assert cols["lexical"].reasons[0][-1] == ("weight 0.6 (profile 0.3): shares the weight of context, speaker, "
                                              "the same for every candidate")


def test_linear_order_unchanged():
    off = score(_rows(), LOOKUP, profile(signals=SIGNALS, share_constant_weight=False)).combined
    on = score(_rows(), LOOKUP, profile(signals=SIGNALS, share_constant_weight=True)).combined
    assert np.argsort(-off).tolist() == np.argsort(-on).tolist()


def test_a_named_speaker_is_informative():
    rows = batch({"content": "the parser broke", "retrieval_score": 0.9, "speaker": "Ana"},
                 {"content": "lunch was fine", "retrieval_score": 0.5, "speaker": "Ben"})
    s = score(rows, ctx("what did Ana say", explicit_lookup=True), profile(signals=SIGNALS, share_constant_weight=True))
    cols = {c.name: c for c in s.signals}
    # speaker varies (Ana named); lexical (no shared word) and context (no positions) are 0 for both
    assert [cols[n].weight for n in ("relevance", "lexical", "context", "speaker")] == [0.2 / 0.4, 0.0, 0.0,
                                                                                        0.2 / 0.4]


def test_blend_formula_ignores_the_switch():
    p = profile("lians-recall", share_constant_weight=True)
    plain = score(_rows(), LOOKUP, profile("lians-recall"))
    assert score(_rows(), LOOKUP, p).combined.tolist() == plain.combined.tolist()
