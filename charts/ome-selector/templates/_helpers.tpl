{{/* Names and labels. */}}
{{- define "ome-selector.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ome-selector.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "ome-selector.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ome-selector.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ome-selector.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ome-selector.labels" -}}
helm.sh/chart: {{ include "ome-selector.chart" . }}
{{ include "ome-selector.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: ome-selector
{{- end -}}

{{- define "ome-selector.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ome-selector.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "ome-selector.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The webhook: its configuration, Service, certificate Secret and Certificate share these names. */}}
{{- define "ome-selector.webhookName" -}}
{{- printf "%s-webhook" (include "ome-selector.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ome-selector.webhookConfigurationName" -}}
{{- include "ome-selector.fullname" . -}}
{{- end -}}

{{- define "ome-selector.webhookSecretName" -}}
{{- printf "%s-webhook-tls" (include "ome-selector.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ome-selector.metricsServiceName" -}}
{{- printf "%s-metrics" (include "ome-selector.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Where the webhook certificate files live in the container (an emptyDir, or cert-manager's Secret). */}}
{{- define "ome-selector.certDir" -}}
/var/run/ome-selector/webhook-certs
{{- end -}}

{{/* Where the CA bundle for the API server's client certificate is mounted (webhook.clientAuth). */}}
{{- define "ome-selector.clientCaDir" -}}
/var/run/ome-selector/webhook-client-ca
{{- end -}}

{{/* The namespaceSelector of the webhooks: the configured one, limited to watchNamespaces when set. */}}
{{- define "ome-selector.namespaceSelector" -}}
{{- $selector := deepCopy (default (dict) .Values.webhook.namespaceSelector) -}}
{{- if .Values.watchNamespaces -}}
{{- $expressions := default (list) $selector.matchExpressions -}}
{{- $expressions = append $expressions (dict "key" "kubernetes.io/metadata.name" "operator" "In" "values" .Values.watchNamespaces) -}}
{{- $_ := set $selector "matchExpressions" $expressions -}}
{{- end -}}
{{- toYaml $selector -}}
{{- end -}}

{{/* PromQL label matchers selecting this release's series: metrics.prometheusRule.selector, else the job a
ServiceMonitor (the Service's name) or PodMonitor (<namespace>/<name>) gives them, else namespace and pod. */}}
{{- define "ome-selector.metricsSelector" -}}
{{- $m := .Values.metrics -}}
{{- if $m.prometheusRule.selector -}}
{{- $m.prometheusRule.selector -}}
{{- else if $m.serviceMonitor.enabled -}}
job="{{ include "ome-selector.metricsServiceName" . }}",namespace="{{ .Release.Namespace }}"
{{- else if $m.podMonitor.enabled -}}
job="{{ $m.podMonitor.namespace | default .Release.Namespace }}/{{ include "ome-selector.fullname" . }}",namespace="{{ .Release.Namespace }}"
{{- else -}}
namespace="{{ .Release.Namespace }}",pod=~"{{ include "ome-selector.fullname" . }}-.+"
{{- end -}}
{{- end }}
