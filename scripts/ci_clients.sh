#!/usr/bin/env bash
# CI for the Go, TypeScript and Java clients: installs their toolchains' dependencies
# from scratch, checks that the generated client code is current, then replays
# the conformance vectors through the Go, TypeScript, Java and Python clients against
# a live `memrank serve` (clients/test.sh). Called by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==> %s\n' "$*"; }
elapsed() { echo "($(( $(date +%s) - $1 )) s)"; }

step "toolchains"
go version
node --version
echo "npm $(npm --version)"
java -version 2>&1 | sed -n 1p
mvn -B -v | sed -n 1p
if ! python3 -c "import memrank" 2>/dev/null || ! command -v buf >/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check -e '.[dev]'
fi
buf --version

step "Go modules (from the Go module proxy)"
t=$(date +%s); (cd clients/go && go mod download && go mod verify); elapsed "$t"

step "TypeScript packages (npm ci)"
t=$(date +%s); (cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error); elapsed "$t"

# Everything `mvn verify` needs (protoc and protoc-gen-grpc-java included), into ~/.m2, and a
# first build: clients/test.sh then runs the Java tests without fetching or recompiling. The
# dependency plugin too: clients/test.sh asks it for the classpath that runs the Java example.
step "Java client: Maven dependencies and build (from Maven Central)"
t=$(date +%s); (cd clients/java && mvn -B -q -ntp clean verify -DskipTests \
  dependency:build-classpath -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=runtime); elapsed "$t"

step "vectors match their independent derivation"
python3 tests/vectors/derive.py --check

step "generated client code is up to date (clients/gen.sh --check)"
t=$(date +%s); bash clients/gen.sh --check; elapsed "$t"

step "clients against a live server (clients/test.sh)"
bash clients/test.sh
