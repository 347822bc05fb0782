#!/usr/bin/env bash
# Builds every release artifact from the one version (server/memrank/__init__.py)
# into dist/release/ (MEMRANK_RELEASE_DIR), and publishes nothing:
#   memrank_sidecar-V-py3-none-any.whl, memrank_sidecar-V.tar.gz   python -m build
#   memrank-CHART.tgz                  helm package helm/memrank (appVersion V)
#   memrank-sidecar-V.tgz              npm pack in clients/typescript
#   memrank-client-V.jar               mvn package in clients/java
#   memrank-image-V.oci.tar            the image (scripts/ci_image.sh), buildah push oci-archive:
#   go-module.txt                      the tag the Go module needs (clients/go/vV): printed, not made
#   SHA256SUMS
#
# Usage: scripts/release.sh VERSION|current
#   VERSION (with or without a leading v) must be the tree's version: bump
#   __version__, the chart's appVersion, clients/typescript/package.json and
#   clients/java/pom.xml together first (this script checks that they agree).
# Environment:
#   MEMRANK_RELEASE_IMAGE=build|reuse|skip   build (default) runs scripts/ci_image.sh;
#       reuse archives localhost/memrank:V already in local storage (CI built it
#       earlier in the same run); skip makes no image archive
#   MEMRANK_RELEASE_NO_ISOLATION=1   python -m build --no-isolation (the installed setuptools)
# Needs python3 with `build` (the dev extra), helm, npm, mvn, go; buildah (root) for the image.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
die() { echo "release.sh: $*" >&2; exit 1; }
now() { date +%s%N; }
since() { local ds=$(( ($(now) - $1) / 100000000 )); echo "$(( ds / 10 )).$(( ds % 10 )) s"; }
step() { printf '\n--> %s\n' "$*"; }
t_all=$(now)

[ $# -eq 1 ] || die "usage: scripts/release.sh VERSION|current"
VERSION="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' server/memrank/__init__.py)"
[ -n "$VERSION" ] || die "no __version__ in server/memrank/__init__.py"
want="${1#v}"
[ "$want" = current ] || [ "$want" = "$VERSION" ] \
  || die "asked for $1, the tree is at $VERSION (server/memrank/__init__.py): bump the version first"
[[ "$VERSION" =~ ^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]] \
  || die "$VERSION is not a semantic version MAJOR.MINOR.PATCH[-PRE]"
MAJOR="${BASH_REMATCH[1]}"

# --- one version everywhere
chart_app="$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' helm/memrank/Chart.yaml)"
chart_version="$(sed -n 's/^version: *\([^ ]*\) *$/\1/p' helm/memrank/Chart.yaml)"
npm_version="$(node -p 'require("./clients/typescript/package.json").version')"
npm_name="$(node -p 'require("./clients/typescript/package.json").name')"
java_version="$(python3 - <<'EOF'
import xml.etree.ElementTree as ET
ns = {"m": "http://maven.apache.org/POM/4.0.0"}
print(ET.parse("clients/java/pom.xml").getroot().findtext("m:version", namespaces=ns))
EOF
)"
java_artifact="$(python3 - <<'EOF'
import xml.etree.ElementTree as ET
ns = {"m": "http://maven.apache.org/POM/4.0.0"}
print(ET.parse("clients/java/pom.xml").getroot().findtext("m:artifactId", namespaces=ns))
EOF
)"
go_module="$(sed -n 's/^module //p' clients/go/go.mod)"
dist_name="$(python3 -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["name"])')"
bad=""
[ "$chart_app" = "$VERSION" ] || bad+=" helm/memrank/Chart.yaml appVersion=$chart_app"
[ "$npm_version" = "$VERSION" ] || bad+=" clients/typescript/package.json version=$npm_version"
[ "$java_version" = "$VERSION" ] || bad+=" clients/java/pom.xml version=$java_version"
[ -z "$bad" ] || die "the version is $VERSION (server/memrank/__init__.py) but:$bad"
# Keep a Changelog: the version's own section, "## [V] - YYYY-MM-DD" (the Unreleased entries moved under it).
grep -Eq "^## \[${VERSION//./\\.}\] - [0-9]{4}-[0-9]{2}-[0-9]{2}\$" CHANGELOG.md \
  || die "CHANGELOG.md has no section '## [$VERSION] - YYYY-MM-DD': move its Unreleased entries under one"
# A Go module from v2 on needs the major version in its path (…/clients/go/vN).
if [ "$MAJOR" -ge 2 ] && [[ "$go_module" != */v"$MAJOR" ]]; then
  die "version $VERSION needs the Go module path to end in /v$MAJOR (clients/go/go.mod: $go_module)"
