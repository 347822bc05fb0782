import hashlib
import hmac

from memrank.core.signals.provenance import canonical_message, provenance_digest, verify
from memrank.core.signals.trust import trust
from memrank.core.types import Source
from tests.support.build import batch, ctx, run
from tests.support.reference import provenance_proof

KEY = b"k" * 32
SV, TS = int(Source.SYSTEM_VERIFIED), int(Source.TRUSTED_SOURCE)


def test_digest_is_hmac_sha256_over_the_documented_message():
    content_hash = hashlib.sha256("Pay €5".encode()).hexdigest()
    message = f"memrank-provenance-v1\nm1\n1\n{content_hash}".encode()
    assert canonical_message("m1", 1, "Pay €5") == message
    assert provenance_digest(KEY, "m1", 1, "Pay €5") == hmac.new(KEY, message, hashlib.sha256).hexdigest()
    assert provenance_digest(KEY, "m1", 1, "Pay €5") == provenance_proof(KEY, "m1", 1, "Pay €5")


def test_verify_refuses_missing_key_missing_proof_and_garbage():
    proof = provenance_digest(KEY, "m1", SV, "x")
    assert verify(KEY, "m1", SV, "x", proof)
    assert verify(KEY, "m1", SV, "x", proof.upper())
    assert not verify(None, "m1", SV, "x", proof)
    assert not verify(KEY, "m1", SV, "x", "")
    assert not verify(KEY, "m1", SV, "x", "é" * 64)  # non-ASCII proof: refused, no crash


def _trust(rows, key=KEY):
    return run(trust, batch(*rows), ctx(provenance_key=key))


def test_valid_proof_gets_privileged_trust():
    rows = [{"id": "m1", "content": "fact", "source": SV, "provenance": provenance_proof(KEY, "m1", SV, "fact")},
            {"id": "m2", "content": "doc", "source": TS, "provenance": provenance_proof(KEY, "m2", TS, "doc")}]
    got = _trust(rows)
    assert got.values.tolist() == [1.0, 0.9]
    assert "valid provenance" in got.reasons[0][0]


def test_forged_privileged_sources_count_as_unknown():
    good = provenance_proof(KEY, "m1", SV, "fact")
    rows = [
        {"id": "m1", "content": "fact", "source": SV},  # no proof
        {"id": "m2", "content": "fact", "source": SV, "provenance": "0" * 64},  # garbage
        {"id": "m3", "content": "other fact", "source": SV, "provenance": good},  # replay: other id and content
        {"id": "m4", "content": "fact", "source": SV, "provenance": provenance_proof(b"wrong", "m4", SV, "fact")},
        {"id": "m5", "content": "fact", "source": SV, "provenance": provenance_proof(KEY, "m5", TS, "fact")},
        {"id": "m6", "content": "fact", "source": SV, "metadata": {"trust": "system_verified", "_trust": "1.0"}},
    ]
    got = _trust(rows)
    assert got.values.tolist() == [0.5] * 6
    assert all("counted as unknown" in r[0] for r in got.reasons)


def test_replay_for_other_content_of_the_same_id_fails():
    proof = provenance_proof(KEY, "m1", SV, "the original content")
    got = _trust([{"id": "m1", "content": "the original content!", "source": SV, "provenance": proof}])
    assert got.values.tolist() == [0.5]
    assert "provenance invalid" in got.reasons[0][0]


def test_without_a_configured_key_privileged_sources_are_unknown():
    proof = provenance_proof(KEY, "m1", SV, "fact")
    got = _trust([{"id": "m1", "content": "fact", "source": SV, "provenance": proof}], key=None)
    assert got.values.tolist() == [0.5]
    assert "no provenance key configured" in got.reasons[0][0]


def test_unprivileged_trust_table():
    sources = [Source.USER_PROVIDED, Source.CHAT, Source.IMPORTED, Source.UNKNOWN, Source.UNSPECIFIED,
               Source.UNTRUSTED, Source.MODEL_INFERRED]
    got = _trust([{"source": int(s)} for s in sources])
    assert got.values.tolist() == [0.75, 0.65, 0.6, 0.5, 0.5, 0.25, 0.55]
    assert got.values[6] < got.values[0]  # model-inferred below user-provided
