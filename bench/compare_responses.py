"""``python -m bench.compare_responses OUT.json``: a digest of every response of a varied set of Rank calls, made
with whichever ``memrank`` is first on PYTHONPATH; ``python -m bench.compare_responses A.json B.json`` compares two
such files (exit 1 when any response differs). Checks that a change to the request path keeps every byte.
``--feature-memo`` lends every call one ``memrank.feature_memo.FeatureMemo`` (64 MiB), in call order: compared
with a run without it, it shows the memo changes no byte (most calls find their memories stored by an earlier one).

The calls: every conformance vector (tests/vectors), bench's workloads (1 to 1,600 candidates; no, 16- and 384-dim
embeddings, packed and per candidate), each at every explain level, under four profiles and with a shadow profile,
layers, facet and stage scores, metadata, times, positions, threads, speakers, token counts, weight overrides and a
minimum score, plus invalid requests; each again in the columnar form where it can be said there, and the workloads
as the Python client sends them; each with and without a receipt key.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path

from google.protobuf import json_format  # type: ignore[import-untyped]

from bench.calls import call_of, rank_handler
from bench.data import workload
from bench.drivers import request_dict
from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client.requests import rank_request
from memrank.config import load_settings
from memrank.core.errors import MemrankError
from tests.support.columnar import representable, to_columnar

VECTORS = Path(__file__).resolve().parents[1] / "tests" / "vectors"
NOW = 1_767_225_600.5


def _copy(r: pb.RankRequest) -> pb.RankRequest:
    out = pb.RankRequest()
    out.CopyFrom(r)
    return out


def _varied(r: pb.RankRequest, rng: random.Random) -> pb.RankRequest:
    q = _copy(r)
    q.shadow_profile = "agent-observer"
    q.placement = 2  # type: ignore[assignment]  # PLACEMENT_... by number
    for i, c in enumerate(q.candidates):
        if i % 3 == 0:
            c.facet_scores["topic"] = rng.random()
        if i % 5 == 0:
            c.stage_scores["rerank"] = rng.random()
            c.metadata["k\u00e9y"] = "v"
        if i % 4 == 0:
            c.event_time.seconds, c.event_time.nanos = 1_767_000_000 + i, i * 7
        if i % 6 == 0:
            c.valid_from.seconds, c.valid_to.seconds = 1_700_000_000, 1_800_000_000 + i
        if i % 7 == 0:
            c.ingested_at.seconds, c.thread, c.speaker, c.position = 1_767_100_000, "t\u00fc", 'al"ex', i
        if i % 9 == 0:
            c.token_count, c.provenance, c.layer = 5 + i, "p", "we\u00efrd"
    q.layers.add(name="session", share=0.5, max_items=5, min_score=0.1)
    q.layers.add(name="durable", share=0.3, floor_tokens=100)
    q.weight_overrides["relevance"] = 0.5
    q.min_score = 0.05
    return q


def requests() -> dict[str, pb.RankRequest]:
    """The calls, by name."""
    reqs: dict[str, pb.RankRequest] = {}
    for path in sorted(VECTORS.glob("*.json")):
        v = json.loads(path.read_text(encoding="utf-8"))
        reqs["vec:" + v["name"]] = json_format.ParseDict(v["request"], pb.RankRequest())
    for n in (1, 10, 100, 400, 1600):
        for d in (0, 384, 16):
            w = workload(n, d, seed=n + d)
            reqs[f"w{n}x{d}"] = w.request
            if d:
                reqs[f"w{n}x{d}rep"] = w.repeated
    rng = random.Random(5)
    for name, r in list(reqs.items()):
        if not name.startswith("w") or name.startswith("w1600"):
            continue
        for level in (1, 2, 3):
            q = _copy(r)
            q.explain = level  # type: ignore[assignment]
            reqs[f"{name}:explain{level}"] = q
        reqs[f"{name}:varied"] = _varied(r, rng)
        for profile in ("agent-observer", "generative-agents", "lians-recall"):
            q = _copy(r)
            q.profile = profile
            reqs[f"{name}:{profile}"] = q
    for name in ("w100x0", "w100x384"):
        q = _copy(reqs[name])
        q.candidates[3].id = q.candidates[2].id
        q.candidates[5].retrieval_score = 2
        q.candidates[7].created_at.nanos = -1
        reqs[f"{name}:bad"] = q
        q = _copy(reqs[name])
        q.candidates[8].valid_from.seconds, q.candidates[8].valid_to.seconds = 10, 5
        reqs[f"{name}:bad2"] = q
    q = _copy(reqs["w100x384"])
    q.embeddings_f32 = q.embeddings_f32[:-4] + b"\x00\x00\xc0\x7f"  # a NaN
    reqs["w100x384:nan"] = q
    reqs.update(_columnar(reqs))
    return reqs


def _columnar(reqs: dict[str, pb.RankRequest]) -> dict[str, pb.RankRequest]:
    """Each request the columnar form can carry, in it (every column sent), the workloads as the Python client
    sends them (only the columns it sets), and columnar requests of a bad shape."""
    out = {f"{name}:columns": to_columnar(r) for name, r in reqs.items() if representable(r)}
    for n in (1, 10, 100, 400):
        w = workload(n, 384, seed=n + 384)
        out[f"w{n}x384:client"] = rank_request(request_dict(w), w.embeddings)
    q = _copy(out["w10x384:client"])
    q.columns.layers.append("extra")
    q.columns.created_at.nanos.append(3)
    q.columns.facet_names.extend(["a", "a", ""])
    out["w10x384:client:bad-shape"] = q
    q = _copy(out["w10x384:client"])
    q.columns.stage_names.append("s")
    q.columns.stage_scores.extend([0.5] * 9)
    out["w10x384:client:bad-matrix"] = q
    return out


def digests(feature_memo: bool = False) -> dict[str, str]:
    """SHA-256 of each response's bytes, or the error and its field violations, with and without a receipt key
    (``feature_memo``: every call with one shared feature memo)."""
    settings = load_settings(env={})
    handle = rank_handler(settings)  # as the server reads a request, in this tree's signature
    lent = {}
    if feature_memo:
        from memrank.feature_memo import FeatureMemo

        lent["features"] = FeatureMemo(64 << 20)
    out = {}
    for key in (None, b"receipt-key"):
        for name, r in requests().items():
            data = r.SerializeToString()
            label = f"{'key' if key else 'nokey'}|{name}"
            try:
                resp = handle(data, call_of(now=NOW, provenance_key=b"provenance-key", receipt_key=key, **lent))
                out[label] = hashlib.sha256(resp.SerializeToString()).hexdigest()
            except MemrankError as exc:
                out[label] = f"{type(exc).__name__}: {exc} {getattr(exc, 'violations', '')!r}"
    return out


def main(argv: list[str]) -> int:
    """Write the digests, or compare two files."""
    memo = "--feature-memo" in argv
    argv = [a for a in argv if a != "--feature-memo"]
    if len(argv) == 1:
        got = digests(memo)
        Path(argv[0]).write_text(json.dumps(got, indent=0, sort_keys=True) + "\n")
        print(f"{len(got)} responses -> {argv[0]}")
        return 0
    a, b = (json.loads(Path(p).read_text()) for p in argv)
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    print(f"compared {len(a)} and {len(b)} responses; {len(differ)} differ" + (f": {differ[:20]}" if differ else ""))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
