#!/usr/bin/env bash
# CI for the benchmark harness: install the bench extra (the LangChain baselines) so the smoke test
# (tests/bench) runs every baseline. ghz is not installed here: `go install` builds it from source in
# about 3 minutes on this machine, beyond this step's budget; the smoke test skips ghz when it is absent.
# A full run (`python -m bench`) is manual; see bench/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet -e '.[bench]'
python -m pytest -q -p no:cacheprovider tests/bench
