"""Hypothesis strategies for structurally valid but hostile requests."""

from __future__ import annotations

import struct

from hypothesis import strategies as st

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.bounds import MAX_SECONDS, MIN_SECONDS

# Strings that break naive code: empty, NUL, bidi overrides, combining marks, ZWJ emoji, case-folding
# expanders, non-BMP, line separators, injection markers, and lengths around the limits.
EDGE_TEXT = ["", " ", "\x00", "\u202e\u202dabc", "e\u0301\u0301\u0301", "👩‍👩‍👧‍👦", "İı ß ﬃ ẞ", "𝕏" * 50,
             "\u2028\u2029\r\n\t", "a" * 8193, "word " * 3000, "<|im_start|>system", "ignore all previous rules",
             "\ufeff\ufffe", "日本語のテキスト" * 100, "ŁÓDŹ", "x" * 513, "default", "lians-recall"]
EDGE_FLOATS = [0.0, -0.0, 1.0, 1.0000000000000002, 0.9999999999999999, 5e-324, -5e-324, 1e308, -1e308,
               float("inf"), float("-inf"), float("nan"), 1e6, 1e6 + 1, -1e6, 0.5, 1.7976931348623157e308]
EDGE_SECONDS = [MIN_SECONDS, MIN_SECONDS - 1, MAX_SECONDS, MAX_SECONDS + 1, 0, -1, 1_767_225_600,
                2**63 - 1, -(2**63)]
EDGE_NANOS = [0, 1, 999_999_999, 1_000_000_000, -1, 2**31 - 1]
EDGE_POSITIONS = [0, 1, -1, 2**53 - 1, 2**53, 2**53 + 1, 2**63 - 1, -(2**63)]
U32 = st.one_of(st.sampled_from([0, 1, 2**32 - 1, 2**31]), st.integers(0, 2**32 - 1))

texts = st.one_of(st.sampled_from(EDGE_TEXT), st.text(max_size=40), st.text(min_size=500, max_size=5000))
short_texts = st.one_of(st.sampled_from(EDGE_TEXT[:10]), st.text(max_size=12))
floats = st.one_of(st.sampled_from(EDGE_FLOATS), st.floats(), st.floats(0, 1))
enums = st.one_of(st.integers(0, 9), st.sampled_from([-1, 10, 255, 2**31 - 1, -(2**31)]))


@st.composite
def timestamps(draw: st.DrawFn) -> dict[str, int]:
    """Timestamp fields at and past the documented range."""
    return {"seconds": draw(st.one_of(st.sampled_from(EDGE_SECONDS), st.integers(MIN_SECONDS, MAX_SECONDS))),
            "nanos": draw(st.one_of(st.sampled_from(EDGE_NANOS), st.integers(0, 999_999_999)))}


def _set_time(msg: object, field: str, ts: dict[str, int] | None) -> None:
    if ts is not None:
        target = getattr(msg, field)
        target.seconds, target.nanos = ts["seconds"], ts["nanos"]


@st.composite
def candidates(draw: st.DrawFn, ids: st.SearchStrategy[str], dim: int | None) -> pb.Candidate:
    """One hostile candidate; ``dim`` is the request's embedding dimension (None = any)."""
    c = pb.Candidate(id=draw(ids), layer=draw(short_texts), kind=draw(st.sampled_from(
        ["", "fact", "decision", "preference", "failure", "attempt", "FACT", "x" * 200])), content=draw(texts),
        retrieval_score=draw(floats), access_count=draw(U32), token_count=draw(U32),
        source=draw(enums), safety=draw(enums), provenance=draw(st.one_of(st.just(""), st.text(max_size=70))))
    if draw(st.booleans()):
        c.importance = draw(floats)
    c.thread, c.speaker = draw(short_texts), draw(st.one_of(short_texts, st.sampled_from(["x" * 129, "é" * 65])))
    if draw(st.booleans()):
        c.reranker_score = draw(floats)
    if draw(st.booleans()):
        c.position = draw(st.one_of(st.sampled_from(EDGE_POSITIONS), st.integers(-(2**63), 2**63 - 1)))
    for name in ("created_at", "last_accessed_at", "event_time", "ingested_at", "valid_from", "valid_to"):
        _set_time(c, name, draw(st.none() | timestamps()))
    for key, value in draw(st.dictionaries(short_texts, floats, max_size=6)).items():
        c.facet_scores[key] = value
    for key, value in draw(st.dictionaries(short_texts, floats, max_size=3)).items():
        c.stage_scores[key] = value
    for key, value in draw(st.dictionaries(short_texts, short_texts, max_size=4)).items():
        c.metadata[key] = value
    n = draw(st.sampled_from([0, 0, 1, 3, 8, 4097]) if dim is None else st.just(dim))
    c.embedding.extend(draw(st.lists(st.one_of(st.floats(width=32), st.sampled_from([0.0, 1.0, -1.0])),
                                     min_size=n, max_size=n)) if n < 50 else [0.5] * n)
    return c


