"""The greedy MMR phase picks exactly what the plain one-scan-per-pick definition picks."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memrank.core.batch import CandidateInput, batch_from_rows
from memrank.core.selection.covering import NO_CAP, Candidates, Caps, SelectState, run_phase
from memrank.core.selection.similarity import Similarity


def _candidates(case: dict[str, object], sim: Similarity | None, lam: float) -> Candidates:
    return Candidates(case["score"], np.argsort(case["tie_rank"]), case["layer"], case["tokens"], sim, lam,  # type: ignore[arg-type]
                      case["dedupe"])  # type: ignore[arg-type]


def _reference_phase(state: SelectState, pool: np.ndarray, score: np.ndarray, tie_rank: np.ndarray,
                     layer: np.ndarray, tokens: np.ndarray, lim: Caps, sim: Similarity, lam: float,
                     dedupe: float) -> None:
    """The definition, one candidate at a time: every step rescans the pool for the best marginal gain."""
    while not lim.max_items or len(state.picked) < lim.max_items:
        best, best_gain = -1, -np.inf
        for i in range(state.n):
            if not pool[i] or state.max_sim[i] >= dedupe:
                continue
            k = layer[i]
            if tokens[i] > lim.layer_tokens[k] - state.used_tokens[k] or lim.layer_items[k] <= state.used_items[k]:
                continue
            gain = lam * score[i] - (1.0 - lam) * state.max_sim[i]
            if gain > best_gain or (gain == best_gain and tie_rank[i] < tie_rank[best]):
                best, best_gain = i, gain
        if best < 0:
            return
        state.picked.append(best)
        state.gain[best] = best_gain
        state.used_tokens[layer[best]] += tokens[best]
        state.used_items[layer[best]] += 1
        row = sim.row(best)
        for j in range(state.n):
            if row[j] > state.max_sim[j]:
                state.cover[j] = best
                state.max_sim[j] = row[j]
        pool[best] = False


@st.composite
def phases(draw: st.DrawFn) -> dict[str, object]:
    n = draw(st.integers(1, 25))
    n_layers = draw(st.integers(1, 3))
    words = ["tea", "oat", "milk", "never", "x"]
    contents = [" ".join(draw(st.lists(st.sampled_from(words), min_size=1, max_size=4))) for _ in range(n)]
    vectors = draw(st.booleans())
    rows = [CandidateInput(id=f"c{i}", content=c, embedding=tuple(draw(st.lists(
        st.sampled_from([0.0, 0.5, 1.0, -1.0]), min_size=3, max_size=3).filter(any))) if vectors else ())
        for i, c in enumerate(contents)]
    scores = draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.5, 0.9, 1.0]), min_size=n, max_size=n))
    return {
        "batch": batch_from_rows(rows),
        "pool": np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))),
        "score": np.array(scores, dtype=np.float64),
        "tie_rank": np.array(draw(st.permutations(range(n))), dtype=np.int64),
        "layer": np.array(draw(st.lists(st.integers(0, n_layers - 1), min_size=n, max_size=n)), dtype=np.int64),
        "tokens": np.array(draw(st.lists(st.integers(0, 50), min_size=n, max_size=n)), dtype=np.int64),
        "lim": Caps(
            np.array(draw(st.lists(st.sampled_from([0, 30, 80, NO_CAP]), min_size=n_layers, max_size=n_layers)),
                     dtype=np.int64),
            np.array(draw(st.lists(st.sampled_from([1, 2, NO_CAP]), min_size=n_layers, max_size=n_layers)),
                     dtype=np.int64),
            draw(st.integers(0, 6))),
        "n_layers": n_layers,
        "lam": draw(st.sampled_from([0.0, 0.3, 0.7, 0.99])),
        "dedupe": draw(st.sampled_from([0.5, 0.9, 1.0, 2.0])),
    }


@settings(max_examples=400, deadline=None)
@given(phases())
def test_run_phase_picks_what_the_definition_picks(case: dict[str, object]) -> None:
    batch = case["batch"]
    assert not isinstance(batch, dict)
    sim = Similarity(batch)  # type: ignore[arg-type]
    states, pools = [], []
    for fast in (True, False):
        state = SelectState(batch.n, case["n_layers"])  # type: ignore[attr-defined, arg-type]
        pool = case["pool"].copy()  # type: ignore[attr-defined]
        if fast:
            run_phase(state, pool, _candidates(case, sim, case["lam"]), case["lim"])  # type: ignore[arg-type]
        else:
            _reference_phase(state, pool, case["score"], case["tie_rank"], case["layer"], case["tokens"],
                             case["lim"], sim, case["lam"], case["dedupe"])  # type: ignore[arg-type]
        states.append(state)
        pools.append(pool)
    fast, slow = states
    assert fast.picked == slow.picked
    assert np.array_equal(fast.gain, slow.gain, equal_nan=True)
    assert np.array_equal(fast.max_sim, slow.max_sim) and np.array_equal(fast.cover, slow.cover)
    assert np.array_equal(fast.used_tokens, slow.used_tokens) and np.array_equal(fast.used_items, slow.used_items)
    assert np.array_equal(pools[0], pools[1])


def _reference_scan(state: SelectState, pool: np.ndarray, score: np.ndarray, tie_rank: np.ndarray,
                    layer: np.ndarray, tokens: np.ndarray, lim: Caps) -> None:
    """Without diversity, the definition: every candidate in tie order, taken when it still fits."""
    for i in np.argsort(tie_rank):
        if not pool[i] or (lim.max_items and len(state.picked) >= lim.max_items):
            continue
        k = layer[i]
        if tokens[i] <= lim.layer_tokens[k] - state.used_tokens[k] and lim.layer_items[k] > state.used_items[k]:
            state.picked.append(int(i))
            state.gain[i] = score[i]
            state.used_tokens[k] += tokens[i]
            state.used_items[k] += 1
            pool[i] = False


@settings(max_examples=300, deadline=None)
@given(phases(), st.booleans())
def test_run_phase_without_diversity_scans_in_tie_order(case: dict[str, object], with_sim: bool) -> None:
    batch = case["batch"]
    assert not isinstance(batch, dict)
    sim = Similarity(batch) if with_sim else None  # type: ignore[arg-type]
    states, pools = [], []
    for fast in (True, False):
        state = SelectState(batch.n, case["n_layers"])  # type: ignore[attr-defined, arg-type]
        state.used_tokens[0] = 5  # a phase can start with tokens already used (floors first)
        pool = case["pool"].copy()  # type: ignore[attr-defined]
        if fast:
            run_phase(state, pool, _candidates(case, sim, 1.0), case["lim"])  # type: ignore[arg-type]
        else:
            _reference_scan(state, pool, case["score"], case["tie_rank"], case["layer"], case["tokens"],
                            case["lim"])  # type: ignore[arg-type]
        states.append(state)
        pools.append(pool)
    fast_state, slow_state = states
    assert fast_state.picked == slow_state.picked
    assert np.array_equal(fast_state.gain, slow_state.gain, equal_nan=True)
    assert not fast_state.max_sim.any() and (fast_state.cover == -1).all()
    assert np.array_equal(fast_state.used_tokens, slow_state.used_tokens)
    assert np.array_equal(fast_state.used_items, slow_state.used_items)
    assert np.array_equal(pools[0], pools[1])
