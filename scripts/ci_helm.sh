#!/usr/bin/env bash
# Tools the chart tests (tests/helm) need, installed when missing; the tests
# themselves run with the main test command (python -m pytest).
#   helm      go install from the Go module proxy (cached in GOPATH between runs)
#   python    kubernetes-validate (Kubernetes JSON schemas) and the Prometheus
#             Operator models, through the `helm` extra
#   promtool  Debian's prometheus package
# Source it or put "$(go env GOPATH)/bin" on PATH afterwards; the tests also
# look for helm there.
set -euo pipefail
cd "$(dirname "$0")/.."
HELM_VERSION="${HELM_VERSION:-v3.22.0}"

export PATH="$(go env GOPATH)/bin:$PATH"
if ! command -v helm >/dev/null || ! helm version --template '{{.Version}}' | grep -q "^${HELM_VERSION%.*}"; then
  echo "installing helm ${HELM_VERSION} with go install"
  start=$(date +%s)
  go install "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}"
  echo "helm installed in $(( $(date +%s) - start )) s"
fi
helm version --short

python3 -m pip install --quiet -e '.[helm]'
python3 scripts/gen_chart_schema.py --check  # values.schema.json's config: is the server's settings model

if ! command -v promtool >/dev/null; then
  echo "installing promtool (Debian package prometheus)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
promtool --version | head -n 1
