#!/usr/bin/env bash
# Regenerates the Go and TypeScript client code from proto/ (the only way it changes).
#
# Usage: clients/gen.sh [--check]
#
# Go: protoc-gen-go and protoc-gen-go-grpc at pinned versions, installed with
# `go install` into clients/.bin; TypeScript: protoc-gen-es from the package's
# devDependencies (npm ci when node_modules is missing). buf drives both
# (buf.gen.yaml in each client). With --check, the code is generated into a
# temporary folder and the script exits 1 when the committed code differs.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
PROTOC_GEN_GO=v1.36.12
PROTOC_GEN_GO_GRPC=v1.6.2
CHECK=0
case "${1:-}" in
  --check) CHECK=1 ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

command -v buf >/dev/null || { echo "buf not found: pip install buf-bin" >&2; exit 1; }

# Pinned Go plugins, reinstalled when the version differs.
BIN="$HERE/.bin"
mkdir -p "$BIN"
if [ "$("$BIN/protoc-gen-go" --version 2>/dev/null)" != "protoc-gen-go $PROTOC_GEN_GO" ]; then
  GOBIN="$BIN" go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO"
fi
if [ "$("$BIN/protoc-gen-go-grpc" --version 2>/dev/null)" != "protoc-gen-go-grpc ${PROTOC_GEN_GO_GRPC#v}" ]; then
  GOBIN="$BIN" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC"
fi
export PATH="$BIN:$PATH"

if [ ! -x "$HERE/typescript/node_modules/.bin/protoc-gen-es" ]; then
  (cd "$HERE/typescript" && npm ci --no-audit --no-fund --loglevel=error)
fi

# generate CLIENT DEST: run buf in the client's folder, writing DEST/<out>.
generate() { (cd "$HERE/$1" && buf generate -o "$2"); }

if [ "$CHECK" -eq 0 ]; then
  rm -rf "$HERE/go/gen" "$HERE/typescript/src/gen"
  generate go "$HERE/go"
  generate typescript "$HERE/typescript"
  echo "generated clients/go/gen and clients/typescript/src/gen"
  exit 0
fi

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
generate go "$TMP/go"
generate typescript "$TMP/typescript"
stale=0
diff -r "$TMP/go/gen" "$HERE/go/gen" >/dev/null || { echo "stale: clients/go/gen" >&2; stale=1; }
diff -r "$TMP/typescript/src/gen" "$HERE/typescript/src/gen" >/dev/null \
  || { echo "stale: clients/typescript/src/gen" >&2; stale=1; }
if [ "$stale" -ne 0 ]; then
  echo "generated client code is out of date: run clients/gen.sh and commit the result" >&2
  exit 1
fi
echo "generated client code is up to date"
