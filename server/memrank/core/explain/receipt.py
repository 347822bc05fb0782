"""Receipts: a SHA-256 digest over a canonical serialisation of a request's inputs and its answer, optionally
HMAC-signed.

The canonical form ``memrank.receipt.v3``, line by line and byte by byte, is specified in
docs/concepts/receipts.md: UTF-8 lines of request fields, one SHA-256 line per candidate column (so a large
batch costs one hash pass over each column, not a text line per candidate), then the selected memories with
their signals and the dropped columns. Digest = SHA-256 hex of the bytes; signature = HMAC-SHA256(receipt key,
digest hex) hex, or "". Nothing in it depends on the explain level. The v2 form (one text line per candidate
and per drop) is still verified by every client (``client.verify``).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from itertools import compress

import numpy as np

from memrank.core.batch import Batch, RankParams
from memrank.core.explain.canonical_values import (
    f,
    key_sets,
    keyed,
    numbers,
    numbers_sha256,
    opt,
    optional_sha256,
    q,
    sha,
    strings,
    strings_sha256,
)
from memrank.core.explain.outcome import RankOutcome

SCHEMA = "memrank.receipt.v3"
TIMES = ("created_at", "last_accessed_at", "event_time", "ingested_at", "valid_from", "valid_to")


def _h(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


def _candidates(b: Batch) -> list[str]:
    """The candidate column lines: one SHA-256 over each column's bytes (a string column's streamed, so the
    contents are never copied whole; the number columns converted together, and the optional ones)."""
    s = strings_sha256
    retrieval, access, tokens, source, safety = numbers_sha256(
        (b.retrieval, b.access_count, b.token_count, b.source, b.safety))
    importance, position, *times = optional_sha256((b.importance, b.positions, *(getattr(b, t) for t in TIMES)))
    columns = [("id", s(b.ids)), ("layer", s(b.layers)), ("kind", s(b.kinds)), ("content", s(b.contents)),
               ("retrieval_score", retrieval), ("importance", importance), ("access_count", access),
               ("token_count", tokens), ("source", source), ("safety", safety), ("provenance", s(b.provenance)),
               ("thread", s(b.threads)), ("position", position), ("speaker", s(b.speakers)),
               *zip(TIMES, times, strict=True),
               ("facet_scores", _h(keyed(b.facets))), ("stage_scores", _h(keyed(b.stage_scores))),
               ("metadata", _h(key_sets(b.metadata)))]
    return [f"candidate {name} {digest}" for name, digest in columns]


def _dropped(b: Batch, o: RankOutcome) -> list[str]:
    """The dropped count and the dropped column lines (response order: candidate order)."""
    mask = o.drop != 0
    ids, keep = b.ids, mask.tolist()
    columns = [("id", strings(list(compress(ids, keep)))), ("layer", strings(list(compress(o.layer_of, keep)))),
               ("reason", numbers(o.drop[mask])), ("score", numbers(o.final[mask])),
               ("covered_by", strings([ids[c] if c >= 0 else "" for c in o.covered_by[mask].tolist()]))]
    return [f"dropped {np.count_nonzero(mask)}", *(f"drop {name} {_h(data)}" for name, data in columns)]


def _embeddings(batch: Batch) -> str:
    e = batch.embeddings
    if e is None:
        return "embeddings 0 -"
    return f"embeddings {e.shape[1]} {_h(np.ascontiguousarray(e, dtype='<f4').data)}"


def canonical(batch: Batch, o: RankOutcome, params: RankParams, ref_seconds: int, ref_nanos: int,
              policy_version: str) -> bytes:
    """The canonical serialisation (docs/concepts/receipts.md) of the answer ``o`` to a request."""
    lines = [f"schema {SCHEMA}", f"query {sha(params.query)}", f"reference_time {ref_seconds} {ref_nanos}",
             f"profile {q(o.profile.name)}", f"policy_version {q(policy_version)}",
             f"weights {len(o.profile.signals)}"]
    lines += [f"weight {q(s.name)} {f(s.weight)} {q(s.normalization)}" for s in o.profile.signals]
    lines += [f"explicit_lookup {int(params.explicit_lookup)}", f"placement {int(params.placement)}",
              f"budget {params.max_tokens} {params.max_items}", f"min_score {opt(params.min_score)}",
              f"relevance_threshold {opt(params.relevance_threshold)}", f"layers {len(params.layers)}"]
    lines += [f"layer {q(x.name)} {f(x.share)} {x.floor_tokens} {x.max_items} {opt(x.min_score)}"
              for x in params.layers]
    lines += [_embeddings(batch), f"candidates {batch.n}", *_candidates(batch)]
    ids = {i: q(batch.ids[i]) for i in o.ranked.tolist()}
    lines += _selected(o, ids, {name: q(name) for name in set(o.layer_of)})
    lines += _dropped(batch, o)
    lines.append("")  # the last line's "\n"
    return "\n".join(lines).encode()


def _memory_template(names: tuple[str, ...]) -> str:
    """The %-template of a memory line and its signal lines for these signal names."""
    return "memory %d %s %s %d %s %s %s %s" + "".join(
        f"\nsignal {q(name).replace('%', '%%')} %s %s %s %s" for name in names)


def _selected(o: RankOutcome, ids: Mapping[int, str], quoted: dict[str, str]) -> list[str]:
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
