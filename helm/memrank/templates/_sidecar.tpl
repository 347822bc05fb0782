{{/*
Sidecar mode: named templates a host chart includes into its own pod spec.
Call them with the memrank subchart's context, `.Subcharts.memrank`:

  {{- $memrank := .Subcharts.memrank }}
  template:
    metadata:
      labels:
        {{- include "memrank.sidecar.podLabels" $memrank | nindent 8 }}
      annotations:
        {{- include "memrank.sidecar.podAnnotations" $memrank | nindent 8 }}
    spec:
      terminationGracePeriodSeconds: {{ include "memrank.terminationGracePeriodSeconds" $memrank }}
      initContainers:
        {{- include "memrank.sidecar.initContainers" $memrank | nindent 8 }}
      containers:
        - name: agent
          ...
        {{- include "memrank.sidecar.containers" $memrank | nindent 8 }}
      volumes:
        {{- include "memrank.sidecar.volumes" $memrank | nindent 8 }}

Exactly one of initContainers / containers receives the sidecar, so each of them
may render empty; keep at least one other entry in `containers` (the agent).
When the host pod has no other init containers, guard the key:
  {{- if include "memrank.sidecar.native" $memrank }} initContainers: ... {{- end }}
*/}}

{{/* "true" when the sidecar runs as a native sidecar (sidecar.native, or auto: Kubernetes >= 1.29). */}}
{{- define "memrank.sidecar.native" -}}
{{- $native := toString .Values.sidecar.native }}
{{- if eq $native "true" }}true
{{- else if and (eq $native "auto") (semverCompare ">=1.29.0-0" .Capabilities.KubeVersion.Version) }}true
{{- end }}
{{- end }}

{{/* The sidecar container (one list item); with restartPolicy: Always when native. */}}
{{- define "memrank.sidecar" -}}
{{- include "memrank.container" (dict "root" . "name" .Values.sidecar.containerName "native" (include "memrank.sidecar.native" .)) }}
{{- end }}

{{/* The sidecar as an init-container list item when native, else nothing. */}}
{{- define "memrank.sidecar.initContainers" -}}
{{- if include "memrank.sidecar.native" . }}
{{- include "memrank.sidecar" . }}
{{- end }}
{{- end }}

{{/* The sidecar as a container list item when not native, else nothing. */}}
{{- define "memrank.sidecar.containers" -}}
{{- if not (include "memrank.sidecar.native" .) }}
{{- include "memrank.sidecar" . }}
{{- end }}
{{- end }}

{{/* Volumes the sidecar mounts (list items for the host pod's volumes). */}}
{{- define "memrank.sidecar.volumes" -}}
{{- include "memrank.volumes" . }}
{{- end }}

{{/* Labels a host pod carries so the PodMonitor finds it. */}}
{{- define "memrank.sidecar.podLabels" -}}
memrank-sidecar: {{ include "memrank.fullname" . }}
{{- with .Values.sidecar.podLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Annotations a host pod carries: a config change rolls it. */}}
{{- define "memrank.sidecar.podAnnotations" -}}
checksum/memrank-config: {{ include "memrank.configChecksum" . }}
{{- end }}
