{{/*
Names, labels and the pieces every Deployment shares. Kept here so the components' templates
cannot drift apart on security settings, config mounting, secret wiring or telemetry.
*/}}

{{/* Chart name, overridable; 63 characters is the DNS label limit Kubernetes enforces. */}}
{{- define "meshwork.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name: the release name, with the chart name appended unless the release name contains it.
Component objects append -tracking / -gateway, so keep this to 52 characters.
*/}}
{{- define "meshwork.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "meshwork.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "meshwork.labels" -}}
helm.sh/chart: {{ include "meshwork.chart" . }}
{{ include "meshwork.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: meshwork
{{- end }}

{{- define "meshwork.selectorLabels" -}}
app.kubernetes.io/name: {{ include "meshwork.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "meshwork.trackingName" -}}
{{- printf "%s-tracking" (include "meshwork.fullname" .) }}
{{- end }}

{{- define "meshwork.gatewayName" -}}
{{- printf "%s-gateway" (include "meshwork.fullname" .) }}
{{- end }}

{{- define "meshwork.protectionName" -}}
{{- printf "%s-protection" (include "meshwork.fullname" .) }}
{{- end }}

{{- define "meshwork.daemonName" -}}
{{- printf "%s-daemon" (include "meshwork.fullname" .) }}
{{- end }}

{{- define "meshwork.interfaceName" -}}
{{- printf "%s-interface" (include "meshwork.fullname" .) }}
{{- end }}

{{- define "meshwork.workersName" -}}
{{- printf "%s-workers" (include "meshwork.fullname" .) }}
{{- end }}

{{/* The ConfigMap and Secret of config.data / config.secretData (envFrom). */}}
{{- define "meshwork.envName" -}}
{{- printf "%s-env" (include "meshwork.fullname" .) }}
{{- end }}

{{- define "meshwork.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "meshwork.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "meshwork.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/*
A component's image: its own image.repository / image.tag where set, else the release's
(image.repository, image.tag, then the chart's appVersion). Called with (list $ .Values.<c>.image).
*/}}
{{- define "meshwork.componentImage" -}}
{{- $root := index . 0 }}
{{- $own := index . 1 }}
{{- $repository := $own.repository | default $root.Values.image.repository }}
{{- $tag := $own.tag | default $root.Values.image.tag | default $root.Chart.AppVersion }}
{{- printf "%s:%s" $repository $tag }}
{{- end }}

{{/* Pod annotations: the release-wide podAnnotations, then the component's. (list $ own) */}}
{{- define "meshwork.podAnnotations" -}}
{{- $root := index . 0 }}
{{- with $root.Values.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- with index . 1 }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
OpenTelemetry through the standard variables, which the runtime's Telemetry:* and the agent
gateway's Gateway:Telemetry:Endpoint both honour over their settings. The exporters are named too: an
endpoint alone does not switch the runtime's exporter to OTLP. (list $ "<component>")
*/}}
{{- define "meshwork.telemetryEnv" -}}
{{- $root := index . 0 }}
{{- $t := $root.Values.telemetry }}
{{- if $t.enabled -}}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ required "telemetry.otlpEndpoint is required when telemetry.enabled is true" $t.otlpEndpoint | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ $t.otlpProtocol | quote }}
- name: OTEL_TRACES_EXPORTER
  value: otlp
- name: OTEL_METRICS_EXPORTER
  value: otlp
- name: OTEL_SERVICE_NAME
  value: {{ printf "%s-%s" $t.serviceName (index . 1) | quote }}
{{- else -}}
- name: OTEL_SDK_DISABLED
  value: "true"
{{- end }}
{{- end }}

{{/*
config.data and config.secretData as environment, for the pods that run agents (gateway,
daemon, workers, job). Tracking and protection do not get them: provider keys and bot tokens
have no business there.
*/}}
{{- define "meshwork.envFrom" -}}
{{- if .Values.config.data }}
- configMapRef:
    name: {{ include "meshwork.envName" . }}
{{- end }}
{{- if .Values.config.secretData }}
- secretRef:
    name: {{ include "meshwork.envName" . }}
{{- end }}
{{- end }}

{{/* The Secret holding NATS_URL: an existing one, or the chart's own made from nats.url. */}}
{{- define "meshwork.natsSecretName" -}}
{{- if .Values.nats.existingSecret }}
{{- .Values.nats.existingSecret }}
{{- else }}
{{- printf "%s-nats" (include "meshwork.fullname" .) }}
{{- end }}
{{- end }}

{{/*
Fails the render early, with the value to set, instead of starting pods that would each fall
back to an embedded database or an in-process bus (the defaults outside Kubernetes) and so
silently split state between replicas.
*/}}
{{- define "meshwork.validate" -}}
{{- if not .Values.database.existingSecret }}
{{- fail "database.existingSecret is required: the name of a Secret holding the PostgreSQL URL (key database.existingSecretKey, default DATABASE_URL)." }}
{{- end }}
{{- if not (or .Values.nats.url .Values.nats.existingSecret) }}
{{- fail "nats.url or nats.existingSecret is required: Meshwork needs NATS JetStream when it runs as more than one process." }}
{{- end }}
{{- if .Values.job.enabled }}
{{- if not .Values.job.agent }}
{{- fail "job.agent is required when job.enabled is true: the name of the agent the workflow runs with." }}
{{- end }}
{{- if not .Values.job.workflow }}
{{- fail "job.workflow is required when job.enabled is true: the workflow as JSON text ({ name, steps: [{ prompt, expect }] })." }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Environment every Meshwork container gets. Names are the environment forms from
services/runtime/config/settings.ts (Section__Key; DATABASE_URL and NATS_URL are aliases).
*/}}
{{- define "meshwork.commonEnv" -}}
- name: MESHWORK_ENVIRONMENT
  value: {{ .Values.environment | quote }}
# Data:Dir must be writable; the root filesystem is read-only, so it is an emptyDir.
- name: Data__Dir
  value: /var/lib/meshwork
{{- end }}

{{/* DATABASE_URL and NATS_URL from Secrets; only processes that host services need them. */}}
{{- define "meshwork.backendEnv" -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.database.existingSecret }}
      key: {{ .Values.database.existingSecretKey }}
- name: NATS_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "meshwork.natsSecretName" . }}
      key: {{ .Values.nats.existingSecretKey }}
{{- end }}

