#!/usr/bin/env bash
# Replays the conformance vectors (tests/vectors/*.json) through every client
# against one live `memrank serve`, plus each client's own tests.
#
# Usage: clients/test.sh        (needs go, node/npm, and memrank installed in python3)
#
# Starts the server on a free loopback port, exports MEMRANK_ADDR, runs the Go
# tests, the TypeScript checks and tests, and the Python vector replay, stops
# the server, and exits non-zero when any client failed.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
LOG="$(mktemp -t memrank-serve.XXXXXX.log)"
step() { printf '\n==> %s\n' "$*"; }

step "start memrank serve"
python3 -m memrank.cli serve --address 127.0.0.1:0 --metrics-port 0 2>"$LOG" >/dev/null &
SERVER=$!
cleanup() {
  if kill -0 "$SERVER" 2>/dev/null; then
    kill -TERM "$SERVER" 2>/dev/null
    wait "$SERVER" 2>/dev/null
  fi
  rm -f "$LOG"
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
run python bash -c "cd '$ROOT' && python3 -m pytest -q tests/integration/test_vectors.py"

step "summary (vectors replayed against $MEMRANK_ADDR)"
status=0
for name in go typescript python; do
  echo "$name: ${RESULT[$name]}"
  [ "${RESULT[$name]}" = pass ] || status=1
done
exit "$status"
