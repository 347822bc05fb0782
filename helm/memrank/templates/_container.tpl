{{/*
The memrank container, shared by the standalone Deployment and the sidecar:
(dict "root" <memrank root context> "name" "memrank" "native" "true"|"").
Port names carry a "memrank-" prefix because a sidecar shares the pod's port
namespace with the host's own containers.
*/}}
{{- define "memrank.container" -}}
{{- $v := .root.Values -}}
- name: {{ .name }}
  image: {{ include "memrank.image" .root | quote }}
  imagePullPolicy: {{ $v.image.pullPolicy }}
  # The image's entrypoint, spelt out: env blocks SIGHUP, SIGTERM and SIGINT before the interpreter starts and
  # memrank lifts the block once its handlers are in, so a signal during its start waits for them (a SIGHUP
  # from a ConfigMap reloader reloads, a SIGTERM from a deleted pod drains) instead of being dropped.
  command: ["env", "--block-signal=HUP,TERM,INT", "memrank", "serve"]
  {{- if .native }}
  # A native sidecar (Kubernetes >= 1.29): starts before the app containers, stops after them.
  restartPolicy: Always
  {{- end }}
  ports:
    - name: memrank-grpc
      containerPort: {{ $v.server.grpcPort }}
      protocol: TCP
    - name: memrank-metrics
      containerPort: {{ $v.server.metricsPort }}
      protocol: TCP
    {{- if $v.tls.enabled }}
    - name: memrank-health
      containerPort: {{ $v.server.healthPort }}
      protocol: TCP
    {{- end }}
  env:
    - name: MEMRANK_CONFIG
      value: /etc/memrank/config/memrank.yaml
    - name: MEMRANK_ADDRESS
      value: {{ printf "%s:%v" $v.server.listenHost $v.server.grpcPort | quote }}
    - name: MEMRANK_METRICS_PORT
      value: {{ $v.server.metricsPort | quote }}
    - name: MEMRANK_WORKERS
      value: {{ $v.server.workers | quote }}
    - name: MEMRANK_LOG_LEVEL
      value: {{ $v.server.logLevel | quote }}
    - name: MEMRANK_GRACE_PERIOD_SECONDS
      value: {{ $v.server.gracePeriodSeconds | quote }}
    # Scratch space (multiprocess metrics files) on the writable /tmp emptyDir.
    - name: TMPDIR
      value: /tmp
    {{- with $v.secrets.provenanceKey }}
    {{- if .secretName }}
    - name: MEMRANK_PROVENANCE_KEY_FILE
      value: {{ printf "/etc/memrank/keys/provenance/%s" .key | quote }}
    {{- end }}
    {{- end }}
    {{- with $v.secrets.receiptKey }}
    {{- if .secretName }}
    - name: MEMRANK_RECEIPT_KEY_FILE
      value: {{ printf "/etc/memrank/keys/receipt/%s" .key | quote }}
    {{- end }}
    {{- end }}
    {{- with $v.secrets.decisionLogKey }}
    {{- if .secretName }}
    - name: MEMRANK_DECISION_LOG_HASH_KEY_FILE
      value: {{ printf "/etc/memrank/keys/decision-log/%s" .key | quote }}
    {{- end }}
    {{- end }}
    {{- if $v.tls.enabled }}
    # TLS on the gRPC port; probes go to the plaintext health-only listener.
    - name: MEMRANK_HEALTH_ADDRESS
      value: {{ printf "%s:%v" $v.server.listenHost $v.server.healthPort | quote }}
    - name: MEMRANK_TLS_CERT_FILE
      value: {{ printf "%s/%s" $v.tls.mountPath $v.tls.certKey | quote }}
    - name: MEMRANK_TLS_KEY_FILE
      value: {{ printf "%s/%s" $v.tls.mountPath $v.tls.keyKey | quote }}
    {{- if $v.tls.caKey }}
    - name: MEMRANK_TLS_CA_FILE
      value: {{ printf "%s/%s" $v.tls.mountPath $v.tls.caKey | quote }}
    {{- end }}
    {{- end }}
    {{- if $v.auth.enabled }}
    - name: MEMRANK_AUTH_TOKEN_FILE
      value: {{ printf "%s/%s" $v.auth.mountPath $v.auth.key | quote }}
    {{- end }}
    {{- if $v.tracing.enabled }}
    - name: MEMRANK_TRACING_ENABLED
      value: "true"
    {{- with $v.tracing.endpoint }}
    - name: MEMRANK_TRACING_ENDPOINT
      value: {{ . | quote }}
    {{- end }}
    {{- if not (kindIs "invalid" $v.tracing.samplerRatio) }}
    - name: MEMRANK_TRACING_SAMPLER_RATIO
      value: {{ $v.tracing.samplerRatio | quote }}
    {{- end }}
    {{- end }}
    {{- with $v.decisionLogS3 }}
    {{- if .enabled }}
    # The decision log to S3 (memrank.decisions.s3sink); AWS_* credentials from a Secret, else the chain.
    - name: MEMRANK_DECISION_LOG_ENABLED
      value: "true"
    - name: MEMRANK_DECISION_LOG_SINK
      value: s3
    - name: MEMRANK_DECISION_LOG_S3_URL
      value: {{ required "decisionLogS3.url is required when decisionLogS3.enabled (s3://bucket/prefix/)" .url | quote }}
    {{- with .endpoint }}
    - name: MEMRANK_DECISION_LOG_S3_ENDPOINT
      value: {{ . | quote }}
    {{- end }}
    {{- with .region }}
    - name: MEMRANK_DECISION_LOG_S3_REGION
      value: {{ . | quote }}
    {{- end }}
    {{- if .credentials.secretName }}
    - name: AWS_ACCESS_KEY_ID
      valueFrom:
        secretKeyRef:
          name: {{ .credentials.secretName | quote }}
          key: {{ .credentials.accessKeyIdKey | quote }}
    - name: AWS_SECRET_ACCESS_KEY
      valueFrom:
        secretKeyRef:
          name: {{ .credentials.secretName | quote }}
          key: {{ .credentials.secretAccessKeyKey | quote }}
    {{- end }}
    {{- end }}
    {{- end }}
    {{- with $v.extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  volumeMounts:
    - name: memrank-tmp
      mountPath: /tmp
    - name: memrank-config
      mountPath: /etc/memrank/config
      readOnly: true
    {{- if $v.secrets.provenanceKey.secretName }}
    - name: memrank-provenance-key
      mountPath: /etc/memrank/keys/provenance
      readOnly: true
    {{- end }}
    {{- if $v.secrets.receiptKey.secretName }}
    - name: memrank-receipt-key
      mountPath: /etc/memrank/keys/receipt
      readOnly: true
    {{- end }}
    {{- if $v.secrets.decisionLogKey.secretName }}
    - name: memrank-decision-log-key
      mountPath: /etc/memrank/keys/decision-log
      readOnly: true
    {{- end }}
    {{- if $v.tls.enabled }}
    - name: memrank-tls
      mountPath: {{ $v.tls.mountPath }}
      readOnly: true
    {{- end }}
    {{- if $v.auth.enabled }}
    - name: memrank-auth
      mountPath: {{ $v.auth.mountPath }}
      readOnly: true
    {{- end }}
    {{- with $v.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with include "memrank.probeFallbackComment" .root }}
  {{- . | nindent 2 }}
  {{- end }}
  {{- if $v.probes.startup.enabled }}
  startupProbe:
    {{- include "memrank.grpcProbe" (dict "root" .root "probe" $v.probes.startup) | nindent 4 }}
  {{- end }}
  {{- if $v.probes.readiness.enabled }}
  readinessProbe:
    {{- include "memrank.grpcProbe" (dict "root" .root "probe" $v.probes.readiness) | nindent 4 }}
  {{- end }}
  {{- if $v.probes.liveness.enabled }}
  livenessProbe:
    {{- include "memrank.grpcProbe" (dict "root" .root "probe" $v.probes.liveness) | nindent 4 }}
  {{- end }}
  {{- if gt (int $v.preStopSleepSeconds) 0 }}
  lifecycle:
    preStop:
      exec:
        command: ["sleep", {{ $v.preStopSleepSeconds | quote }}]
  {{- end }}
  {{- with $v.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml $v.securityContext | nindent 4 }}
{{- end }}

{{/* The pod volumes the memrank container mounts (list items). */}}
{{- define "memrank.volumes" -}}
- name: memrank-tmp
  emptyDir:
    {{- with .Values.tmp.medium }}
    medium: {{ . }}
    {{- end }}
    sizeLimit: {{ .Values.tmp.sizeLimit }}
- name: memrank-config
  configMap:
    name: {{ include "memrank.fullname" . }}
{{- with .Values.secrets.provenanceKey }}
{{- if .secretName }}
- name: memrank-provenance-key
  secret:
    secretName: {{ .secretName }}
    defaultMode: {{ $.Values.secrets.defaultMode }}
    items:
      - key: {{ .key }}
        path: {{ .key }}
{{- end }}
{{- end }}
{{- with .Values.secrets.receiptKey }}
{{- if .secretName }}
- name: memrank-receipt-key
  secret:
    secretName: {{ .secretName }}
    defaultMode: {{ $.Values.secrets.defaultMode }}
    items:
      - key: {{ .key }}
        path: {{ .key }}
{{- end }}
{{- end }}
{{- with .Values.secrets.decisionLogKey }}
{{- if .secretName }}
- name: memrank-decision-log-key
  secret:
    secretName: {{ .secretName }}
    defaultMode: {{ $.Values.secrets.defaultMode }}
    items:
      - key: {{ .key }}
        path: {{ .key }}
{{- end }}
{{- end }}
{{- if .Values.tls.enabled }}
- name: memrank-tls
  secret:
    secretName: {{ required "tls.secretName is required when tls.enabled" .Values.tls.secretName }}
    defaultMode: {{ .Values.secrets.defaultMode }}
    items:
      {{- range $key := compact (list .Values.tls.certKey .Values.tls.keyKey .Values.tls.caKey) }}
      - key: {{ $key }}
        path: {{ $key }}
      {{- end }}
{{- end }}
{{- if .Values.auth.enabled }}
- name: memrank-auth
  secret:
    secretName: {{ required "auth.secretName is required when auth.enabled" .Values.auth.secretName }}
    defaultMode: {{ .Values.secrets.defaultMode }}
    items:
      - key: {{ .Values.auth.key }}
        path: {{ .Values.auth.key }}
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}
