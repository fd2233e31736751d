{{- define "sophos.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "sophos.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "sophos.labels" -}}
{{ include "sophos.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "sophos.secretName" -}}
{{- .Values.existingSecret | default (include "sophos.fullname" .) -}}
{{- end -}}

{{/* Refuse values that would lose runs or data, at render time rather than in production. */}}
{{- define "sophos.check" -}}
{{- if le (int .Values.terminationGracePeriodSeconds) (add (int .Values.shutdownTimeout) 5) -}}
{{- fail (printf "terminationGracePeriodSeconds (%d) must exceed shutdownTimeout + 5 (%d): the kubelet would kill the drain" (int .Values.terminationGracePeriodSeconds) (add (int .Values.shutdownTimeout) 5)) -}}
{{- end -}}
{{- if not .Values.existingSecret -}}
{{- if not .Values.apiToken -}}
{{- fail "apiToken is required (or existingSecret): Sophos listens on the pod's address and refuses to without API_TOKEN" -}}
{{- end -}}
{{- if not .Values.databaseUrl -}}
{{- fail "databaseUrl (postgresql://...) is required (or existingSecret): replicas share one PostgreSQL database" -}}
{{- end -}}
{{- end -}}
{{- end -}}
