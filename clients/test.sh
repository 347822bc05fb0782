#!/usr/bin/env bash
# Replays the conformance vectors (tests/vectors/*.json) through every client
# against one live `memrank serve`, plus each client's own tests.
#
# Usage: clients/test.sh        (needs go, node/npm, Java 17+ with mvn, and memrank installed in python3)
#
# Starts the server on a free loopback port, exports MEMRANK_ADDR, runs the Go
# tests, the TypeScript checks and tests, the Java tests (mvn verify), the
# Python vector replay and the Go, TypeScript, LangChain.js and Java example
# programs, then checks that the four clients encoded every
# vector's request to the same bytes and got the same response bytes back
# (SHA-256 per vector, written to MEMRANK_DIGESTS_DIR by each client's
# replay), stops the server, and exits non-zero when any step failed.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
LOG="$(mktemp -t memrank-serve.XXXXXX.log)"
export MEMRANK_DIGESTS_DIR="$(mktemp -d -t memrank-digests.XXXXXX)"
step() { printf '\n==> %s\n' "$*"; }

step "start memrank serve"
# The decision log on, to a file: each client's RecordFeedback test must then be found there.
export DECISIONS="$MEMRANK_DIGESTS_DIR/decisions.jsonl"
MEMRANK_DECISION_LOG_ENABLED=true MEMRANK_DECISION_LOG_SINK=file MEMRANK_DECISION_LOG_PATH="$DECISIONS" \
  python3 -m memrank.cli serve --address 127.0.0.1:0 --metrics-port 0 2>"$LOG" >/dev/null &
SERVER=$!
cleanup() {
  if kill -0 "$SERVER" 2>/dev/null; then
    kill -TERM "$SERVER" 2>/dev/null
    wait "$SERVER" 2>/dev/null
  fi
  rm -f "$LOG"
  rm -rf "$MEMRANK_DIGESTS_DIR"
}
trap cleanup EXIT
PORT=""
for _ in $(seq 1 200); do
  PORT="$(python3 - "$LOG" <<'PY'
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    if line.startswith("{"):
        rec = json.loads(line)
        if rec.get("msg") == "serving":
            print(rec["port"])
            break
PY
)"
  [ -n "$PORT" ] && break
  if ! kill -0 "$SERVER" 2>/dev/null; then
    echo "memrank serve exited:" >&2; cat "$LOG" >&2; exit 1
  fi
  sleep 0.1
done
if [ -z "$PORT" ]; then
  echo "memrank serve did not log \"serving\" within 20 s:" >&2; cat "$LOG" >&2; exit 1
fi
export MEMRANK_ADDR="127.0.0.1:$PORT"
echo "MEMRANK_ADDR=$MEMRANK_ADDR"

declare -A RESULT
run() {  # run NAME COMMAND...: record pass/fail without stopping the other clients
  local name="$1"; shift
  step "$name"
  if "$@"; then RESULT[$name]=pass; else RESULT[$name]=FAIL; fi
}

run go bash -c "cd '$HERE/go' && go vet ./... && go test -count=1 -v ./... 2>&1 | grep -Ev '^=== (RUN|PAUSE|CONT)' ; exit \${PIPESTATUS[0]}"
run typescript bash -c "cd '$HERE/typescript' && npm ci --no-audit --no-fund --loglevel=error \
  && npx tsc -p tsconfig.json --noEmit && npm test --silent"
# Maven prints per-class test counts and anything wrong; its dependencies come from ~/.m2
# (scripts/ci_clients.sh fetches them first; a first run here downloads them).
run java bash -c "cd '$HERE/java' && mvn -B -ntp verify 2>&1 \
  | grep -E '^\[(ERROR|WARNING)\]|Tests run:|BUILD FAILURE' ; exit \${PIPESTATUS[0]}"
run python bash -c "cd '$ROOT' && python3 -m pytest -q tests/server/test_vectors.py tests/server/test_client_feedback.py"

