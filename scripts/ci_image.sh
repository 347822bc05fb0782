#!/usr/bin/env bash
# The container image, built as CI builds it; tests/ops/test_image.py then runs it.
#   tools   Debian's buildah (build), podman + runc (the test's runtime) and
#           mmdebstrap, installed with apt-get when missing (needs root)
#   base    registry images cannot be pulled in CI, so the Dockerfile's BASE_IMAGE
#           is a stand-in made from Debian packages: mmdebstrap --variant=minbase
#           bookworm with python3, python3-venv and ca-certificates, given the
#           host's CA bundle, committed as localhost/memrank-base:bookworm. Kept in
#           local storage and reused while its recipe is unchanged
#           (MEMRANK_REBUILD_BASE=1 remakes it).
#   image   buildah bud, root, --storage-driver vfs, --isolation chroot:
#           localhost/memrank:<memrank.__version__>, the chart's default image.
#           The host's pip settings (index, proxy, certificate, timeout) are
#           mounted at /etc/pip.conf for the build's RUN steps only, so pip in
#           the build reaches PyPI as pip on the host does and no setting (an
#           index URL may hold a token) stays in the image.
# Every buildah/podman call uses vfs storage (no overlay or fuse needed).
set -euo pipefail
cd "$(dirname "$0")/.."

BASE="${MEMRANK_BASE_IMAGE:-localhost/memrank-base:bookworm}"
VERSION="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' server/memrank/__init__.py)"
IMAGE="${MEMRANK_IMAGE:-localhost/memrank:${VERSION}}"
SUITE=bookworm
PACKAGES=python3,python3-venv,ca-certificates
MMDEBSTRAP_OPTS=(--variant=minbase --include="$PACKAGES"
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*')
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
[ -n "$VERSION" ] || { echo "no __version__ in server/memrank/__init__.py" >&2; exit 1; }

bah() { buildah --storage-driver vfs "$@"; }
now() { date +%s%N; }
since() { local ds=$(( ($(now) - $1) / 100000000 )); echo "$(( ds / 10 )).$(( ds % 10 ))"; }
t_all=$(now)

# --- tools
missing=()
for tool in buildah:buildah podman:podman runc:runc mmdebstrap:mmdebstrap; do
  command -v "${tool%%:*}" >/dev/null || missing+=("${tool#*:}")
done
if [ "${#missing[@]}" -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || { echo "need root to apt-get install ${missing[*]}" >&2; exit 1; }
  echo "installing ${missing[*]} (Debian packages)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
[ "$(id -u)" -eq 0 ] || { echo "buildah with --isolation chroot and vfs storage runs as root here" >&2; exit 1; }
buildah --version
podman --version

# --- the host's pip settings that decide how PyPI is reached (not find-links:
# host paths), as a pip.conf for the build; a certificate file is mounted too.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
pip_conf="$work/pip.conf"
python3 - "$pip_conf" <<'EOF'
import ast, subprocess, sys
keep = {"index-url", "extra-index-url", "trusted-host", "cert", "client-cert", "proxy", "timeout",
        "default-timeout", "retries"}
out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
settings = {}
for line in out.splitlines():
    key, _, value = line.partition("=")
    name = key.rpartition(".")[2]
    if name in keep and value:
        settings[name] = ast.literal_eval(value)   # env (:env:) wins: it is listed after the files
with open(sys.argv[1], "w") as f:
    f.write("[global]\n" + "".join(f"{k} = {v}\n" for k, v in sorted(settings.items())))
EOF
chmod 644 "$pip_conf"
pip_mounts=(--volume "$pip_conf:/etc/pip.conf:ro")
pip_cert="$(sed -n 's/^cert = //p' "$pip_conf")"
if [ -n "$pip_cert" ] && [ "$pip_cert" != "$CA_BUNDLE" ]; then pip_mounts+=(--volume "$pip_cert:$pip_cert:ro"); fi
echo "pip settings for the build: $(tr '\n' ' ' < "$pip_conf")"

# --- the stand-in base, remade only when its recipe (suite, mmdebstrap options, CA bundle) changes
BASE_STEPS="ca-bundle empty-pip.conf"   # what is done after mmdebstrap, below: name each step here
recipe="$( { echo "$SUITE ${MMDEBSTRAP_OPTS[*]} $BASE_STEPS"; sha256sum < "$CA_BUNDLE"; } | sha256sum | cut -c1-16)"
have="$(bah inspect --type image --format '{{index .OCIv1.Config.Labels "org.memrank.base-recipe"}}' "$BASE" 2>/dev/null || true)"
if [ "$have" = "$recipe" ] && [ "${MEMRANK_REBUILD_BASE:-0}" != 1 ]; then
  echo "base $BASE (recipe $recipe) already in local storage: reused"
else
  echo "making base $BASE (recipe $recipe) with mmdebstrap"
  t=$(now)
  mmdebstrap --quiet "${MMDEBSTRAP_OPTS[@]}" "$SUITE" "$work/rootfs.tar"
  echo "mmdebstrap: $(since "$t") s"
  t=$(now)
  ctr="$(bah from scratch)"
  bah add --quiet "$ctr" "$work/rootfs.tar" /
  rm "$work/rootfs.tar"
  bah copy --quiet "$ctr" "$CA_BUNDLE" "$CA_BUNDLE"
  # An empty /etc/pip.conf: the build mounts the host's settings over it, and the image
  # keeps this empty file instead of a mount point buildah would create.
  : > "$work/empty"; chmod 644 "$work/empty"
  bah copy --quiet "$ctr" "$work/empty" /etc/pip.conf
  bah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env LANG=C.UTF-8 \
    --cmd /bin/sh --label org.memrank.base-recipe="$recipe" \
    --label org.opencontainers.image.description="memrank CI stand-in base: Debian $SUITE minbase + $PACKAGES" "$ctr"
  old_base="$(bah images --quiet --no-trunc "$BASE" 2>/dev/null || true)"
  bah commit --quiet --rm "$ctr" "$BASE" >/dev/null
  echo "base imported: $(since "$t") s"
fi

# --- the image, from the repository's Dockerfile on that base
t=$(now)
old="$(bah images --quiet --no-trunc "$IMAGE" 2>/dev/null || true)"
bah bud --isolation chroot --pull=never "${pip_mounts[@]}" --build-arg BASE_IMAGE="$BASE" -t "$IMAGE" .
new="$(bah images --quiet --no-trunc "$IMAGE")"
# The previous build and base, now untagged (the base could not go while that build used it).
if [ -n "$old" ] && [ "$old" != "$new" ]; then bah rmi "$old" >/dev/null 2>&1 || true; fi
if [ -n "${old_base:-}" ]; then bah rmi "$old_base" >/dev/null 2>&1 || true; fi
echo "image build: $(since "$t") s"
bah images | grep -E "^REPOSITORY|^${BASE%:*} |^${IMAGE%:*} "
echo "ci_image.sh: $(since "$t_all") s"