{{/*
Volumes: appsettings.json from the ConfigMap, plus writable scratch space. tsx keeps its
transform cache in the OS temp directory (/tmp/tsx-<uid>), hence the /tmp emptyDir.
*/}}
{{- define "meshwork.volumes" -}}
- name: config
  configMap:
    name: {{ include "meshwork.fullname" . }}
- name: tmp
  emptyDir: {}
- name: data
  emptyDir: {}
{{- end }}

{{/*
subPath mounts a single file into the working directory without hiding the application that
lives there. A subPath mount does not see ConfigMap updates; the checksum/config annotation
rolls the pods instead.
*/}}
{{- define "meshwork.volumeMounts" -}}
- name: config
  mountPath: {{ printf "%s/appsettings.json" .Values.image.workingDir }}
  subPath: appsettings.json
  readOnly: true
- name: tmp
  mountPath: /tmp
- name: data
  mountPath: /var/lib/meshwork
{{- end }}

{{/* Pod-level settings shared by every workload. */}}
{{- define "meshwork.podSpecCommon" -}}
serviceAccountName: {{ include "meshwork.serviceAccountName" . }}
automountServiceAccountToken: {{ .Values.serviceAccount.automountServiceAccountToken }}
# Service links add <SVC>_PORT style variables; Meshwork reads none of them, and the config
# loader scans the environment, so keep it to what the chart sets.
enableServiceLinks: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- end }}

{{/*
The worker pool's settings, given to the workers and (to queue turns) the daemon. Workers:* is
issue 16's `meshwork worker`; check.mjs lists these names as coming until the settings exist.
*/}}
{{- define "meshwork.workersEnv" -}}
- name: Workers__Transport
  value: {{ .Values.workers.transport | quote }}
- name: Workers__StreamKey
  value: {{ .Values.workers.streamKey | quote }}
- name: Workers__ConsumerGroup
  value: {{ .Values.workers.consumerGroup | quote }}
{{- end }}
