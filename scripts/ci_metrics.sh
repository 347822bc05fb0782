#!/usr/bin/env bash
# CI steps for metrics, alerting and the dashboard (called from .ci/run):
#   1. Debian's prometheus package (brings /usr/bin/prometheus and promtool) when either is missing;
#      the package's service is not started: tests run their own prometheus on loopback.
#   2. promtool check rules + promtool test rules on the one rules file the Helm chart ships.
#   3. the Grafana dashboard generator, failing when the committed JSON is out of date.
# The live tests (tests/server/test_metrics*.py, test_prometheus*.py) run with the main
# pytest command; with CI set, test_prometheus.py fails instead of skipping if prometheus is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==> %s\n' "$*"; }
RULES=helm/memrank/files/prometheus-rules.yaml

step "prometheus and promtool (Debian package prometheus)"
if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
  policy=/usr/sbin/policy-rc.d
  made_policy=0
  if [ ! -e "$policy" ]; then  # keep the package's postinst from starting a service
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made_policy=1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  if [ "$made_policy" = 1 ]; then rm -f "$policy"; fi
fi
prometheus --version 2>&1 | head -n 1
promtool --version 2>&1 | head -n 1

step "promtool check rules"
promtool check rules "$RULES"

step "promtool test rules"
promtool test rules tests/promtool/*.yaml

step "dashboard JSON is generated from dashboards/generate.py"
if ! python3 -c 'import grafana_foundation_sdk' 2>/dev/null; then
  python3 -m pip install --quiet -e '.[dashboards]'
fi
python3 dashboards/generate.py --check
