"""FriendsQA at scene level: each scene of the episode-level dev set becomes a conversation of its own.

The episode-level set (``../shared/data/friendsqa``: one conversation per
episode, its scenes as sessions) gives `memrank eval` pools of most of an
episode. A FriendsQA question is written about one scene, and a caller that
keeps a scene as its memory sends the whole scene, 10-60 short turns: the
shape where a per-batch scaling of the scores matters most. This writes that
view for `memrank eval`, outside the repository:

    python eval/friendsqa_scenes.py --data ../shared/data/friendsqa/dev.jsonl.gz \\
        --embeddings ../shared/data/friendsqa/dev_minilm.npz --out /tmp/friendsqa-scenes

Each scene (a session) is one conversation, id the scene id; its questions are
the episode's questions whose evidence lies in it (every FriendsQA question's
does: one scene each). The vectors are the episode file's rows, re-keyed
("<scene>/<turn id>", "<scene>/q<k>"); nothing is re-embedded.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np

from memrank.evaluation.data import read_json_lines


def scenes(episode: dict[str, Any]) -> list[tuple[dict[str, Any], list[int]]]:
    """Each scene of an episode as a conversation, with the episode's indices of its questions."""
    by_session: dict[int, list[dict[str, Any]]] = {}
    for t in episode["turns"]:
        by_session.setdefault(int(t["session"]), []).append(t)
    session_of = {t["id"]: int(t["session"]) for t in episode["turns"]}
    out = []
    for session, turns in by_session.items():
        scene_id = str(turns[0]["id"]).split(":", 1)[0]
        picked = [i for i, q in enumerate(episode["questions"])
                  if q["evidence"] and {session_of[e] for e in q["evidence"]} == {session}]
        if picked:
            out.append(({"conversation_id": scene_id, "turns": turns,
                         "questions": [episode["questions"][i] for i in picked]}, picked))
    return out


def main(argv: list[str] | None = None) -> None:
    """Write <out>/dev.jsonl.gz and <out>/dev_minilm.npz."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, required=True, help="the episode-level dev.jsonl(.gz)")
    p.add_argument("--embeddings", type=Path, required=True, help="the episode-level dev_minilm.npz")
    p.add_argument("--out", type=Path, required=True, help="folder to write (outside the repository)")
    args = p.parse_args(argv)
    with np.load(args.embeddings, allow_pickle=False) as z:
        turn_row = {str(k): i for i, k in enumerate(z["turn_ids"])}
        q_row = {str(k): i for i, k in enumerate(z["question_keys"])}
        turn_emb, q_emb = z["turn_emb"], z["question_emb"]
    lines, t_ids, t_rows, q_keys, q_rows = [], [], [], [], []
    for episode in read_json_lines(args.data):
        eid = episode["conversation_id"]
        for scene, picked in scenes(episode):
            sid = scene["conversation_id"]
            lines.append(json.dumps(scene))
            for t in scene["turns"]:
                t_ids.append(f"{sid}/{t['id']}")
                t_rows.append(turn_row[f"{eid}/{t['id']}"])
            for k, i in enumerate(picked):
                q_keys.append(f"{sid}/q{k}")
                q_rows.append(q_row[f"{eid}/q{i}"])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "dev.jsonl.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode("utf-8"), mtime=0))
    np.savez(args.out / "dev_minilm.npz", turn_ids=np.array(t_ids), turn_emb=turn_emb[t_rows],
             question_keys=np.array(q_keys), question_emb=q_emb[q_rows])
    print(f"{len(lines)} scenes, {len(q_keys)} questions -> {args.out}")


if __name__ == "__main__":
    main()
