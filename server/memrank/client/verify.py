"""Verify a receipt from the RankRequest and the RankResponse it answered (``memrank verify``, ``verify_receipt``).

The canonical bytes are rebuilt from the two messages alone, as docs/concepts/receipts.md describes them
(``memrank.receipt.v3``, the server's, and ``memrank.receipt.v2``, the form before it: the receipt names its
form): nothing here reads the server's own serialisation (``core.explain.receipt``), so the two are independent
implementations of one documented form. The request is needed
for every candidate's fields; the response for the answer, and at ``EXPLAIN_LEVEL_NONE`` it lacks the
breakdown numbers the receipt binds (below ``EXPLAIN_LEVEL_FULL``, the covered_by of REDUNDANT drops): the
receipt is the same at every explain level, so the same request asked at ``EXPLAIN_LEVEL_FULL`` gives a
response that can be verified.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from google.protobuf import json_format
from google.protobuf.timestamp_pb2 import Timestamp

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client.requests import candidates_of

SCHEMA = "memrank.receipt.v3"  # what the server writes
SCHEMAS = ("memrank.receipt.v2", SCHEMA)  # what this verifier rebuilds
TIMES = ("created_at", "last_accessed_at", "event_time", "ingested_at", "valid_from", "valid_to")
REDUNDANT = pb.DROP_REASON_REDUNDANT
AGAIN = ("the receipt is the same at every explain level, so the same request asked at EXPLAIN_LEVEL_FULL "
         "(with the response's reference_time) gives a response that verifies against the same digest")


class Unverifiable(Exception):
    """The messages lack something the receipt binds, so its bytes cannot be rebuilt."""


@dataclass(frozen=True)
class ReceiptCheck:
    """The outcome of a receipt check: ``ok`` only when the digest was recomputed and matches (and, with a key,
    so does the signature); ``problems`` say what differs, ``unchecked`` what could not be checked."""

    ok: bool
    digest: str  # the recomputed digest ("" when it could not be recomputed)
    problems: tuple[str, ...] = ()
    unchecked: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.ok

    def message(self) -> str:
        """One line per finding, the verdict first."""
        head = "receipt verified" if self.ok else ("receipt does NOT verify" if self.problems
                                                   else "receipt not verified")
        return "\n".join([head, *(f"differs: {p}" for p in self.problems),
                          *(f"not checked: {u}" for u in self.unchecked)])


def q(s: str) -> str:
    """The JSON string literal of s with ASCII escapes."""
    return json.dumps(s, ensure_ascii=True)


def f(x: float) -> str:
    """The 16 hex digits of the big-endian IEEE-754 float64 bits of x."""
    return struct.pack(">d", x).hex()


def h(data: bytes | str) -> str:
    """SHA-256 hex (of a string's UTF-8 bytes)."""
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def _when(t: Timestamp) -> str:
    return f(t.seconds + t.nanos / 1e9)


def _embeddings(req: pb.RankRequest) -> str:
    if req.embeddings_f32:
        return f"embeddings {req.embedding_dim} {h(req.embeddings_f32)}"
    dim = max((len(c.embedding) for c in req.candidates), default=0)
    if dim == 0:
        return "embeddings 0 -"
    zeros = bytes(4 * dim)
    rows = [struct.pack(f"<{dim}f", *c.embedding) if len(c.embedding) == dim else zeros for c in req.candidates]
    return f"embeddings {dim} {h(b''.join(rows))}"


def _candidate(c: pb.Candidate) -> list[str]:
    fields = [q(c.id), q(c.layer), q(c.kind), h(c.content), f(c.retrieval_score),
              f(c.importance) if c.HasField("importance") else "-", str(c.access_count), str(c.token_count),
              str(c.source), str(c.safety), q(c.provenance), q(c.thread),
              str(c.position) if c.HasField("position") else "-", q(c.speaker),
              *(_when(getattr(c, t)) if c.HasField(t) else "-" for t in TIMES)]
    out = ["candidate " + " ".join(fields)]
    out += [f"facet {k} {f(v)}" for k, v in sorted((q(k), v) for k, v in c.facet_scores.items())]
    out += [f"stage {k} {f(v)}" for k, v in sorted((q(k), v) for k, v in c.stage_scores.items())]
    out += [f"metadata {k}" for k in sorted(map(q, c.metadata))]
    return out


def _opt(msg: Any, name: str) -> str:
    return f(getattr(msg, name)) if msg.HasField(name) else "-"


def _s(values: list[str]) -> bytes:
    """S: the UTF-8 byte lengths as 4-byte big-endian integers, then the UTF-8 bytes."""
    encoded = [v.encode() for v in values]
    return b"".join(len(e).to_bytes(4, "big") for e in encoded) + b"".join(encoded)


def _f(values: list[float]) -> bytes:
    """F: each number's big-endian float64 bytes."""
    return b"".join(struct.pack(">d", v) for v in values)


def _o(values: list[float | None]) -> bytes:
    """O: a presence byte per value, then F with 0.0 for an unset one."""
    return bytes(v is not None for v in values) + _f([0.0 if v is None else v for v in values])


def _m(maps: list[Mapping[str, float]]) -> bytes:
    """M: per name any map carries, in UTF-8 byte order: S of the name, then O of every map's value for it."""
    names = sorted({k for m in maps for k in m}, key=str.encode)
    return b"".join(_s([k]) + _o([m.get(k) for m in maps]) for k in names)


def _k(maps: list[Mapping[str, str]]) -> bytes:
    """K: the key counts as 4-byte big-endian integers, then S of every map's keys, each in UTF-8 byte order."""
    return (b"".join(len(m).to_bytes(4, "big") for m in maps)
            + _s([k for m in maps for k in sorted(m, key=str.encode)]))


def _candidate_columns(cs: Sequence[pb.Candidate]) -> list[str]:
    """v3: one line per candidate column, the SHA-256 of its bytes."""

    def some(c: Any, name: str, value: Any) -> float | None:
        return float(value) if c.HasField(name) else None

    columns = [("id", _s([c.id for c in cs])), ("layer", _s([c.layer for c in cs])),
               ("kind", _s([c.kind for c in cs])), ("content", _s([c.content for c in cs])),
               ("retrieval_score", _f([c.retrieval_score for c in cs])),
               ("importance", _o([some(c, "importance", c.importance) for c in cs])),
               ("access_count", _f([float(c.access_count) for c in cs])),
               ("token_count", _f([float(c.token_count) for c in cs])),
               ("source", _f([float(c.source) for c in cs])), ("safety", _f([float(c.safety) for c in cs])),
               ("provenance", _s([c.provenance for c in cs])), ("thread", _s([c.thread for c in cs])),
               ("position", _o([some(c, "position", c.position) for c in cs])),
               ("speaker", _s([c.speaker for c in cs])),
               *((t, _o([some(c, t, getattr(c, t).seconds + getattr(c, t).nanos / 1e9) for c in cs]))
                 for t in TIMES),
               ("facet_scores", _m([c.facet_scores for c in cs])), ("stage_scores", _m([c.stage_scores for c in cs])),
               ("metadata", _k([c.metadata for c in cs]))]
    return [f"candidate {name} {h(data)}" for name, data in columns]


def _covered_by(resp: pb.RankResponse) -> list[str]:
    """Each dropped candidate's covered_by; Unverifiable when a REDUNDANT one carries no breakdown."""
    for d in resp.dropped:
        if d.reason == REDUNDANT and not d.HasField("breakdown"):
            raise Unverifiable(f"dropped {d.id!r} is REDUNDANT but carries no breakdown (below "
                               f"EXPLAIN_LEVEL_FULL), so its covered_by is unknown; {AGAIN}")
    return [d.breakdown.covered_by for d in resp.dropped]


def _dropped_columns(resp: pb.RankResponse) -> list[str]:
    """v3: the dropped count, then one line per dropped column (response order)."""
    ds = list(resp.dropped)
    columns = [("id", _s([d.id for d in ds])), ("layer", _s([d.layer for d in ds])),
               ("reason", _f([float(d.reason) for d in ds])), ("score", _f([d.score for d in ds])),
               ("covered_by", _s(_covered_by(resp)))]
    return [f"dropped {len(ds)}", *(f"drop {name} {h(data)}" for name, data in columns)]


def canonical_lines(req: pb.RankRequest, resp: pb.RankResponse, schema: str = "") -> list[str]:
    """The receipt's canonical lines (without their newlines) in ``schema``'s form (by default the receipt's,
    or v3 when it names none); Unverifiable when the response lacks a part."""
    schema = schema or resp.receipt.schema or SCHEMA
    v2 = schema == SCHEMAS[0]
    lines = [f"schema {schema}", f"query {h(req.query)}",
             f"reference_time {resp.reference_time.seconds} {resp.reference_time.nanos}",
             f"profile {q(resp.profile)}", f"policy_version {q(resp.policy_version)}", f"weights {len(resp.weights)}"]
    lines += [f"weight {q(w.signal)} {f(w.weight)} {q(w.normalization)}" for w in resp.weights]
    lines += [f"explicit_lookup {int(req.explicit_lookup)}", f"placement {req.placement}",
              f"budget {req.budget.max_tokens} {req.budget.max_items}", f"min_score {_opt(req, 'min_score')}",
              f"relevance_threshold {_opt(req, 'relevance_threshold')}", f"layers {len(req.layers)}"]
    lines += [f"layer {q(x.name)} {f(x.share)} {x.floor_tokens} {x.max_items} {_opt(x, 'min_score')}"
              for x in req.layers]
    cands = candidates_of(req)  # either request form, as Candidate messages
    lines += [_embeddings(req), f"candidates {len(cands)}"]
    if v2:
        for c in cands:
            lines += _candidate(c)
    else:
        lines += _candidate_columns(cands)
    lines.append(f"selected {len(resp.selected)}")
    for m in sorted(resp.selected, key=lambda m: m.rank):
        if not m.HasField("breakdown"):
            raise Unverifiable(f"selected {m.id!r} carries no breakdown (EXPLAIN_LEVEL_NONE), and the receipt "
                               f"binds its combined, final and signal scores; {AGAIN}")
        b = m.breakdown
        lines.append(f"memory {m.rank} {q(m.id)} {q(m.layer)} {m.position} {f(m.score)} {f(b.combined_score)} "
                     f"{f(b.final_score)} {f(b.blend_term)}")
        lines += [f"signal {q(s.name)} {f(s.raw)} {f(s.normalized)} {f(s.weight)} {f(s.contribution)}"
                  for s in b.signals]
    if not v2:
        return lines + _dropped_columns(resp)
    lines.append(f"dropped {len(resp.dropped)}")
    lines += [f"drop {q(d.id)} {q(d.layer)} {d.reason} {f(d.score)} {q(cover)}"
              for d, cover in zip(resp.dropped, _covered_by(resp), strict=True)]
    return lines


def canonical(req: pb.RankRequest, resp: pb.RankResponse) -> bytes:
    """The receipt's canonical bytes, each line ending in a newline."""
    return "".join(line + "\n" for line in canonical_lines(req, resp)).encode()


def _accounting(req: pb.RankRequest, resp: pb.RankResponse) -> list[str]:
    """What the response says that cannot be an answer to the request (every candidate exactly once, ranks
    1..k, positions in order, public scores strictly decreasing with rank)."""
    out: list[str] = []
    asked = Counter(c.id for c in candidates_of(req))
    told = Counter([m.id for m in resp.selected] + [d.id for d in resp.dropped])
    out += [f"candidate {cid!r} is neither selected nor dropped" for cid in asked if cid not in told]
    out += [f"{cid!r} is in the response but is no candidate of the request" for cid in told if cid not in asked]
    out += [f"{cid!r} is in the response {n} times" for cid, n in told.items() if n > 1 and cid in asked]
    by_rank = sorted(resp.selected, key=lambda m: m.rank)
    if [m.rank for m in by_rank] != list(range(1, len(by_rank) + 1)):
        out.append(f"selected ranks are {[m.rank for m in by_rank]}, not 1..{len(by_rank)}")
    if [m.position for m in resp.selected] != list(range(len(resp.selected))):
        out.append("selected positions are not 0, 1, ... in response order")
    out += [f"score of rank {b.rank} ({b.score!r}) is not below rank {a.rank}'s ({a.score!r})"
            for a, b in pairwise(by_rank) if not b.score < a.score]
    return out


def _as(message: Any, cls: type[Any]) -> Any:
    if isinstance(message, cls):
        return message
    if isinstance(message, Mapping):
        return json_format.ParseDict(message, cls())
    raise TypeError(f"want a {cls.__name__} or its protobuf JSON as a dict, got {type(message).__name__}")


def verify_receipt(request: pb.RankRequest | Mapping[str, Any] | None,
                   response: pb.RankResponse | Mapping[str, Any], key: bytes | None = None) -> ReceiptCheck:
    """Check a response's receipt: recompute its digest from the request and the response, and its HMAC
    signature under ``key`` (the receipt key file's bytes, surrounding whitespace removed) when given.

    ``request`` None checks the signature only (the digest binds the candidates' fields, which only the
    request holds). The result is truthy when the receipt verified; ``message()`` says what differs.
    """
    resp: pb.RankResponse = _as(response, pb.RankResponse)
    r = resp.receipt
    problems: list[str] = []
    unchecked: list[str] = []
    if r.schema not in SCHEMAS:
        return ReceiptCheck(False, "", (f"receipt schema is {r.schema!r}; this verifier knows "
                                        f"{' and '.join(map(repr, SCHEMAS))}",))
    if key:
        want = hmac.new(key, r.digest.encode(), hashlib.sha256).hexdigest()
        if not r.signature:
            problems.append("the receipt is not signed (the server has no security.receipt_key_file), but a key "
                            "was given")
        elif not hmac.compare_digest(want, r.signature):
            problems.append("signature: not the HMAC-SHA256 of the digest under this key (another key, or the "
                            "digest or signature was changed)")
    elif r.signature:
        unchecked.append("the signature (no key given)")
    else:
        unchecked.append("the signature: the receipt is unsigned (the server has no security.receipt_key_file)")
    if request is None:
        unchecked.append("the digest: it binds every candidate's fields, which only the request holds "
                         "(give the request)")
        return ReceiptCheck(False, "", tuple(problems), tuple(unchecked))
    req: pb.RankRequest = _as(request, pb.RankRequest)
    problems += _accounting(req, resp)
    try:
        digest = hashlib.sha256(canonical(req, resp)).hexdigest()
    except Unverifiable as exc:
        unchecked.append(f"the digest: {exc}")
        return ReceiptCheck(False, "", tuple(problems), tuple(unchecked))
    if digest != r.digest:
        problems.append(f"digest: recomputed {digest}, the receipt says {r.digest or '(empty)'}: the request and "
                        "response are not the pair the receipt was made for (a candidate field, the query, a "
                        "parameter, a score, an id or a drop differs)")
    return ReceiptCheck(not problems, digest, tuple(problems), tuple(unchecked))
