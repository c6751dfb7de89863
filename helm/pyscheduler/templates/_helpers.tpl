{{/* Chart name, overridable. */}}
{{- define "pyscheduler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: the release name alone when it already contains the chart name. */}}
{{- define "pyscheduler.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "pyscheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pyscheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "pyscheduler.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "pyscheduler.selectorLabels" . }}
app.kubernetes.io/component: scheduler
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "pyscheduler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "pyscheduler.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Lease the replicas compete for; lives in the release namespace. */}}
{{- define "pyscheduler.leaseName" -}}
{{- default (include "pyscheduler.fullname" .) .Values.leaderElection.resourceName }}
{{- end }}

{{- define "pyscheduler.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
Profiles as configured, or one default profile. With preemption off, DefaultPreemption is
disabled in each profile, because the RBAC then no longer allows deleting victims.
Values are deep-copied first: `set` would otherwise mutate .Values on every include.
*/}}
{{- define "pyscheduler.profiles" -}}
{{- $profiles := list }}
{{- range .Values.config.profiles }}
{{- $profiles = append $profiles (deepCopy .) }}
{{- end }}
{{- if not $profiles }}
{{- $profiles = list (dict "schedulerName" .Values.schedulerName) }}
{{- end }}
{{- if not .Values.preemption.enabled }}
{{- range $profiles }}
{{- $plugins := .plugins | default dict }}
{{- $postFilter := $plugins.postFilter | default dict }}
{{- $disabled := $postFilter.disabled | default list }}
{{- $names := list }}
{{- range $disabled }}{{ $names = append $names .name }}{{ end }}
{{- if not (or (has "DefaultPreemption" $names) (has "*" $names)) }}
{{- $_ := set $postFilter "disabled" (append $disabled (dict "name" "DefaultPreemption")) }}
{{- end }}
{{- $_ := set $plugins "postFilter" $postFilter }}
{{- $_ := set . "plugins" $plugins }}
{{- end }}
{{- end }}
{{- toYaml $profiles }}
{{- end }}

{{/* The KubeSchedulerConfiguration file; leaderElection always comes from the chart's values. */}}
{{- define "pyscheduler.config" -}}
{{- $le := .Values.leaderElection }}
{{- $cfg := deepCopy .Values.config.extra }}
{{- $_ := set $cfg "apiVersion" "kubescheduler.config.k8s.io/v1" }}
{{- $_ := set $cfg "kind" "KubeSchedulerConfiguration" }}
{{- $_ := set $cfg "leaderElection" (dict
      "leaderElect" $le.enabled
      "resourceLock" "leases"
      "resourceName" (include "pyscheduler.leaseName" .)
      "resourceNamespace" .Release.Namespace
      "leaseDuration" $le.leaseDuration
      "renewDeadline" $le.renewDeadline
      "retryPeriod" $le.retryPeriod) }}
{{- $_ := set $cfg "profiles" (include "pyscheduler.profiles" . | fromYamlArray) }}
{{- toYaml $cfg }}
{{- end }}

{{/* Several active replicas without leader election would race for the same capacity. */}}
{{- define "pyscheduler.validate" -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) }}
{{- fail "replicas > 1 needs leaderElection.enabled=true: active replicas would race to bind the same pods" }}
{{- end }}
{{- end }}
