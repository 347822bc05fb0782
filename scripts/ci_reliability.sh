#!/usr/bin/env bash
# Reliability CI (tests/reliability/README.md): installs ghz and atheris, then runs
#   1. a bounded coverage-guided atheris run of validation + conversion + core + response (60 s),
#   2. a ghz load run against a real `memrank serve` (60 s at concurrency 8) with RSS, p99 and
#      "nothing lost" checks.
# The pytest part of the suite (fuzzers, faults, TLS, auth, trust, data handling, a short load run)
# runs with the rest of the tests. Budget: about 3 minutes here. Soak: MEMRANK_SOAK=1 (see README).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$(go env GOPATH)/bin:$PATH"
FUZZ_SECONDS="${MEMRANK_FUZZ_SECONDS:-60}"
LOAD_SECONDS="${MEMRANK_LOAD_SECONDS:-60}"
OUT="${MEMRANK_RELIABILITY_OUT:-$(mktemp -d /tmp/memrank-reliability.XXXXXX)}"
mkdir -p "$OUT"

echo "--- reliability extra (cryptography, psutil, atheris)"
python3 -m pip install --quiet -e '.[reliability]'

echo "--- ghz, from the Go module proxy (the same command the benchmarks use)"
if ! command -v ghz >/dev/null; then
  go install github.com/bojand/ghz/cmd/ghz@v0.121.0
fi

echo "--- atheris: ${FUZZ_SECONDS}s coverage-guided run (corpus seeded from tests/vectors)"
mkdir -p "$OUT/corpus"
python3 tests/reliability/fuzz_atheris.py -max_total_time="$FUZZ_SECONDS" -timeout=20 -rss_limit_mb=4096 \
  -artifact_prefix="$OUT/" -print_final_stats=1 "$OUT/corpus" >"$OUT/atheris.log" 2>&1 || {
  grep -v '^INFO: Instrumenting' "$OUT/atheris.log" | tail -60
  echo "atheris found a crash; the input is in $OUT/" >&2
  exit 1
}
grep -E '^Done [0-9]+ runs' "$OUT/atheris.log"

echo "--- ghz load: ${LOAD_SECONDS}s at concurrency 8, errors = 0, RSS growth bound, every candidate accounted for"
python3 -m tests.reliability.load --duration "$LOAD_SECONDS" --concurrency 8 --output "$OUT/load.json"
echo "reliability: atheris and load passed (reports in $OUT)"
