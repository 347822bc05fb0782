"""Coverage-guided fuzzing (atheris / libFuzzer) of validation + conversion + the core + response building.

Each input is either serialized RankRequest bytes (mutated from the conformance vectors) or,
when the first byte is odd, a request built field by field from the bytes. The property: the
call returns a response that accounts for every candidate exactly once, or raises
InvalidRequest (INVALID_ARGUMENT at the edge). Anything else is a crash that libFuzzer reports
with the input that caused it.

    python tests/reliability/fuzz_atheris.py -max_total_time=60 /tmp/corpus   # CI: 60 s
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["memrank"]):
    from google.protobuf import json_format
    from google.protobuf.message import DecodeError

    from memrank._gen.v1 import ranking_pb2 as pb
    from memrank.api.call import Call, Policy, RankInput, handle_rank
    from memrank.config import load_settings
    from memrank.core.errors import InvalidRequest

SETTINGS = load_settings(env={})
NOW = 1_767_225_600
KEY = b"fuzz-provenance-key"
VECTORS = Path(__file__).resolve().parents[1] / "vectors"


def seed_corpus(folder: Path) -> int:
    """Write every conformance vector's request as a binary seed; return how many."""
    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    for path in sorted(VECTORS.glob("*.json")):
        request = json_format.ParseDict(json.loads(path.read_text())["request"], pb.RankRequest())
        (folder / f"{path.stem}.bin").write_bytes(b"\x00" + request.SerializeToString())
        n += 1
    return n


def _built(fdp: atheris.FuzzedDataProvider) -> pb.RankRequest:
    req = pb.RankRequest(query=fdp.ConsumeUnicodeNoSurrogates(40), profile=fdp.PickValueInList(
        ["", "default", "agent-observer", "generative-agents", "lians-recall", "research", "x"]),
        placement=fdp.ConsumeIntInRange(-1, 4), explain=fdp.ConsumeIntInRange(0, 4),
        explicit_lookup=fdp.ConsumeBool())
    if fdp.ConsumeBool():
        req.reference_time.seconds = fdp.ConsumeIntInRange(-62_135_596_801, 253_402_300_800)
    for _ in range(fdp.ConsumeIntInRange(0, 8)):
        req.layers.add(name=fdp.ConsumeUnicodeNoSurrogates(6), share=fdp.ConsumeRegularFloat(),
                       floor_tokens=fdp.ConsumeIntInRange(0, 5000), max_items=fdp.ConsumeIntInRange(0, 5))
    dim = fdp.ConsumeIntInRange(0, 4)
    for i in range(fdp.ConsumeIntInRange(0, 24)):
        c = req.candidates.add(id=fdp.ConsumeUnicodeNoSurrogates(3) or str(i), layer=fdp.ConsumeUnicodeNoSurrogates(6),
                               kind=fdp.PickValueInList(["", "fact", "decision", "preference", "failure"]),
                               content=fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 300)),
                               retrieval_score=fdp.ConsumeProbability() if fdp.ConsumeBool() else fdp.ConsumeFloat(),
                               access_count=fdp.ConsumeIntInRange(0, 2**32 - 1),
                               token_count=fdp.ConsumeIntInRange(0, 3000), source=fdp.ConsumeIntInRange(0, 9),
                               safety=fdp.ConsumeIntInRange(0, 6))
        if fdp.ConsumeBool():
            c.importance = fdp.ConsumeProbability()
        for name in ("created_at", "last_accessed_at", "event_time", "valid_from", "valid_to"):
            if fdp.ConsumeBool():
                getattr(c, name).seconds = NOW + fdp.ConsumeIntInRange(-10**9, 10**9)
        if dim:
            c.embedding.extend(fdp.ConsumeFloatListInRange(dim, -1.0, 1.0))
        if fdp.ConsumeBool():
            c.facet_scores[fdp.PickValueInList(["bm25", "dense", "graph"])] = fdp.ConsumeRegularFloat()
        if fdp.ConsumeBool():
            c.stage_scores["cross_encoder"] = fdp.ConsumeProbability()
    if dim and fdp.ConsumeBool():  # the same embeddings packed into embeddings_f32, sometimes cut short
        packed = b"".join(struct.pack(f"<{dim}f", *c.embedding) for c in req.candidates)
        for c in req.candidates:
            c.ClearField("embedding")
        req.embeddings_f32 = packed[:len(packed) - fdp.ConsumeIntInRange(0, 5)]
        req.embedding_dim = dim
    req.budget.max_tokens = fdp.ConsumeIntInRange(0, 4000)
    req.budget.max_items = fdp.ConsumeIntInRange(0, 10)
    return req


def test_one_input(data: bytes) -> None:
    """The fuzz target."""
    if not data:
        return
    if data[0] % 2:
        request = _built(atheris.FuzzedDataProvider(data[1:]))
    else:
        try:
            request = pb.RankRequest.FromString(data[1:])
        except DecodeError:
            return
    try:
        response = handle_rank(RankInput(request), Policy.of(SETTINGS), Call(float(NOW), KEY))
    except InvalidRequest:
        return
    got = sorted([m.id for m in response.selected] + [d.id for d in response.dropped])
    if got != sorted(c.id for c in request.candidates):
        raise AssertionError(f"candidates lost or duplicated: sent {len(request.candidates)}, got {len(got)}")
    if any(d.reason == pb.DROP_REASON_UNSPECIFIED for d in response.dropped):
        raise AssertionError("a dropped candidate has no reason")


def main() -> None:
    """libFuzzer's command line; seeds the corpus folder (the last argument) from the vectors."""
    folders = [a for a in sys.argv[1:] if not a.startswith("-")]
    if folders and not Path(folders[-1]).is_file():  # a file is one input to replay
        seed_corpus(Path(folders[-1]))
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
