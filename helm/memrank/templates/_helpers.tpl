{{/*
Every helper takes the memrank chart's own root context: `$` inside this chart,
`.Subcharts.memrank` (or `.Subcharts.<alias>`) from a parent chart. That way a
host chart that lists memrank as a dependency gets the same names, values and
image as the memrank chart's own templates.
*/}}

{{/* Chart name, "memrank" unless nameOverride. */}}
{{- define "memrank.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* "<release>-memrank" (or fullnameOverride), at most 63 characters. */}}
{{- define "memrank.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "memrank.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* A name derived from the full name: (dict "root" $ "suffix" "headless"); stays within 63 characters. */}}
{{- define "memrank.suffixedName" -}}
{{- $base := include "memrank.fullname" .root | trunc (int (sub 62 (len .suffix))) | trimSuffix "-" }}
{{- printf "%s-%s" $base .suffix }}
{{- end }}

{{- define "memrank.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels the Deployment selects on (immutable once installed). */}}
{{- define "memrank.selectorLabels" -}}
app.kubernetes.io/name: {{ include "memrank.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of every resource the chart renders. */}}
{{- define "memrank.labels" -}}
helm.sh/chart: {{ include "memrank.chart" . }}
{{ include "memrank.selectorLabels" . }}
app.kubernetes.io/version: {{ default .Chart.AppVersion .Values.image.tag | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: memrank
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "memrank.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "memrank.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* repository:tag or repository@digest; the tag defaults to the chart's appVersion. */}}
{{- define "memrank.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* "true" when the cluster has the Prometheus Operator's monitoring.coreos.com/v1 API. */}}
{{- define "memrank.hasMonitoringAPI" -}}
{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" }}true{{ end }}
{{- end }}

{{/*
Why a monitoring object that is enabled was not rendered, naming its CRD and how to get it: NOTES.txt
prints it after helm install/upgrade, and the object's template leaves it as a comment in the manifest
(what helm template shows). dict "key" (serviceMonitor ...) "kind" (ServiceMonitor ...).
*/}}
{{- define "memrank.monitoringMissing" -}}
{{ .key }}.enabled is true, but the cluster does not serve monitoring.coreos.com/v1 (no {{ lower .kind }}s.monitoring.coreos.com
CRD: the Prometheus Operator's CRDs are not installed), so no {{ .kind }} was rendered. Install the CRDs, e.g.
  helm repo add prometheus-community https://prometheus-community.github.io/helm-charts
  helm install prometheus-operator-crds prometheus-community/prometheus-operator-crds
(kube-prometheus-stack brings them too), then upgrade this release; with helm template, pass
--api-versions monitoring.coreos.com/v1; or set {{ .key }}.force=true to render it anyway.
{{- end }}

{{/* The monitoringMissing text as a YAML comment, when the object is enabled but neither forced nor served. */}}
{{- define "memrank.monitoringMissingComment" -}}
{{- $v := index .root.Values .key }}
{{- if and $v.enabled (not $v.force) (not (include "memrank.hasMonitoringAPI" .root)) }}
# WARNING: {{ include "memrank.monitoringMissing" . | replace "\n" "\n# " }}
{{- end }}
{{- end }}

{{/*
terminationGracePeriodSeconds: the server's grace period, plus the preStop sleep,
plus the 5 s the multi-worker supervisor adds, must fit inside it. Empty value:
that sum + 10. A value that does not exceed the sum fails the render.
*/}}
{{- define "memrank.terminationGracePeriodSeconds" -}}
{{- $need := addf .Values.server.gracePeriodSeconds .Values.preStopSleepSeconds 5 | ceil | int }}
{{- if kindIs "invalid" .Values.terminationGracePeriodSeconds }}
{{- add $need 10 }}
{{- else if le (int .Values.terminationGracePeriodSeconds) $need }}
{{- fail (printf "terminationGracePeriodSeconds: %v must be above server.gracePeriodSeconds + preStopSleepSeconds + 5 = %d" .Values.terminationGracePeriodSeconds $need) }}
{{- else }}
{{- int .Values.terminationGracePeriodSeconds }}
{{- end }}
{{- end }}

{{/* Checksum of the config file without its profiles, layers and shadow, as a pod annotation: a change of
any other key rolls the pods; profiles, layers and the shadow profile reach the running pods without a
rollout (the kubelet updates the mounted ConfigMap and memrank reloads them, server.config_poll_seconds). */}}
{{- define "memrank.configChecksum" -}}
{{- toYaml (omit .Values.config "profiles" "layers" "shadow") | sha256sum }}
{{- end }}

{{/* "true" when the cluster has Kubernetes' grpc probes (beta, on by default, from 1.24; GA 1.27). */}}
{{- define "memrank.hasGrpcProbes" -}}
{{- if semverCompare ">=1.24.0-0" .Capabilities.KubeVersion.Version }}true{{ end }}
{{- end }}

{{/*
Why the probes are tcpSocket probes, as a YAML comment (empty on Kubernetes >= 1.24). Below 1.24 a
tcpSocket probe on the same port stands in: it sees the listener, not the health status.
*/}}
{{- define "memrank.probeFallbackComment" -}}
{{- if not (include "memrank.hasGrpcProbes" .) -}}
# Kubernetes {{ .Capabilities.KubeVersion.Version }} < 1.24 has no grpc probes: tcpSocket probes instead. With
# helm template / helm lint, this is helm's default version: pass --kube-version <your cluster's>.
{{- end }}
{{- end }}

{{/* One probe body: (dict "root" $ "probe" .Values.probes.readiness); grpc from 1.24, tcpSocket below. */}}
{{- define "memrank.grpcProbe" -}}
{{- $port := .root.Values.server.grpcPort }}
{{- if .root.Values.tls.enabled }}
{{- $port = .root.Values.server.healthPort }}
{{- end }}
{{- if include "memrank.hasGrpcProbes" .root -}}
grpc:
  port: {{ $port }}
  {{- with .root.Values.probes.service }}
  service: {{ . | quote }}
  {{- end }}
{{- else -}}
tcpSocket:
  port: {{ $port }}
{{- end }}
periodSeconds: {{ .probe.periodSeconds }}
timeoutSeconds: {{ .probe.timeoutSeconds }}
failureThreshold: {{ .probe.failureThreshold }}
{{- with .probe.successThreshold }}
successThreshold: {{ . }}
{{- end }}
{{- end }}

{{/* The promotion job's image: promotion.image's repository (and tag or digest) when set, else the chart's. */}}
{{- define "memrank.promotionImage" -}}
{{- $i := .Values.promotion.image }}
{{- if not $i.repository }}
{{- include "memrank.image" . }}
{{- else if $i.digest }}
{{- printf "%s@%s" $i.repository $i.digest }}
{{- else }}
{{- printf "%s:%s" $i.repository (default .Chart.AppVersion $i.tag) }}
{{- end }}
{{- end }}
