"""agent-observer against Go itself: DESIGN.md's scoreMemory built from go_observer/main.go with the installed go.

A few hundred generated cases (ASCII, Greek with final sigmas, Turkish dotted and dotless i, combining
marks, lone surrogates, invalid UTF-8, empty and white-space-only tasks, long contents, Go's and
Python's white space, words under 3 bytes, repeated words, relevance outside [0, 1]) are scored by the
Go program and by memrank, through the core and through the Rank RPC path, and must agree to 1e-12.
Without go the tests skip, except in CI (CI set), where they fail.
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.call import Call, Policy, RankInput, handle_rank
from memrank.config import load_settings
from memrank.core.scoring.combine import score
from memrank.core.text.golang import fields, to_lower
from tests.support.build import batch, ctx, profile

GO_DIR = Path(__file__).resolve().parent / "go_observer"
AO = profile("agent-observer")
TOLERANCE = 1e-12

SEPARATORS = [" ", "  ", "\t", "\n", "\r\n", "\v\f", "\x85", "\xa0", "\u3000", "\u2003", "\u1680", "\u2028",
              "\u202f", " \u3000 \xa0 "]
NOT_SEPARATORS = ["\x1c", "\x1f", "\u200b", "\u180e", "\ufeff"]  # Python's split() or nobody's; not Go's
WORDS = {
    "ascii": ["log", "dialog", "Dialog", "LOG", "fix", "Fix", "the", "a", "to", "ab", "abc", "deploy", "Alpha",
              "alpha", "service", "x", "tea", "TEA"],
    "greek": ["ΟΔΟΣ", "οδος", "οδοσ", "Σίσυφος", "ΣΊΣΥΦΟΣ", "σοφός", "ΣΟΦΟΣ", "ς", "σ", "Σ", "ΣΣ", "ΑΣ", "λόγος",
              "ΛΌΓΟΣ", "ΟΔΌΣ."],
    "turkish": ["İstanbul", "istanbul", "ISTANBUL", "İSTANBUL", "ıspanak", "IŞIK", "ışık", "İ", "i\u0307", "I",
                "ı", "İi", "Iİı", "DİYARBAKIR"],
    "combining": ["e\u0301", "é", "É", "E\u0301", "A\u030a", "Å", "\u212b", "\u0301", "n\u0303", "ñ", "Ñ", "Ǆ",
                  "ǅ", "ǆ", "\u212a", "\u2126", "ẞ", "ß", "ﬁ", "ǰ", "J\u030c"],
    "cjk": ["日本", "東京", "日", "会話"],
    "surrogate": ["\ud800", "\udfff", "x\ud83d", "\ufffd", "\ud83d\ude00", "ab\udc80"],
}
INVALID = [b"\xff", b"\xfe", b"\x80", b"\xbf", b"\xc0\xaf", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
           b"\xf0\x9f\x98", b"\xc3", b"\xe0\x80\x80"]
KINDS = ["decision", "fact", "preference", "failure", "attempt", "Decision", "FACT", "other", "", "décision"]
RELEVANCE = [0.0, 1.0, 1.5, -0.5, -2.0, 42.0, 1e3, -1e3, 0.1 + 0.2, 1.0000000000000002]
ACCESS = [0, 0, 1, 4, 5, 6, 49, 50, 51, 200, 2**32 - 1]


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must provide go: the toolchain clients/go is tested with)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def go_observer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Go reference, built with the installed go (standard library only: no network)."""
    go = shutil.which("go") or next((p for p in ("/usr/local/go/bin/go",) if Path(p).is_file()), None)
    if go is None:
        _missing("go not found")
    assert go is not None
    exe = tmp_path_factory.mktemp("go_observer") / "go_observer"
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "", "GOWORK": "off", "CGO_ENABLED": "0"}
    built = subprocess.run([go, "build", "-o", str(exe), "."], cwd=GO_DIR, env=env, capture_output=True,
                           text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    return exe


def _run(exe: Path, args: list[str], payload: dict[str, Any] | None = None) -> Any:
    done = subprocess.run([str(exe), *args], input=json.dumps(payload) if payload is not None else "",
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# --- the cases -----------------------------------------------------------------------------------

Text = str | bytes  # bytes: sent to Go as they are (invalid UTF-8 included)


def _words(rng: random.Random, count: int, scripts: list[str]) -> list[str]:
    return [rng.choice(WORDS[rng.choice(scripts)]) for _ in range(count)]


def _join(rng: random.Random, words: list[str]) -> str:
    """The words, each followed by a separator (mostly a space; some only Python splits on), sometimes led by
    white space."""
    seps = [rng.choice(SEPARATORS + NOT_SEPARATORS) if rng.random() < 0.4 else " " for _ in words]
    return rng.choice(["", "", " ", "\u3000\xa0"]) + "".join(w + s for w, s in zip(words, seps, strict=True))


def _case_change(rng: random.Random, word: str) -> str:
    return rng.choice([word, word.upper(), word.lower(), word.title(), word.swapcase()])


def _content(rng: random.Random, task_words: list[str], scripts: list[str]) -> str:
    picked = [_case_change(rng, w) for w in task_words if rng.random() < 0.5] + _words(rng, rng.randrange(6),
                                                                                        scripts)
    rng.shuffle(picked)
    glue = rng.choice(["", " ", "-", "\u3000"])  # "" glues words: substrings across word boundaries
    text = glue.join(picked)
    if rng.random() < 0.05:  # long: the whole content is searched, a match at its end counts
        text = ("filler words Σ İ " * 3000) + text
    return text


def _memory(rng: random.Random, content: Text) -> dict[str, Any]:
    relevance = rng.random() if rng.random() < 0.6 else rng.choice(RELEVANCE)
    return {"kind": rng.choice(KINDS), "content": content, "relevance": relevance,
            "access_count": rng.choice(ACCESS)}


def _with_invalid(rng: random.Random, text: str) -> bytes:
    """The text's UTF-8 (a surrogate as its 3 bytes, invalid to Go) with invalid sequences put in."""
    out = bytearray()
    for ch in text:
        out += ch.encode("utf-8", "surrogatepass")
        if rng.random() < 0.15:
            out += rng.choice(INVALID)
    return bytes(out)


def _hand_picked() -> list[tuple[Text, list[dict[str, Any]]]]:
    """The issue's reproductions and the edges named in it."""
    def m(content: Text, relevance: float = 0.5, kind: str = "fact", access: int = 0) -> dict[str, Any]:
        return {"kind": kind, "content": content, "relevance": relevance, "access_count": access}
    return [
        ("İstanbul trip", [m("Trip to istanbul", 0.1), m("İstanbul trip"), m("i\u0307stanbul trip")]),
        ("ΟΔΟΣ", [m("η οδος"), m("η οδοσ"), m("Η ΟΔΟΣ")]),
        ("ΣΊΣΥΦΟΣ ΟΔΌΣ", [m("σίσυφοσ οδόσ"), m("σίσυφος οδός")]),
        ("", [m("anything", 1.5, "failure", 7)]),
        (" \t\u3000\xa0\x85 ", [m("anything", -0.5)]),
        ("ab cd ef", [m("ab cd ef")]),
        ("log log log to", [m("the dialog"), m("no")]),
        ("LOG\x1cDIALOG", [m("a log\x1cdialog b")]),
        ("fix", [m(("x" * 200_000) + "FIX"), m("f" * 100_000)]),
        (b"ab\xffc tea", [m(b"xxAB\xfeCyy"), m(b"ab\xef\xbf\xbdc")]),
        (b"\xed\xa0\x80", [m("\ud800"), m(b"\xed\xa0\x80")]),
        (b"\xe2\x82", [m(b"\xe2\x82\xe2\x82"), m("\ufffd\ufffd")]),
        ("\ud83d\ude00", [m("\ufffd\ufffd"), m("😀")]),
        ("Dialog", [m("dialog", 1.5, "failure", 0)]),  # 0.20 + 0.45 + 0.25: Go's 0.9, above 1 with access 5
        ("Dialog", [m("dialog", 1.5, "decision", 5)]),
    ]


def generate_cases(seed: int = 20, count: int = 400) -> list[tuple[Text, list[dict[str, Any]]]]:
    """The hand-picked cases, then ``count`` generated ones, some with invalid UTF-8."""
    rng = random.Random(seed)
    cases = _hand_picked()
    names = sorted(WORDS)
    for _ in range(count):
        scripts = rng.sample(names, rng.randrange(1, 4))
        words = _words(rng, rng.choice([0, 1, 1, 2, 3, 4, 6, 10]), scripts)
        task: Text = _join(rng, words)
        contents: list[Text] = [_content(rng, words, scripts) for _ in range(rng.randrange(1, 7))]
        if rng.random() < 0.12:
            task = _with_invalid(rng, str(task))
            contents = [_with_invalid(rng, str(c)) for c in contents]
        cases.append((task, [_memory(rng, c) for c in contents]))
    return cases


def _wire(t: Text) -> dict[str, Any]:
    if isinstance(t, bytes):
        return {"bytes": base64.b64encode(t).decode("ascii")}
    return {"runes": [ord(ch) for ch in t]}


def _go_scores(exe: Path, cases: list[tuple[Text, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    payload = {"cases": [{"task": _wire(task), "memories": [{**mem, "content": _wire(mem["content"])}
                                                            for mem in mems]} for task, mems in cases]}
    results: list[dict[str, Any]] = _run(exe, [], payload)["results"]
    assert len(results) == len(cases)
    return results


def _as_sent(t: Text, go_runes: list[int]) -> str:
    """What memrank receives: the text itself, or for bytes the code points Go reads (invalid byte: U+FFFD)."""
    return "".join(map(chr, go_runes)) if isinstance(t, bytes) else t


def _memrank(task: str, mems: list[dict[str, Any]], contents: list[str]) -> list[float]:
    rows = [{"kind": mem["kind"], "content": c, "retrieval_score": mem["relevance"],
             "access_count": mem["access_count"]} for mem, c in zip(mems, contents, strict=True)]
    b = batch(*rows)
    s = score(b, ctx(task), AO)
    assert s.gate.tolist() == [0] * len(rows), [r["content"][:40] for r in rows]
    return [float(x) for x in s.combined]


# --- the tests -----------------------------------------------------------------------------------

def test_the_cases_cover_what_they_claim() -> None:
    cases = generate_cases()
    texts = [t for task, mems in cases for t in (task, *(mem["content"] for mem in mems))]
    strs = [t for t in texts if isinstance(t, str)]
    assert len(cases) >= 400 and sum(len(mems) for _, mems in cases) >= 1000
    assert sum(isinstance(t, bytes) for t in texts) >= 100
    for needle in ("Σ", "İ", "ı", "\u0301", "\ud800", "\u3000", "\x85", "\xa0", "\x1c", "日"):
        assert any(needle in t for t in strs), needle
    assert any(not fields(to_lower(task)) for task, _ in cases if isinstance(task, str))
    assert any(len(t) > 100_000 for t in strs)
    assert {mem["relevance"] for _, mems in cases for mem in mems} >= {1.5, -0.5, 42.0}


def test_agent_observer_equals_go_score_memory(go_observer: Path) -> None:
    cases = generate_cases()
    wrong = []
    for (task, mems), go in zip(cases, _go_scores(go_observer, cases), strict=True):
        contents = [_as_sent(mem["content"], runes) for mem, runes in zip(mems, go["contents"], strict=True)]
        ours = _memrank(_as_sent(task, go["task"]), mems, contents)
        if any(abs(a - b) > TOLERANCE for a, b in zip(ours, go["scores"], strict=True)):
            wrong.append((task, [c[:60] for c in contents], ours, go["scores"]))
    assert not wrong, f"{len(wrong)} of {len(cases)} cases differ from Go, e.g. {wrong[:3]}"


def test_final_score_through_the_rank_path_equals_go(go_observer: Path) -> None:
    """The same through validation, conversion and the pipeline: final_score is Go's number, every candidate
    returned (negative scores included), relevance outside [0, 1] accepted. Lone surrogates cannot be sent."""
    cases = [c for c in generate_cases()
             if not any("\ud800" <= ch <= "\udfff" for t in (c[0], *(m["content"] for m in c[1]))
                        if isinstance(t, str) for ch in t)]
    settings = load_settings(env={})
    when = Timestamp(seconds=1_780_000_000)
    for (task, mems), go in zip(cases, _go_scores(go_observer, cases), strict=True):
        contents = [_as_sent(mem["content"], runes) for mem, runes in zip(mems, go["contents"], strict=True)]
        request = pb.RankRequest(profile="agent-observer", query=_as_sent(task, go["task"]), reference_time=when,
                                 candidates=[pb.Candidate(id=f"m{i}", kind=mem["kind"], content=c,
                                                          retrieval_score=mem["relevance"],
                                                          access_count=mem["access_count"])
                                             for i, (mem, c) in enumerate(zip(mems, contents, strict=True))])
        response = handle_rank(RankInput(request), Policy.of(settings), Call(0.0))
        assert not response.dropped
        finals = {m.id: m.breakdown.final_score for m in response.selected}
        for i, want in enumerate(go["scores"]):
            assert abs(finals[f"m{i}"] - want) <= TOLERANCE, (task, contents[i][:60], finals[f"m{i}"], want)


def test_lower_case_and_white_space_tables_equal_go(go_observer: Path) -> None:
    """strings.ToLower of every code point (surrogates: U+FFFD) and every character strings.Fields splits on."""
    tables = _run(go_observer, ["-tables"])
    go_lower = {r: "".join(map(chr, runes)) for r, runes in tables["lower"]}
    differ = [hex(cp) for cp in range(0x110000) if to_lower(chr(cp)) != go_lower.get(cp, chr(cp))]
    assert not differ, f"unicode {tables['unicode']}: {differ[:20]}"
    go_space = set(tables["space"])
    ours = {cp for cp in range(0x110000) if fields(f"a{chr(cp)}b") == ["a", "b"]}
    assert ours == go_space, sorted(ours ^ go_space)