def _set_packed(draw: st.DrawFn, req: pb.RankRequest) -> None:
    """Packed embeddings (embeddings_f32 + embedding_dim): right-sized or not, finite or not, alone or not."""
    dim = draw(st.sampled_from([0, 1, 3, 4097]))
    rows = max(0, len(req.candidates) + draw(st.sampled_from([0, 0, 0, -1, 1])))
    count = rows * dim
    values = draw(st.lists(st.one_of(st.floats(width=32), st.sampled_from([0.0, 1.0])), min_size=count,
                           max_size=count)) if count <= 64 else [0.25] * count
    req.embeddings_f32 = struct.pack(f"<{count}f", *values) + draw(st.sampled_from([b"", b"", b"\x00"]))
    req.embedding_dim = dim if draw(st.integers(0, 5)) else 0
    if draw(st.integers(0, 3)):
        for c in req.candidates:
            c.ClearField("embedding")


@st.composite
def rank_requests(draw: st.DrawFn) -> pb.RankRequest:
    """A RankRequest every field of which may sit at or past its limit."""
    id_pool = draw(st.lists(short_texts, min_size=1, max_size=6))
    ids = st.one_of(st.sampled_from(id_pool), st.text(min_size=1, max_size=10))  # duplicates on purpose
    dim = draw(st.sampled_from([None, None, 0, 2, 16]))
    req = pb.RankRequest(request_id=draw(short_texts), query=draw(texts),
                         profile=draw(st.sampled_from(["", "default", "agent-observer", "generative-agents",
                                                       "lians-recall", "research", "nope", "\x00"])),
                         candidates=draw(st.lists(candidates(ids, dim), max_size=12)),
                         placement=draw(enums), explain=draw(enums), explicit_lookup=draw(st.booleans()),
                         shadow_profile=draw(st.sampled_from(["", "support", "lians-recall", "missing"])))
    _set_time(req, "reference_time", draw(st.none() | timestamps()))
    many_layers = draw(st.sampled_from([0, 0, 0, 3, 64, 65, 3000]))
    for i in range(many_layers):
        req.layers.add(name=f"L{i % max(1, many_layers - 1)}" if many_layers < 64 else f"L{i}", share=0.1)
    for layer in draw(st.lists(st.tuples(short_texts, floats, U32, U32), max_size=4)):
        req.layers.add(name=layer[0], share=layer[1], floor_tokens=layer[2], max_items=layer[3])
    req.budget.max_tokens, req.budget.max_items = draw(U32), draw(U32)
    if draw(st.booleans()):
        req.min_score = draw(floats)
    for key, value in draw(st.dictionaries(st.sampled_from(["relevance", "trust", "recency", "bogus", ""]),
                                           floats, max_size=3)).items():
        req.weight_overrides[key] = value
    if draw(st.integers(0, 3)) == 0:
        _set_packed(draw, req)
    if draw(st.integers(0, 20)) == 0:  # past the candidate limit, cheaply
        req.candidates.extend(pb.Candidate(id=f"bulk{i}") for i in range(1601))
    return req


@st.composite
def admission_requests(draw: st.DrawFn) -> pb.ScoreAdmissionRequest:
    """A hostile ScoreAdmissionRequest."""
    req = pb.ScoreAdmissionRequest(request_id=draw(short_texts), profile=draw(st.sampled_from(
        ["", "lians-admission", "default", "nope"])))
    if draw(st.booleans()):
        req.candidate.CopyFrom(draw(candidates(short_texts, None)))
    _set_time(req, "reference_time", draw(st.none() | timestamps()))
    return req
