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

{{- define "pyscheduler.commonLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "pyscheduler.labels" -}}
{{ include "pyscheduler.commonLabels" . }}
{{ include "pyscheduler.selectorLabels" . }}
app.kubernetes.io/component: scheduler
{{- end }}

{{/*
The `helm test` pod's labels: its own name, so that no selector of the release (Deployment,
Service, PodDisruptionBudget, anti-affinity) counts it as a scheduler replica.
*/}}
{{- define "pyscheduler.testLabels" -}}
{{ include "pyscheduler.commonLabels" . }}
app.kubernetes.io/name: {{ printf "%s-test" (include "pyscheduler.name" .) | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: test
{{- end }}

{{/*
The PodGroup controller's labels: a name of its own, so that no selector of the scheduler
(Deployment, Service, PodDisruptionBudget, anti-affinity) counts its pod as a replica.
*/}}
{{- define "pyscheduler.podgroupControllerSelectorLabels" -}}
app.kubernetes.io/name: {{ printf "%s-podgroup-controller" (include "pyscheduler.name" .) | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "pyscheduler.podgroupControllerLabels" -}}
{{ include "pyscheduler.commonLabels" . }}
{{ include "pyscheduler.podgroupControllerSelectorLabels" . }}
app.kubernetes.io/component: podgroup-controller
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

{{/* The serving port's name: https-metrics, or http-metrics with serving.plainHTTP. */}}
{{- define "pyscheduler.portName" -}}
{{- if .Values.serving.plainHTTP }}http-metrics{{ else }}https-metrics{{ end }}
{{- end }}

{{/* Where the serving certificate and the client CA are mounted (outside the config volume). */}}
{{- define "pyscheduler.servingCertDir" -}}/var/run/pyscheduler/serving-cert{{- end }}
{{- define "pyscheduler.clientCADir" -}}/var/run/pyscheduler/client-ca{{- end }}

{{/* The scheduler's command-line arguments, from the values. */}}
{{- define "pyscheduler.args" -}}
- --config=/etc/pyscheduler/config.yaml
- --bind-address=0.0.0.0
- --port={{ .Values.port }}
- -v={{ .Values.verbosity }}
- --logging-format={{ .Values.loggingFormat }}
{{- $serving := .Values.serving }}
{{- if $serving.plainHTTP }}
- --plain-http
{{- else }}
{{- if $serving.tls.secretName }}
- --tls-cert-file={{ include "pyscheduler.servingCertDir" . }}/tls.crt
- --tls-private-key-file={{ include "pyscheduler.servingCertDir" . }}/tls.key
{{- end }}
- --tls-min-version={{ $serving.tls.minVersion }}
{{- if or $serving.clientCA.secretName $serving.clientCA.configMapName }}
- --client-ca-file={{ include "pyscheduler.clientCADir" . }}/ca.crt
{{- end }}
- --authorization-always-allow-paths={{ join "," $serving.alwaysAllowPaths }}
{{- end }}
{{- if .Values.allowDefaultSchedulerName }}
- --allow-default-scheduler-name
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
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

{{/* Refusals at render time, so that `helm install` fails where the pods would not start. */}}
{{- define "pyscheduler.validate" -}}
{{- /* Several active replicas without leader election would race for the same capacity. */}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) }}
{{- fail "replicas > 1 needs leaderElection.enabled=true: active replicas would race to bind the same pods" }}
{{- end }}
{{- include "pyscheduler.validateDefaultScheduler" . }}
{{- include "pyscheduler.validateLeaderElection" . }}
{{- include "pyscheduler.validateServing" . }}
{{- end }}

{{/* What `pyscheduler run` refuses without --allow-default-scheduler-name (exit 2). */}}
{{- define "pyscheduler.validateDefaultScheduler" -}}
{{- if not .Values.allowDefaultSchedulerName }}
{{- $unless := "set allowDefaultSchedulerName=true only if this cluster runs no kube-scheduler" }}
{{- range $i, $profile := include "pyscheduler.profiles" . | fromYamlArray }}
{{- if eq $profile.schedulerName "default-scheduler" }}
{{- $field := ternary (printf "config.profiles[%d].schedulerName" $i) "schedulerName" (not (empty $.Values.config.profiles)) }}
{{- fail (printf "refusing %s \"default-scheduler\": pods that name no scheduler would be scheduled by both pyscheduler and kube-scheduler; %s" $field $unless) }}
{{- end }}
{{- end }}
{{- if and .Values.leaderElection.enabled (eq .Release.Namespace "kube-system") (eq (include "pyscheduler.leaseName" .) "kube-scheduler") }}
{{- fail (printf "refusing the Lease kube-system/kube-scheduler (the release namespace and leaderElection.resourceName, or the release's full name): it is kube-scheduler's own Lease, holding it would stop kube-scheduler; %s" $unless) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
A Go duration ("15s", "1m30s", "500ms", "1.5h") in nanoseconds, as time.ParseDuration reads it
(values.schema.json has already checked the syntax). Fractions keep at most 9 digits.
*/}}
{{- define "pyscheduler.durationNs" -}}
{{- $units := dict "ns" 1 "us" 1000 "µs" 1000 "μs" 1000 "ms" 1000000 "s" 1000000000 "m" 60000000000 "h" 3600000000000 }}
{{- $total := 0 }}
{{- range regexFindAll "[0-9]+(\\.[0-9]+)?(ns|us|µs|μs|ms|s|m|h)" (toString .) -1 }}
{{- $unit := index $units (regexReplaceAll "^[0-9.]+" . "") }}
{{- $total = add $total (mul (regexFind "^[0-9]+" . | atoi) $unit) }}
{{- $fraction := regexFind "\\.[0-9]+" . | trimPrefix "." | trunc 9 }}
{{- if $fraction }}
{{- $scale := printf "1%s" (repeat (len $fraction) "0") | atoi }}
{{- if eq (mod $unit $scale) 0 }}
{{- $total = add $total (mul (atoi $fraction) (div $unit $scale)) }}
{{- else }}
{{- $total = add $total (div (mul (atoi $fraction) $unit) $scale) }}
{{- end }}
{{- end }}
{{- end }}
{{- $total }}
{{- end }}

{{/* client-go's leader elector: leaseDuration > renewDeadline > 1.2 × retryPeriod, all > 0. */}}
{{- define "pyscheduler.validateLeaderElection" -}}
{{- $le := .Values.leaderElection }}
{{- if $le.enabled }}
{{- $ns := dict }}
{{- range $name := list "leaseDuration" "renewDeadline" "retryPeriod" }}
{{- $value := include "pyscheduler.durationNs" (index $le $name) | atoi }}
{{- if le $value 0 }}
{{- fail (printf "leaderElection.%s (%v) must be greater than zero" $name (index $le $name)) }}
{{- end }}
{{- $_ := set $ns $name $value }}
{{- end }}
{{- if le $ns.leaseDuration $ns.renewDeadline }}
{{- fail (printf "leaderElection.leaseDuration (%s) must be greater than leaderElection.renewDeadline (%s): standbys would take the Lease while the leader still renews it" $le.leaseDuration $le.renewDeadline) }}
{{- end }}
{{- if le (mul $ns.renewDeadline 10) (mul $ns.retryPeriod 12) }}
{{- fail (printf "leaderElection.renewDeadline (%s) must be greater than 1.2 times leaderElection.retryPeriod (%s), as client-go's leader election requires: the leader must have time to retry a failed renewal before it gives up" $le.renewDeadline $le.retryPeriod) }}
{{- end }}
{{- end }}
{{- end }}

{{/* Serving values that contradict each other, or probes the kubelet could not pass. */}}
{{- define "pyscheduler.validateServing" -}}
{{- $serving := .Values.serving }}
{{- $clientCA := $serving.clientCA }}
{{- if and $clientCA.secretName $clientCA.configMapName }}
{{- fail "serving.clientCA: set secretName or configMapName, not both" }}
{{- end }}
{{- if $serving.plainHTTP }}
{{- if or $serving.tls.secretName $clientCA.secretName $clientCA.configMapName }}
{{- fail "serving.plainHTTP=true serves neither TLS nor authentication: unset serving.tls.secretName and serving.clientCA" }}
{{- end }}
{{- else }}
{{- range $path := list "/healthz" "/readyz" }}
{{- $open := false }}
{{- range $serving.alwaysAllowPaths }}
{{- if or (eq . $path) (and (hasSuffix "*" .) (hasPrefix (trimSuffix "*" .) $path)) }}
{{- $open = true }}
{{- end }}
{{- end }}
{{- if not $open }}
{{- fail (printf "serving.alwaysAllowPaths must include %s: the kubelet probes it without credentials" $path) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