fi
GO_TAG="clients/go/v$VERSION"   # a module in a subdirectory is tagged with that directory as prefix
commit="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
dirty="$(git status --porcelain 2>/dev/null | head -n 5)"
echo "memrank $VERSION (chart $chart_version), commit $commit"
[ -z "$dirty" ] || echo "warning: the working tree differs from $commit; artifacts are built from the working tree:"$'\n'"$dirty"

OUT="${MEMRANK_RELEASE_DIR:-dist/release}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
case "$OUT" in / | "$ROOT" | "$HOME") die "MEMRANK_RELEASE_DIR=$OUT: name a folder of its own" ;; esac
rm -rf "${OUT:?}"/*

# --- Python: sdist, then the wheel built from that sdist
step "wheel and sdist (python -m build)"
t=$(now)
build_opts=(--outdir "$OUT")
[ "${MEMRANK_RELEASE_NO_ISOLATION:-0}" = 1 ] && build_opts+=(--no-isolation)
python3 -m build "${build_opts[@]}" . >"$OUT/.build.log" 2>&1 || { cat "$OUT/.build.log" >&2; die "python -m build failed"; }
rm -f "$OUT/.build.log"
echo "python: $(since "$t")"

# --- Helm chart
step "chart (helm package)"
t=$(now)
export PATH="$(go env GOPATH)/bin:$PATH"
helm package helm/memrank --destination "$OUT" >/dev/null
echo "helm: $(since "$t")"

# --- npm tarball (prepack builds dist/ from a clean slate)
step "npm package (npm pack)"
t=$(now)
(
  cd clients/typescript
  [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error
  npm pack --pack-destination "$OUT" --loglevel=error >/dev/null
)
echo "npm: $(since "$t")"

# --- Java jar
step "Java jar (mvn package)"
t=$(now)
(cd clients/java && mvn -q -B -ntp package -DskipTests) >"$OUT/.mvn.log" 2>&1 || { cat "$OUT/.mvn.log" >&2; die "mvn package failed"; }
rm -f "$OUT/.mvn.log"
cp "clients/java/target/$java_artifact-$VERSION.jar" "$OUT/"
echo "java: $(since "$t")"

# --- the image, as an OCI archive
IMAGE="localhost/memrank:$VERSION"
mode="${MEMRANK_RELEASE_IMAGE:-build}"
case "$mode" in build|reuse|skip) ;; *) die "MEMRANK_RELEASE_IMAGE=$mode: build, reuse or skip" ;; esac
if [ "$mode" = reuse ] && ! command -v buildah >/dev/null; then
  die "MEMRANK_RELEASE_IMAGE=reuse but buildah is not installed"
fi
if [ "$mode" = skip ]; then
  echo "image: skipped (MEMRANK_RELEASE_IMAGE=skip)"
else
  step "image ($mode), OCI archive (buildah push)"
  t=$(now)
  if [ "$mode" = reuse ]; then
    buildah --storage-driver vfs inspect --type image "$IMAGE" >/dev/null 2>&1 \
      || die "MEMRANK_RELEASE_IMAGE=reuse: $IMAGE is not in local storage (bash scripts/ci_image.sh)"
  else
    MEMRANK_IMAGE="$IMAGE" bash scripts/ci_image.sh
  fi
  buildah --storage-driver vfs push --quiet "$IMAGE" "oci-archive:$OUT/memrank-image-$VERSION.oci.tar:$VERSION"
  echo "image: $(since "$t")"
fi

# --- the Go module: a tag, made by whoever publishes (the workflow), not here
cat > "$OUT/go-module.txt" <<EOF
module  $go_module
version v$VERSION
tag     $GO_TAG
commit  $commit
EOF
if git rev-parse -q --verify "refs/tags/$GO_TAG" >/dev/null 2>&1; then
  go_note="tag $GO_TAG already exists"
else
  go_note="not tagged yet: git tag $GO_TAG $commit && git push origin $GO_TAG"
fi

(cd "$OUT" && sha256sum -- * | grep -v ' SHA256SUMS$' > SHA256SUMS)
step "dist/release ($(since "$t_all"))"
(cd "$OUT" && ls -l --time-style=+ -- * | awk '{printf "  %10d  %s\n", $5, $NF}')
echo "  Go module $go_module v$VERSION: $go_note"
echo "  npm: $npm_name@$VERSION; PyPI: $dist_name==$VERSION; image: $IMAGE; chart: memrank $chart_version (appVersion $chart_app)"
