{{/*
Names, labels and the pieces both Deployments share. Kept here so the tracking and gateway
templates cannot drift apart on security settings, config mounting or secret wiring.
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

{{/* Pod-level settings shared by both Deployments. */}}
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
