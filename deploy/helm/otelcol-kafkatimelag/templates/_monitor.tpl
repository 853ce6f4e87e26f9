{{/*
The endpoints of a PodMonitor or ServiceMonitor: the telemetry port, and in
pull mode the metrics port without the labels that name the replica (a
group's series keep their names when it moves to another replica).
*/}}
{{- define "kafkatimelag.monitorEndpoints" -}}
- port: telemetry
  path: /metrics
  interval: {{ .interval }}
{{- if eq (include "kafkatimelag.pull" .root) "true" }}
- port: metrics
  path: /metrics
  interval: {{ .interval }}
  metricRelabelings:
    - action: labeldrop
      regex: pod|instance|container|endpoint|service
{{- end }}
{{- end -}}