# The example programs the docs include (docs/getting-started/first-call.md, docs/how-to/frameworks/langchainjs.md),
# run as a user runs them against the live server (they take MEMRANK_ADDR): each must exit 0 and print its
# selection, rank 1 first. (The Python ones: tests/server/test_examples.py, tests/frameworks/test_examples.py.)
example() {  # example PATTERN COMMAND...: COMMAND exits 0 and prints a line matching the extended regex PATTERN
  local pattern="$1" out rc; shift
  out="$("$@")"; rc=$?
  printf '%s\n' "$out"
  if [ "$rc" -ne 0 ]; then echo "exited $rc" >&2; return 1; fi
  grep -Eq "$pattern" <<<"$out" || { echo "no line matches /$pattern/" >&2; return 1; }
}
run "go example" example '^position [0-9]+ rank 1 m1 final_score ' bash -c "cd '$HERE/go' && go run ./example"
# npm test above compiled example/ into dist/example/.
run "typescript example" example '^position [0-9]+ rank 1 m1 final_score ' \
  bash -c "cd '$HERE/typescript' && node dist/example/example.js"
run "langchain.js example" example '^1 t[0-9] ' bash -c "cd '$HERE/typescript' && node dist/example/langchain.js"
# mvn verify above compiled the example (a test source); its runtime classpath from Maven (offline once fetched).
run "java example" example '^position [0-9]+ rank 1 m1 final_score ' bash -c "cd '$HERE/java' \
  && mvn -B -q -ntp dependency:build-classpath -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=runtime >&2 \
  && java -cp \"target/classes:target/test-classes:\$(cat target/classpath.txt)\" dev.memrank.example.FirstCall"

compare_digests() {
  python3 - "$MEMRANK_DIGESTS_DIR" "$ROOT/tests/vectors" <<'PY'
import json, sys
from pathlib import Path
folder = Path(sys.argv[1])
langs = ["go", "typescript", "java", "python"]
missing = [lang for lang in langs if not (folder / f"{lang}.json").exists()]
if missing:
    sys.exit(f"no digests from: {', '.join(missing)}")
got = {lang: json.loads((folder / f"{lang}.json").read_text()) for lang in langs}
names = sorted(set().union(*got.values()))
vectors = Path(sys.argv[2])
bad, nan = [], []
for name in names:
    for lang in langs:
        mine, ref = dict(got[lang].get(name, {})), dict(got["python"].get(name, {}))
        # A NaN's payload bits are the language's own (Go: 0x7ff8000000000001, Python,
        # JavaScript and Java: 0x7ff8000000000000); every one is NaN on the wire, so a
        # request carrying NaN is not byte-compared (its answer still is, by each client).
        if '"NaN"' in (vectors / f"{name}.json").read_text(encoding="utf-8"):
            mine.pop("request", None), ref.pop("request", None)
            nan.append(name)
        if mine != ref:
            bad.append(name)
            print(f"{name}: {lang} {got[lang].get(name)} != python {got['python'].get(name)}")
if bad or not names:
    sys.exit(1)
print(f"{len(names)} vectors: requests and responses byte-identical across {', '.join(langs)}"
      + (f" (NaN payload bits differ by language; request bytes not compared for: {', '.join(sorted(set(nan)))})"
         if nan else ""))
PY
}
run "same bytes in every client" compare_digests

feedback_in_log() {  # each client's feedback (labeler = its language) joined to its logged decision
  kill -TERM "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null  # the drain writes every queued record
  python3 - "$DECISIONS" <<'PY'
import json, sys
records = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
decisions = {r["decision_id"]: r for r in records if r["schema"] == "memrank.decision.v1"}
missing = []
for lang in ("go", "typescript", "java", "python"):
    fb = [r for r in records if r["schema"] == "memrank.feedback.v1" and r["labeler"] == lang]
    joined = [r for r in fb if decisions.get(r["decision_id"], {}).get("request_id") == f"{lang}-feedback"]
    if not joined:
        missing.append(lang)
if missing:
    sys.exit(f"no feedback joined to its decision in the decision log from: {', '.join(missing)}")
print(f"{len(decisions)} decisions logged; feedback from go, typescript, java and python joined to their decisions")
PY
}
run "feedback in the decision log" feedback_in_log

step "summary (vectors replayed against $MEMRANK_ADDR)"
status=0
for name in go typescript java python "go example" "typescript example" "langchain.js example" "java example" \
  "same bytes in every client" "feedback in the decision log"; do
  echo "$name: ${RESULT[$name]}"
  [ "${RESULT[$name]}" = pass ] || status=1
done
exit "$status"
