{{/* Names and labels. */}}
{{- define "kafkatimelag.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "kafkatimelag.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kafkatimelag.labels" -}}
{{ include "kafkatimelag.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/*
The kafka_cluster_alias label of every series: every alert and the
dashboard group by it, so it is never empty (NOTES.txt says when the
release's name stands in for it).
*/}}
{{- define "kafkatimelag.clusterAlias" -}}
{{- default .Release.Name .Values.kafka.clusterAlias -}}
{{- end -}}

{{- define "kafkatimelag.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "kafkatimelag.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "kafkatimelag.pull" -}}
{{- if eq .Values.export.mode "prometheus" -}}true{{- else if eq .Values.export.mode "otlp" -}}{{- else -}}
{{- fail (printf "export.mode: %q is neither otlp nor prometheus" .Values.export.mode) -}}
{{- end -}}
{{- end -}}

{{/*
Memory from the model in values.yaml (sizing): the MiB one replica needs
for all the pairs (limit, times limitHeadroom) and for its share (request).
*/}}
{{- define "kafkatimelag.variableMiB" -}}
{{- $s := .Values.sizing -}}
{{- $perPair := ternary $s.perPairKiBPull $s.perPairKiB (eq (include "kafkatimelag.pull" .) "true") -}}
{{- divf (addf (mulf $s.perBusyPartitionKiB $s.busyPartitions) (mulf $perPair $s.pairs)) 1024 -}}
{{- end -}}
{{- define "kafkatimelag.limitMiB" -}}
{{- $s := .Values.sizing -}}
{{- ceil (mulf (addf $s.baseMiB (include "kafkatimelag.variableMiB" .)) $s.limitHeadroom) | int -}}
{{- end -}}
{{- define "kafkatimelag.requestMiB" -}}
{{- $s := .Values.sizing -}}
{{- ceil (addf $s.baseMiB (divf (include "kafkatimelag.variableMiB" .) (max 1 (int .Values.replicaCount)))) | int -}}
{{- end -}}
{{- define "kafkatimelag.resources" -}}
{{- if .Values.resources -}}
{{- toYaml .Values.resources -}}
{{- else -}}
requests:
  cpu: {{ .Values.sizing.cpuRequest }}
  memory: {{ include "kafkatimelag.requestMiB" . }}Mi
limits:
  memory: {{ include "kafkatimelag.limitMiB" . }}Mi
{{- end -}}
{{- end -}}
{{- define "kafkatimelag.goMemLimit" -}}
{{- $limit := "" -}}
{{- if .Values.resources -}}
{{- with .Values.resources.limits }}{{ with .memory }}{{ $limit = . }}{{ end }}{{ end -}}
{{- end -}}
{{- if $limit -}}
{{- /* a user's own limit: leave GOMEMLIMIT to extraEnv */ -}}
{{- else -}}
{{- printf "%dMiB" (div (mul (int (include "kafkatimelag.limitMiB" .)) (int .Values.sizing.goMemLimitPercent)) 100) -}}
{{- end -}}
{{- end -}}

{{/* Paths where the Secrets the client needs are mounted. */}}
{{- define "kafkatimelag.caDir" -}}/etc/kafka-tls/ca{{- end -}}
{{- define "kafkatimelag.clientCertDir" -}}/etc/kafka-tls/client{{- end -}}
