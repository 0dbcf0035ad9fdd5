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

{{/* registry/repository, then @digest when set (it wins over the tag), else :tag (default: appVersion). */}}
{{- define "ome-selector.image" -}}
{{- $image := .Values.image -}}
{{- $name := ternary (printf "%s/%s" $image.registry $image.repository) $image.repository (ne $image.registry "") -}}
{{- if $image.digest -}}
{{- printf "%s@%s" $name $image.digest -}}
{{- else -}}
{{- printf "%s:%s" $name (default .Chart.AppVersion $image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
The pod of a hook Job (startup check, uninstall cleanup): its labels and annotations (no sidecar injection by
default: a sidecar would keep the Job from completing) and where it may run. Call with (dict "root" $ "component"
"startupcheck"); the pod spec fields are indented for a pod template's spec.
*/}}
{{- define "ome-selector.hookPodMetadata" -}}
labels:
  {{- /* Not the operator's selector labels: its Services, PodDisruptionBudget and the cleanup's wait would count
  the hook's pod as a replica. */}}
  {{- omit (include "ome-selector.labels" .root | fromYaml) "app.kubernetes.io/name" | toYaml | nindent 2 }}
  app.kubernetes.io/component: {{ .component }}
  {{- with .root.Values.hooks.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- with .root.Values.hooks.podAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "ome-selector.hookPodScheduling" -}}
{{- $values := .Values -}}
{{- with $values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (default $values.priorityClassName $values.hooks.priorityClassName) }}
priorityClassName: {{ . }}
{{- end }}
{{- with (default $values.nodeSelector $values.hooks.nodeSelector) }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (default $values.tolerations $values.hooks.tolerations) }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.hooks.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* HTTPS_PROXY, HTTP_PROXY and NO_PROXY of the operator; with a proxy, NO_PROXY always holds the API server's
Service address ($(KUBERNETES_SERVICE_HOST), expanded by the kubelet) and the cluster's own names. */}}
{{- define "ome-selector.proxyEnv" -}}
{{- with .Values.proxy }}
{{- if .httpsProxy }}
- name: HTTPS_PROXY
  value: {{ .httpsProxy | quote }}
{{- end }}
{{- if .httpProxy }}
- name: HTTP_PROXY
  value: {{ .httpProxy | quote }}
{{- end }}
{{- if or .httpsProxy .httpProxy }}
- name: NO_PROXY
  value: {{ join "," (compact (list "$(KUBERNETES_SERVICE_HOST)" ".svc" ".cluster.local" "localhost" "127.0.0.1" .noProxy)) | quote }}
{{- end }}
{{- end }}
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

{{/* cert-manager mode: the chart's CA Certificate, its Secret and its Issuer share this name. */}}
{{- define "ome-selector.caName" -}}
{{- printf "%s-webhook-ca" (include "ome-selector.fullname" .) | trunc 63 | trimSuffix "-" -}}
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
