"""Receipts: a SHA-256 digest over a canonical serialisation of a request's inputs and its answer, optionally
HMAC-signed.

Canonical form ``memrank.receipt.v2`` (README "Receipt canonical form"; UTF-8 lines, each ending in "\\n").
``f(x)`` is the 16 lower-case hex digits of the IEEE-754 big-endian float64 bits of x, ``q(s)`` the JSON
string literal of s with ASCII escapes (``json.dumps(s, ensure_ascii=True)``), ``h(b)`` the SHA-256 hex of
bytes b, ``-`` an unset optional value; integers are decimal::

    schema memrank.receipt.v2
    query h(query)
    reference_time <seconds> <nanos>
    profile q(profile)
    policy_version q(policy_version)
    weights <count>
    weight q(signal) f(weight) q(normalization)           one per RankResponse.weights entry, in order
    explicit_lookup <0|1>
    placement <RankRequest.placement number>
    budget <max_tokens> <max_items>
    min_score <f(x) | ->
    relevance_threshold <f(x) | ->
    layers <count>
    layer q(name) f(share) <floor_tokens> <max_items> <f(min_score) | ->     RankRequest.layers, in order
    embeddings <dim> <h(n x dim float32 little-endian) | ->
    candidates <count>
    candidate q(id) q(layer) q(kind) h(content) f(retrieval_score) <f(importance) | -> <access_count>
              <token_count> <source> <safety> q(provenance) q(thread) <position | -> q(speaker)
              <created_at> <last_accessed_at> <event_time> <ingested_at> <valid_from> <valid_to>
    facet q(name) f(score)        per facet score of the candidate above, sorted by q(name)
    stage q(name) f(score)        per stage score, sorted by q(name)
    metadata q(key)               per metadata key, sorted by q(key) (values never change the answer)
    selected <count>
    memory <rank> q(id) q(layer) <position> f(score) f(combined_score) f(final_score) f(blend_term)
    signal q(name) f(raw) f(normalized) f(weight) f(contribution)     per signal, after its memory
    dropped <count>
    drop q(id) q(layer) <reason number> f(score) q(covered_by)

(a candidate is one line; it is wrapped here). Candidates are in request order, a time is
``f(seconds + nanos / 1e9)`` or ``-``; selected memories in rank order, dropped ones in response order. The
embedding matrix is every candidate's row, a candidate without an embedding contributing ``dim`` zeros (what the
server ranks with); ``embeddings 0 -`` when the request carries none. Digest = SHA-256 hex of the bytes;
signature = HMAC-SHA256(receipt key, digest hex) hex, or "". Nothing here depends on the explain level.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Sequence
from itertools import repeat
from typing import Any

import numpy as np

from memrank.core.batch import Batch, RankParams
from memrank.core.explain.canonical_values import EMPTY, f, hexes, ints, opt, opt_hexes, q, quoted, sha, shas
from memrank.core.explain.outcome import RankOutcome

SCHEMA = "memrank.receipt.v2"
TIMES = ("created_at", "last_accessed_at", "event_time", "ingested_at", "valid_from", "valid_to")


def _extras(batch: Batch) -> dict[int, list[str]]:
    """The facet, stage and metadata lines of each candidate that has any."""
    out: dict[int, list[str]] = {}
    for tag, columns in (("facet", batch.facets), ("stage", batch.stage_scores)):
        for name in sorted(columns, key=q):
            col = columns[name]
            head, at = f"{tag} {q(name)} ", np.flatnonzero(~np.isnan(col)).tolist()
            for i, h in zip(at, hexes(col[at]), strict=True):
                out.setdefault(i, []).append(head + h)
    for i, m in enumerate(batch.metadata):
        if m:
            out.setdefault(i, []).extend(f"metadata {k}" for k in sorted(map(q, m)))
    return out


# Candidates whose lines are built at a time: every column of a block is a list of small strings (pymalloc's, in
# arenas of their own that freed numpy memory does not refill), so a whole 1,600-candidate batch's columns were
# about 1 MiB alive at once. 512: up to the bench's 400 candidates one block, as before (each block costs its
# column conversions again: 256 cost 0.4 % more instructions per call at 400).
_ROWS = 512


def _candidates(batch: Batch, ids: Sequence[str]) -> list[str]:
    """The candidate lines, each followed by its facet, stage and metadata lines; past ``_ROWS`` candidates, as
    one "\n"-joined string per block of ``_ROWS`` candidates (the same bytes once the payload is joined)."""
    extras = _extras(batch)
    if batch.n <= _ROWS:
        return _block(batch, ids, extras, 0, batch.n)
    return ["\n".join(_block(batch, ids, extras, start, min(start + _ROWS, batch.n)))
            for start in range(0, batch.n, _ROWS)]


def _block(batch: Batch, ids: Sequence[str], extras: dict[int, list[str]], start: int, end: int) -> list[str]:
    """The lines of candidates ``start`` to ``end`` (all of them: the columns themselves, no slices)."""
    src: list[Any] = [ids, batch.layers, batch.kinds, batch.contents, batch.retrieval, batch.importance,
                      batch.access_count, batch.token_count, batch.source, batch.safety, batch.provenance,
                      batch.threads, batch.positions, batch.speakers, *(getattr(batch, name) for name in TIMES)]
    if start or end != batch.n:
        src = [col[start:end] for col in src]
    (ids, layers, kinds, contents, retrieval, importance, access, tokens, source, safety, provenance, threads, pos,
     speakers, *times) = src
    positions: Iterable[str] = (repeat("-") if np.isnan(pos).all() else
                                ["-" if p != p else str(int(p)) for p in pos.tolist()])
    columns: list[Iterable[str]] = [
        repeat("candidate"), ids, quoted(layers), quoted(kinds), shas(contents), hexes(retrieval),
        opt_hexes(importance), ints(access), ints(tokens), ints(source), ints(safety), quoted(provenance),
        quoted(threads), positions, quoted(speakers), *map(opt_hexes, times),
    ]
    lines = list(map(" ".join, zip(*columns, strict=False)))  # strict: repeat() is endless
    if not extras:
        return lines
    out: list[str] = []
    for i, line in enumerate(lines, start):
        out.append(line)
        out.extend(extras.get(i, ()))
    return out


def _embeddings(batch: Batch) -> str:
    e = batch.embeddings
    if e is None:
        return "embeddings 0 -"
    return f"embeddings {e.shape[1]} {hashlib.sha256(np.ascontiguousarray(e, dtype='<f4').data).hexdigest()}"


def canonical(batch: Batch, o: RankOutcome, params: RankParams, ref_seconds: int, ref_nanos: int,
              policy_version: str) -> bytes:
    """The canonical serialisation described in the module docstring, of the answer ``o`` to a request."""
    lines = [f"schema {SCHEMA}", f"query {sha(params.query)}", f"reference_time {ref_seconds} {ref_nanos}",
             f"profile {q(o.profile.name)}", f"policy_version {q(policy_version)}",
             f"weights {len(o.profile.signals)}"]
    lines += [f"weight {q(s.name)} {f(s.weight)} {q(s.normalization)}" for s in o.profile.signals]
    lines += [f"explicit_lookup {int(params.explicit_lookup)}", f"placement {int(params.placement)}",
              f"budget {params.max_tokens} {params.max_items}", f"min_score {opt(params.min_score)}",
              f"relevance_threshold {opt(params.relevance_threshold)}", f"layers {len(params.layers)}"]
    lines += [f"layer {q(x.name)} {f(x.share)} {x.floor_tokens} {x.max_items} {opt(x.min_score)}"
              for x in params.layers]
    ids = list(map(q, batch.ids))
    lines += [_embeddings(batch), f"candidates {batch.n}", *_candidates(batch, ids)]
    layer = o.layer_of
    quoted = {name: q(name) for name in set(layer)}
    lines += _selected(o, ids, quoted)
    dropped = np.flatnonzero(o.drop).tolist()
    lines.append(f"dropped {len(dropped)}")
    if dropped:
        cover = o.covered_by[dropped].tolist()
        lines += map(" ".join, zip(repeat("drop"), [ids[i] for i in dropped], [quoted[layer[i]] for i in dropped],
                                   ints(o.drop[dropped]), hexes(o.final[dropped]),
                                   [ids[c] if c >= 0 else EMPTY for c in cover], strict=False))
    lines.append("")  # the last line's "\n"
    text = "\n".join(lines)
    del lines  # the lines go before the text is encoded: two copies of the payload alive at once, not three
    return text.encode()


def _memory_template(names: tuple[str, ...]) -> str:
    """The %-template of a memory line and its signal lines for these signal names."""
    return "memory %d %s %s %d %s %s %s %s" + "".join(
        f"\nsignal {q(name).replace('%', '%%')} %s %s %s %s" for name in names)


def _selected(o: RankOutcome, ids: Sequence[str], quoted: dict[str, str]) -> list[str]:
    """The selected count line, then each memory's line and its signal lines, in rank order.

    Every number of a memory's lines is one row of a (k, 4 + 4 x signals) matrix in line order (public score,
    combined, final, blend, then raw, normalized, weight, contribution per signal), written as hex in one
    conversion; each memory is then one %-format of its row (the lines of a memory are one string).
    """
    ranked = o.ranked.tolist()
    k = len(ranked)
    out = [f"selected {k}"]
    if not k:
        return out
    s = o.scores
    signals = s.signals
    width = 4 + 4 * len(signals)
    # Per-candidate columns in line order (each weight's slot holds a stand-in column, overwritten below).
    columns = [s.combined, o.final, s.blend_term]
    for c in signals:
        columns += (c.raw, c.normalized, c.raw, c.contribution)
    rows = np.empty((width, k))
    rows[0] = o.public_score
    np.take(np.array(columns, dtype=np.float64), o.ranked, axis=1, out=rows[1:])
    rows[6::4] = [[c.weight] for c in signals]
    values = rows.T.astype(">f8").tobytes().hex(" ", 8).split(" ")
    tpl = _memory_template(tuple(c.name for c in signals))
    layer, positions = o.layer_of, o.positions.tolist()
    out += [tpl % (r + 1, ids[i], quoted[layer[i]], positions[r], *values[r * width:(r + 1) * width])
            for r, i in enumerate(ranked)]
    return out


def seal(payload: bytes, key: bytes | None) -> tuple[str, str]:
    """(digest hex, signature hex or "") of a canonical payload."""
    digest = hashlib.sha256(payload).hexdigest()
    signature = hmac.new(key, digest.encode(), hashlib.sha256).hexdigest() if key else ""
    return digest, signature
