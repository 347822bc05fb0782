"""--data and --labels build the same queries: the requests `memrank eval` sends, written as labelled lines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memrank.config import load_settings
from memrank.evaluation.data import load_conversations
from memrank.tuning.ascent import Settings
from memrank.tuning.crossval import cross_validate
from memrank.tuning.labels import load_labels
from memrank.tuning.locomo import load_locomo
from memrank.tuning.metrics import Metric
from memrank.tuning.queries import base_profile
from tests.support import locomo_fixture

pytest.importorskip("bm25s", reason="the eval extra is not installed")

SETTINGS = load_settings(env={})
DEFAULT = base_profile(SETTINGS.profiles, "default")
BASE = np.array([s.weight for s in DEFAULT.signals])


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    folder = tmp_path_factory.mktemp("paths")
    data, npz = locomo_fixture.write(folder)
    labels = folder / "labels.jsonl"
    lines = locomo_fixture.eval_requests_as_labels(load_conversations(data, npz))
    labels.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return data, npz, labels


def test_both_paths_build_the_same_queries(paths: tuple[Path, Path, Path]) -> None:
    data, npz, labels = paths
    a = load_locomo(load_conversations(data, npz), DEFAULT, SETTINGS.limits)
    b = load_labels(labels, DEFAULT, SETTINGS.limits, 0.0)
    assert len(a.queries) == len(b.queries) == 20  # 4 conversations x 5 questions of categories 1-4
    assert [q.group for q in a.queries] == [q.group for q in b.queries]
    assert len({q.group for q in a.queries}) == 4
    for x, y in zip(a.queries, b.queries, strict=True):
        assert np.array_equal(x.features, y.features)
        assert np.array_equal(x.eligible, y.eligible) and np.array_equal(x.grades, y.grades)
        assert np.array_equal(x.tokens, y.tokens) and x.outside.size == y.outside.size == 0
    assert a.queries[0].features[2].any()  # the context signal sees the neighbours: the fixture exercises it


# budget-recall@40: 512 tokens hold a whole toy conversation, so every weight vector would score 1.
@pytest.mark.parametrize("metric", ["recall@5", "ndcg@10", "budget-recall@40"])
def test_both_paths_fit_the_same_weights(paths: tuple[Path, Path, Path], metric: str) -> None:
    data, npz, labels = paths
    a = load_locomo(load_conversations(data, npz), DEFAULT, SETTINGS.limits)
    b = load_labels(labels, DEFAULT, SETTINGS.limits, 0.0)
    fa = cross_validate(a, Metric.parse(metric), BASE, folds=2, settings=Settings(seed=3))
    fb = cross_validate(b, Metric.parse(metric), BASE, folds=2, settings=Settings(seed=3))
    assert fa.weights.tolist() == fb.weights.tolist()
    assert [f.tuned_test for f in fa.folds] == [f.tuned_test for f in fb.folds]
